import Foundation
import WebImageCodecs

/// imgproxy's output, handling and request options (imgproxy-docs, `docs/usage/processing.mdx`):
///
/// | Option | Arguments |
/// |---|---|
/// | `format_quality`, `fq` | `format:quality` pairs, quality 0…100 (0: the format's default) |
/// | `max_bytes`, `mb` | bytes, 0 (no limit) up to 2^40 |
/// | `strip_metadata`, `sm`; `keep_copyright`, `kcr`; `strip_color_profile`, `scp` | a boolean |
/// | `enforce_thumbnail`, `eth`; `raw`; `return_attachment`, `att` | a boolean |
/// | `skip_processing`, `skp` | source formats: `jpg`, `jpeg`, `png`, `gif`, `webp`, `avif`, `heic`, `jxl` |
/// | `cachebuster`, `cb` | any text up to 256 characters |
/// | `expires`, `exp` | a Unix time (an `Int64`); 0 or less never expires |
/// | `filename`, `fn` | `name[:encoded]`: with `encoded` true, the name is unpadded base64url |
/// | `preset`, `pr` | preset names |
extension ProxyURL {
    /// The largest `max_bytes`: 1 TiB, past any result, so the encode loop's ratio stays finite and exact.
    static let largestMaximumBytes = 1 << 40
    /// The longest `cachebuster` or `filename` (after decoding), in UTF-8 bytes.
    static let longestText = 256

    /// Applies one output, handling or request option; false when `name` is none of them.
    static func applyOutputOption(_ parser: OptionArguments, to options: inout ProcessingOptions)
        throws(ProxyError) -> Bool
    {
        let arguments = parser.arguments
        switch parser.name {
        case "fq", "format_quality":
            guard !arguments.isEmpty, arguments.count % 2 == 0 else {
                throw parser.error("takes format:quality pairs")
            }
            for index in stride(from: 0, to: arguments.count, by: 2) {
                guard let format = ProxyOutputFormat(extension: arguments[index]) else {
                    throw parser.error("unknown output format \"\(arguments[index])\" (\(ProxyOutputFormat.names))")
                }
                options.formatQuality[format] = try parser.quality(index + 1)
            }
        case "mb", "max_bytes":
            try parser.count(1...1)
            guard let bytes = Int(arguments[0]), (0...largestMaximumBytes).contains(bytes) else {
                throw parser.error("the byte count must be a whole number from 0 to \(largestMaximumBytes)")
            }
            options.maximumBytes = bytes
        case "sm", "strip_metadata":
            try parser.count(1...1)
            options.stripMetadata = try parser.requiredBoolean(0, "strip_metadata")
        case "kcr", "keep_copyright":
            try parser.count(1...1)
            options.keepCopyright = try parser.requiredBoolean(0, "keep_copyright")
        case "scp", "strip_color_profile":
            try parser.count(1...1)
            options.stripColorProfile = try parser.requiredBoolean(0, "strip_color_profile")
        case "eth", "enforce_thumbnail":
            try parser.count(1...1)
            options.enforceThumbnail = try parser.requiredBoolean(0, "enforce_thumbnail")
        case "skp", "skip_processing":
            guard !arguments.isEmpty else { throw parser.error("takes one or more source formats") }
            for name in arguments {
                guard let format = skippableFormats[name.lowercased()] else {
                    throw parser.error(
                        "unknown source format \"\(name)\" (jpg, jpeg, png, gif, webp, avif, heic or jxl)")
                }
                options.skipProcessing.insert(format)
            }
        case "raw":
            try parser.count(1...1)
            options.raw = try parser.requiredBoolean(0, "raw")
        case "cb", "cachebuster":
            try parser.count(1...1)
            guard arguments[0].utf8.count <= longestText else {
                throw parser.error("the cache buster is longer than \(longestText) bytes")
            }
            options.cacheBuster = arguments[0]
        case "exp", "expires":
            try parser.count(1...1)
            guard let time = Int64(arguments[0]) else { throw parser.error("the time must be a whole Unix time") }
            options.expires = time
        case "fn", "filename":
            try parser.count(1...2)
            options.filename = try filename(parser)
        case "att", "return_attachment":
            try parser.count(1...1)
            options.returnAttachment = try parser.requiredBoolean(0, "return_attachment")
        default:
            return false
        }
        return true
    }

    /// The source formats `skip_processing` names, with imgproxy's spellings of them.
    static let skippableFormats: [String: ImageFormat] = [
        "jpg": .jpeg, "jpeg": .jpeg, "png": .png, "gif": .gif, "webp": .webp, "avif": .avif, "heic": .heic,
        "jxl": .jxl,
    ]

    /// `name[:encoded]`; a name that is not valid UTF-8 after decoding, or too long, is refused.
    private static func filename(_ parser: OptionArguments) throws(ProxyError) -> String {
        let text = parser.arguments[0]
        guard try parser.boolean(1, "encoded") == true else {
            guard text.utf8.count <= longestText else {
                throw parser.error("the file name is longer than \(longestText) bytes")
            }
            return text
        }
        guard let data = Data(base64URL: text), let name = String(data: data, encoding: .utf8) else {
            throw parser.error("the encoded file name is not base64url of UTF-8 text")
        }
        guard name.utf8.count <= longestText else {
            throw parser.error("the file name is longer than \(longestText) bytes")
        }
        return name
    }
}

extension OptionArguments {
    /// Argument `index` as a quality, 0…100; 0 (the format's default) is nil.
    func quality(_ index: Int) throws(ProxyError) -> Int? {
        guard index < arguments.count, let quality = Int(arguments[index]), (0...100).contains(quality) else {
            throw error("the quality must be 0…100")
        }
        return quality == 0 ? nil : quality
    }
}
