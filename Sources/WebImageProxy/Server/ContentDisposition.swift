import Foundation
import WebImageCodecs

/// The `Content-Disposition` of a result, as imgproxy builds it (`imagetype.ContentDisposition`):
/// `inline; filename="NAME.ext"`, or `attachment` with `return_attachment`, where NAME is `filename` or else
/// the source URL's last path segment without its extension (`image` when it has none), and `.ext` is that
/// of the format actually sent.
///
/// imgproxy writes a `"` in the name as `%22` and sends no `filename*`. Here every byte that could end
/// the quoted string or the header field (`"`, `\`, control characters) and every byte past ASCII is
/// written `%XX` too: a header value stays printable ASCII, so no name can add a header field.
enum ContentDisposition {
    static func value(options: ProcessingOptions, source: URL, format: ImageFormat) -> String {
        let kind = options.returnAttachment ? "attachment" : "inline"
        return "\(kind); filename=\"\(escaped(name(options: options, source: source)))\(fileExtension(format))\""
    }

    static func name(options: ProcessingOptions, source: URL) -> String {
        if !options.filename.isEmpty { return options.filename }
        let last = source.lastPathComponent
        guard !last.isEmpty, last != "/" else { return "image" }
        let name = (last as NSString).deletingPathExtension
        return name.isEmpty ? "image" : name
    }

    /// imgproxy's extensions (`.jpg` for JPEG); empty for a format without one.
    static func fileExtension(_ format: ImageFormat) -> String {
        switch format {
        case .jpeg: ".jpg"
        case .png: ".png"
        case .gif: ".gif"
        case .webp: ".webp"
        case .avif: ".avif"
        case .jxl: ".jxl"
        case .heic: ".heic"
        case .unknown: ""
        }
    }

    static func escaped(_ name: String) -> String {
        var text = ""
        for byte in name.utf8 {
            if byte < 0x20 || byte >= 0x7F || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                text += String(format: "%%%02X", byte)
            } else {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return text
    }
}
