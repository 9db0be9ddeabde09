import Foundation

/// The head of the final HTTP response of a download: after redirects, `100 Continue` and
/// authentication round trips. WebImage's own type, so the library needs no FoundationNetworking.
public struct TransferResponse: Sendable, Hashable {
    /// The URL that answered, after redirects.
    public var url: URL
    /// The HTTP status code, e.g. 200.
    public var statusCode: Int
    /// The response header fields in the order received.
    public var headers: HTTPHeaders
    /// The HTTP version of the response: "1.0", "1.1", "2" or "3".
    public var httpVersion: String

    /// Creates a response head.
    public init(url: URL, statusCode: Int, headers: HTTPHeaders, httpVersion: String = "1.1") {
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
        self.httpVersion = httpVersion
    }

    /// The media type of `Content-Type`, lower-cased and without parameters, e.g. "image/png".
    public var mimeType: String? {
        guard let value = headers["Content-Type"] else { return nil }
        let type = value.split(separator: ";", maxSplits: 1).first.map(String.init) ?? value
        let trimmed = type.trimmingHTTPWhitespace.lowercased()
        return trimmed.isEmpty ? nil : trimmed
    }

    /// The declared body length from `Content-Length`, or -1 when unknown (chunked, or absent).
    public var expectedContentLength: Int64 {
        guard let value = headers["Content-Length"], let length = Int64(value.trimmingHTTPWhitespace),
            length >= 0
        else { return -1 }
        return length
    }
}
