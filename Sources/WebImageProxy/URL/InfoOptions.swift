import Foundation
import WebImageCodecs

/// What an `/info` URL asks about its source, with imgproxy's info option names and argument forms
/// (imgproxy-docs, `docs/usage/getting_info.mdx`). An `/info` URL is an image URL's signature and source
/// after `/info`, with these options in place of processing options:
///
/// ```
/// /info/{signature}/{info options}/plain/{percent-encoded source URL}
/// /info/{signature}/{info options}/{base64url(source URL), may be split by /}
/// ```
///
/// | Option | Arguments | Default |
/// |---|---|---|
/// | `size`, `s` | a boolean: the source's byte count (`size`) | `true` |
/// | `format`, `f` | a boolean: `format` and `mime_type` | `true` |
/// | `dimensions`, `d` | a boolean: upright `width` and `height`, EXIF `orientation` | `true` |
/// | `pages_number`, `pn` | a boolean: the frames the file holds (`pages_number`) | `true` |
/// | `color_profile`, `cp` | a boolean: the ICC profile's description (`color_profile`), null without one | `true` |
/// | `blurhash`, `bh` | `x_components:y_components`, 1…9 each; 0 for either: none (`blurhash`) | `4:3` |
/// | `thumb_hash`, `th` | a boolean: the ThumbHash as hex digits (`thumb_hash`) | `true` |
/// | `cachebuster`, `cb` | any text up to 256 characters | empty |
/// | `expires`, `exp` | a Unix time; past it the URL answers 404 | `0` (never) |
///
/// imgproxy leaves `pages_number`, `blurhash` and `thumb_hash` off unless asked for; here they are on, as
/// placeholders are what the endpoint is for. imgproxy has no `color_profile` option. Presets, EXIF, IPTC,
/// XMP and the other imgproxy info options are not supported: naming one is a 400.
public struct InfoOptions: Sendable, Hashable {
    /// Whether the answer has `size`. `true` by default.
    public var size = true
    /// Whether the answer has `format` and `mime_type`. `true` by default.
    public var format = true
    /// Whether the answer has `width`, `height` and `orientation`. `true` by default.
    public var dimensions = true
    /// Whether the answer has `pages_number`. `true` by default.
    public var pagesNumber = true
    /// Whether the answer has `color_profile`. `true` by default.
    public var colorProfile = true
    /// BlurHash's components across, 1…9; 0 (here or in `blurHashYComponents`) leaves `blurhash` out. 4 by
    /// default (`BlurHash.defaultComponents`).
    public var blurHashXComponents = BlurHash.defaultComponents.x
    /// BlurHash's components down, 1…9; 0 leaves `blurhash` out. 3 by default.
    public var blurHashYComponents = BlurHash.defaultComponents.y
    /// Whether the answer has `thumb_hash`. `true` by default.
    public var thumbHash = true
    /// `cachebuster`: changes the URL (and so any cache's key) without changing the answer.
    public var cacheBuster = ""
    /// A Unix time after which the URL answers 404; 0 or less never expires.
    public var expires: Int64 = 0

    /// Everything asked for.
    public init() {}

    /// The options as text, the same for the same options: the key the work for an answer is shared under.
    var canonical: String {
        let flags = [size, format, dimensions, pagesNumber, colorProfile, thumbHash].map { $0 ? "1" : "0" }.joined()
        return
            "info:\(flags):bh\(blurHashXComponents)x\(blurHashYComponents):cb\(cacheBuster.utf8.count):\(cacheBuster)"
    }

    /// Applies one `name:arg…` segment.
    ///
    /// - Throws: 400 naming the option for an unknown name or a bad argument.
    mutating func apply(_ segment: Substring) throws(ProxyError) {
        let parts = segment.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let parser = OptionArguments(name: parts[0], arguments: Array(parts.dropFirst()))
        let flags: [String: WritableKeyPath<InfoOptions, Bool>] = [
            "size": \.size, "s": \.size, "format": \.format, "f": \.format, "dimensions": \.dimensions,
            "d": \.dimensions, "pages_number": \.pagesNumber, "pn": \.pagesNumber, "color_profile": \.colorProfile,
            "cp": \.colorProfile, "thumb_hash": \.thumbHash, "th": \.thumbHash,
        ]
        if let flag = flags[parser.name] {
            try parser.count(1...1)
            self[keyPath: flag] = try parser.requiredBoolean(0, parser.name)
            return
        }
        switch parser.name {
        case "bh", "blurhash":
            try parser.count(2...2)
            func components(_ index: Int) throws(ProxyError) -> Int {
                guard let value = Int(parser.arguments[index]), (0...9).contains(value) else {
                    throw parser.error("the component counts must be whole numbers 0…9")
                }
                return value
            }
            blurHashXComponents = try components(0)
            blurHashYComponents = try components(1)
        case "cb", "cachebuster":
            try parser.count(1...1)
            guard parser.arguments[0].utf8.count <= 256 else {
                throw parser.error("the cache buster is longer than 256 bytes")
            }
            cacheBuster = parser.arguments[0]
        case "exp", "expires":
            try parser.count(1...1)
            guard let time = Int64(parser.arguments[0]) else {
                throw parser.error("the time must be a whole Unix time")
            }
            expires = time
        default:
            throw .badRequest("unknown info option \"\(parser.name)\"")
        }
    }
}

extension ProxyURL {
    /// Parses an `/info` URL's `path` from its signature segment on (the part after `/info`, still
    /// percent-encoded): the info options, then the source, with `baseURL` put before a source that does
    /// not start with it (as for image URLs). The processing options stay the defaults, unused.
    ///
    /// - Throws: `ProxyError` with status 400 and a sentence naming what is wrong.
    init(infoPath path: String, baseURL: String = "") throws(ProxyError) {
        let split = try Self.splitSignature(path)
        var info = InfoOptions()
        var rest = split.signedPath.dropFirst()
        let source: URL
        while true {
            let segmentEnd = rest.firstIndex(of: "/") ?? rest.endIndex
            let segment = rest[..<segmentEnd]
            if segment == "plain" {
                // An extension names an output format, which an answer in JSON has none of: it is checked, as
                // in an image URL, and ignored.
                source = try Self.plainSource(rest[segmentEnd...].dropFirst(), baseURL: baseURL).0
                break
            }
            if segment == "enc" { throw .badRequest("encrypted source URLs (enc) are not supported") }
            guard segment.contains(":") else {
                source = try Self.encodedSource(rest, baseURL: baseURL).0
                break
            }
            try info.apply(segment)
            guard segmentEnd < rest.endIndex else { throw .badRequest("the path has no source URL") }
            rest = rest[segmentEnd...].dropFirst()
        }
        self.signature = split.signature
        self.signedPath = split.signedPath
        self.options = ProcessingOptions()
        self.source = source
        self.info = info
    }
}
