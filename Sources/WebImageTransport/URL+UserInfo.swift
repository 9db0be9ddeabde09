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
    package var hasUserInfo: Bool {
        guard let authority = absoluteString.split(separator: "//", maxSplits: 1).dropFirst().first else {
            return false
        }
        return authority.prefix { $0 != "/" && $0 != "?" && $0 != "#" }.contains("@")
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
