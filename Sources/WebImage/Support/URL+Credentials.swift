import Foundation
import WebImageTransport

/// Credentials written into a URL (`http://alice:S3CRET@host/`). The downloader takes them out of the
/// URL and treats them as the request's credentials (sent only after a 401, to that origin only, over plain
/// http only with `allowsCredentialsOverPlainHTTP`), so the URL handed to curl, used as a cache key or
/// printed never holds them.
extension URL {
    /// This URL without its user name and password, and the credentials they were (nil when it had none).
    /// A user name without a password is a credential with an empty password, as curl would send it.
    var splittingUserInfo: (url: URL, credentials: RequestTrust.Credentials?) {
        guard hasUserInfo, var components = URLComponents(url: self, resolvingAgainstBaseURL: true) else {
            return (self, nil)
        }
        let user = components.user ?? ""
        let password = components.password ?? ""
        components.user = nil
        components.password = nil
        let credentials =
            user.isEmpty && password.isEmpty ? nil : RequestTrust.Credentials(user: user, password: password)
        return (components.url ?? self, credentials)
    }
}
