import Foundation

/// Credentials written into a URL (`http://alice:S3CRET@host/`) never reach curl from a redirect's
/// `Location`, and never appear in messages or logs.
extension URL {
    /// This URL without its user name and password.
    package var removingUserInfo: URL {
        guard hasUserInfo, var components = URLComponents(url: self, resolvingAgainstBaseURL: true) else {
            return self
        }
        components.user = nil
        components.password = nil
        return components.url ?? self
    }

    /// Whether the URL carries a user name or a password (`user@`, `user:password@`, even `:@`).
    /// The authority is what follows the first `//`, up to the next `/`, `?` or `#`. (A byte scan: this runs
    /// for every request and every log line, and the generic `split` and Foundation's `contains` cost
    /// several microseconds a URL.)
    package var hasUserInfo: Bool {
        let bytes = absoluteString.utf8
        guard bytes.contains(UInt8(ascii: "@")) else { return false }
        var index = bytes.startIndex
        var previous: UInt8 = 0
        var inAuthority = false
        while index != bytes.endIndex {
            let byte = bytes[index]
            bytes.formIndex(after: &index)
            if inAuthority {
                switch byte {
                case UInt8(ascii: "@"): return true
                case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"): return false
                default: continue
                }
            }
            if byte == UInt8(ascii: "/") && previous == UInt8(ascii: "/") { inAuthority = true }
            previous = byte
        }
        return false
    }

    /// The URL as text for logs, messages and command output: a password shows as `***`
    /// (`http://alice:***@host/`), and so does a user name given alone, which servers often use as a
    /// token (`https://***@api.example.com/`). A URL without either is `absoluteString`.
    public var redactedString: String {
        guard hasUserInfo, var components = URLComponents(url: self, resolvingAgainstBaseURL: true) else {
            return absoluteString
        }
        if components.password != nil {
            components.percentEncodedPassword = "***"
        } else {
            components.percentEncodedUser = "***"
        }
        return components.string ?? removingUserInfo.absoluteString
    }
}
