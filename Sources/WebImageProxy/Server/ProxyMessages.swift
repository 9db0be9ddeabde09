import Foundation

/// What the proxy reads of an HTTP request.
public struct ProxyRequest: Sendable, Hashable {
    /// `GET` or `HEAD` (others are answered 405).
    public var method: String
    /// The request target's path, still percent-encoded, without the query.
    public var path: String
    /// The `Accept` header's value, nil when absent.
    public var accept: String?
    /// The `If-None-Match` header's value, nil when absent.
    public var ifNoneMatch: String?
    /// The `If-Modified-Since` header's value, nil when absent (read with `usesLastModified`).
    public var ifModifiedSince: String?
    /// The client hints' values (read with `usesClientHints`).
    public var clientHints = ClientHints()
    /// The `Authorization` header's value, nil when absent.
    public var authorization: String?
    /// The W3C trace-context fields (`traceparent`, `tracestate`) by lowercased name, those present: the
    /// request's span continues that trace (see `ImageProxy`'s tracing).
    public var traceContext: [String: String] = [:]

    /// Creates a request.
    public init(
        method: String = "GET", path: String, accept: String? = nil, ifNoneMatch: String? = nil,
        ifModifiedSince: String? = nil, clientHints: ClientHints = ClientHints(), authorization: String? = nil
    ) {
        self.clientHints = clientHints
        self.authorization = authorization
        self.method = method
        self.path = path
        self.accept = accept
        self.ifNoneMatch = ifNoneMatch
        self.ifModifiedSince = ifModifiedSince
    }
}

/// A request's client hints, as imgproxy reads them (`IMGPROXY_ENABLE_CLIENT_HINTS`): the device pixel
/// ratio from `Sec-CH-DPR`, else `DPR` (the first that is a number in (0, 8]), and the width in device
/// pixels from `Sec-CH-Width`, else `Width` (the first whole number above 0). They become the `dpr` and
/// the `width` (divided by that ratio and rounded) a URL's own options start from.
public struct ClientHints: Sendable, Hashable {
    /// `Sec-CH-DPR`'s and `DPR`'s values, in that order, those present.
    public var dpr: [String]
    /// `Sec-CH-Width`'s and `Width`'s values, in that order, those present.
    public var width: [String]

    /// Hints with these values.
    public init(dpr: [String] = [], width: [String] = []) {
        self.dpr = dpr
        self.width = width
    }

    /// The hinted device pixel ratio, nil when none is valid.
    var pixelRatio: Double? {
        dpr.lazy.compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.first { $0 > 0 && $0 <= 8 }
    }

    /// The hinted width in device pixels, nil when none is valid; held at `ProxyURL.largestPixels`.
    var devicePixels: Int? {
        width.lazy.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.first { $0 > 0 }
            .map { min($0, ProxyURL.largestPixels) }
    }
}

/// What the proxy answers.
public struct ProxyResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// Header fields in order (`Content-Length` is the server's to add).
    public var headers: [(String, String)]
    /// The body.
    public var body: Data
    /// Where an image answer's bytes came from; nil for other answers.
    public var cacheStatus: ResultCacheStatus?

    /// Creates a response.
    public init(status: Int, headers: [(String, String)] = [], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response of one type, with `nosniff`.
    init(status: Int, contentType: String, body: Data) {
        self.init(
            status: status, headers: [("Content-Type", contentType), ("X-Content-Type-Options", "nosniff")],
            body: body)
    }

    /// The plain-text answer for `error`, never cached.
    init(error: ProxyError) {
        self.init(
            status: error.status,
            headers: [
                ("Content-Type", "text/plain; charset=utf-8"), ("X-Content-Type-Options", "nosniff"),
                ("Content-Security-Policy", "default-src 'none'"), ("Cache-Control", "no-store"),
            ],
            body: Data((error.message + "\n").utf8))
    }

    /// `jpeg`, `png`, `webp`, `avif`, `gif` or `jxl` from the `Content-Type` of an image answer; nil for others.
    var imageFormatName: String? {
        guard let type = header("Content-Type") else { return nil }
        return ProxyOutputFormat.allCases.first { $0.mimeType == type }?.rawValue
    }

    /// The value of header `name` (case-insensitive), the first when repeated.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// Where the bytes of an image answer came from, as the access log writes it.
public enum ResultCacheStatus: String, Sendable {
    /// The result cache had them: nothing was fetched or decoded.
    case hit
    /// This request made them.
    case miss
    /// Another request was making them; this one waited for its result.
    case joined
    /// `If-None-Match` matched: a 304, nothing made.
    case revalidated
}
