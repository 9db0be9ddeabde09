import Foundation

/// Content types, validators and HTTP dates for the file routes.
enum ContentTypes {
    /// The content type for a file name, by extension.
    static func forName(_ name: String) -> String {
        switch (name as NSString).pathExtension.lowercased() {
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "gif": "image/gif"
        case "webp": "image/webp"
        case "avif": "image/avif"
        case "jxl": "image/jxl"
        case "html", "htm": "text/html; charset=utf-8"
        case "txt": "text/plain; charset=utf-8"
        default: "application/octet-stream"
        }
    }

    /// A strong entity tag from a 64-bit FNV-1a hash of the content (quotes included).
    static func strongETag(for data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
    }

    /// The Last-Modified of every file read from `root`: fixed, so runs are reproducible.
    static let fixedLastModified = Date(timeIntervalSince1970: 1_704_067_200)  // 2024-01-01 00:00:00 GMT

    /// Whether an `If-None-Match` value matches `etag` (weak comparison, as RFC 9110 asks for this header).
    static func ifNoneMatch(_ header: String, matches etag: String) -> Bool {
        let opaque = { (tag: Substring) -> Substring in
            let trimmed = tag.trimmingCharacters(in: .whitespaces)[...]
            return trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed
        }
        let wanted = opaque(etag[...])
        return header.split(separator: ",").contains { candidate in
            let tag = opaque(candidate)
            return tag == "*" || tag == wanted
        }
    }

    private static func formatter() -> DateFormatter {
        // DateFormatter is not Sendable, so each call builds its own; the routes are not hot paths.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }

    /// An IMF-fixdate, for example `Mon, 01 Jan 2024 00:00:00 GMT`.
    static func httpDate(_ date: Date) -> String {
        formatter().string(from: date)
    }

    /// Parses an IMF-fixdate; `nil` for anything else.
    static func parseHTTPDate(_ text: String) -> Date? {
        formatter().date(from: text.trimmingCharacters(in: .whitespaces))
    }
}
