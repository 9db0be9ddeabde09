/// A request the proxy answers with an error status and a plain-text sentence.
///
/// The sentence is for the person who wrote the URL: it names the option or rule at fault and never
/// carries internal detail (addresses, library messages, paths); those go to the log.
public struct ProxyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status: 400, 403, 404, 405, 422, 502, 503 or 504.
    public var status: Int
    /// The response body.
    public var message: String
    /// Whether the source could not be fetched (not found, refused, unreachable, too slow): what
    /// `ImageProxyConfiguration.fallbackImage` answers instead. `false` by default.
    public var isSourceFailure = false

    /// Creates an error.
    public init(status: Int, _ message: String) {
        self.status = status
        self.message = message
    }

    /// 400: the URL is malformed or asks for something the proxy does not do.
    public static func badRequest(_ message: String) -> ProxyError { ProxyError(status: 400, message) }

    /// 403: a bad signature, a source outside the allowed prefixes or a refused destination.
    public static func forbidden(_ message: String) -> ProxyError { ProxyError(status: 403, message) }

    /// "403 …: message".
    public var description: String { "\(status): \(message)" }
}
