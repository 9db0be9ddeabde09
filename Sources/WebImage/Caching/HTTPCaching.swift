import Foundation

/// A private HTTP cache with RFC 9111 semantics, used by the downloader with `.useURLCache`.
///
/// The downloader drives it in three steps: `lookup` before the network (a fresh hit needs no
/// request; a stale hit gives the conditional headers to send), `store` after a cacheable 200, and
/// `refresh` after a `304 Not Modified`, which merges the 304's headers into the stored response
/// and hands back the stored body. Dates are parameters so callers (and tests) control the clock.
///
/// ```swift
/// let cache: any HTTPCaching = HTTPCache()
/// let requestDate = Date()
/// switch cache.lookup(request, now: requestDate) {
/// case .fresh(let cached):
///     deliver(cached.body)                                  // no network
/// case .stale(let cached, let conditionalHeaders):
///     var conditional = request
///     for field in conditionalHeaders { conditional.headers[field.name] = field.value }
///     let (head, body) = try await send(conditional)
///     if head.statusCode == 304,
///        let refreshed = cache.refresh(with: head, for: request, requestDate: requestDate, responseDate: Date()) {
///         deliver(refreshed.body)
///     } else {
///         cache.store(head, body: body, for: request, requestDate: requestDate, responseDate: Date())
///         deliver(body)
///     }
/// case .miss:
///     let (head, body) = try await send(request)
///     cache.store(head, body: body, for: request, requestDate: requestDate, responseDate: Date())
///     deliver(body)
/// }
/// ```
public protocol HTTPCaching: Sendable {
    /// Finds a stored response that can answer `request` at `now`.
    ///
    /// Returns `.fresh` when it may be used without contacting the server, `.stale` with the
    /// validators to send when it must be revalidated, and `.miss` when nothing usable is stored
    /// (including a stale response without validators, and a `Vary` mismatch).
    func lookup(_ request: ImageDownloadRequest, now: Date) -> HTTPCacheLookup

    /// Stores a complete response to `request` if RFC 9111 allows it; otherwise does nothing
    /// (and drops any previously stored response the new one supersedes).
    ///
    /// - Parameters:
    ///   - requestDate: when the request was sent (RFC 9111 `request_time`).
    ///   - responseDate: when the response head arrived (`response_time`).
    func store(
        _ response: TransferResponse, body: Data, for request: ImageDownloadRequest, requestDate: Date,
        responseDate: Date)

    /// Merges the header fields of a `304 Not Modified` into the stored response to `request`
    /// (RFC 9111 §4.3.4) and returns the updated response with its stored body, or `nil` when
    /// nothing matching is stored (the caller then reports `cacheNotModified`).
    @discardableResult
    func refresh(
        with notModified: TransferResponse, for request: ImageDownloadRequest, requestDate: Date,
        responseDate: Date
    ) -> CachedHTTPResponse?

    /// Removes the response stored for `url`, if any.
    func removeResponse(for url: URL)

    /// Removes every stored response.
    func removeAll()
}

/// A stored response: its head, its body and the times RFC 9111's age calculation needs.
public struct CachedHTTPResponse: Sendable, Hashable {
    /// The response head as stored (hop-by-hop fields and `Set-Cookie` removed; refreshed by 304s).
    public var response: TransferResponse
    /// The body, exactly as received.
    public var body: Data
    /// When the request that produced (or last revalidated) this response was sent.
    public var requestDate: Date
    /// When that response arrived.
    public var responseDate: Date
    /// The request header values named by the response's `Vary` field, by lower-cased name (a
    /// header the request did not send is absent); empty when the response has no `Vary`.
    public var varyingRequestHeaders: [String: String]

    /// Creates a stored response.
    public init(
        response: TransferResponse, body: Data, requestDate: Date, responseDate: Date,
        varyingRequestHeaders: [String: String] = [:]
    ) {
        self.response = response
        self.body = body
        self.requestDate = requestDate
        self.responseDate = responseDate
        self.varyingRequestHeaders = varyingRequestHeaders
    }

    /// The response's current age at `now` in seconds (RFC 9111 §4.2.3).
    public func age(at now: Date) -> TimeInterval {
        HTTPCachePolicy.currentAge(of: self, now: now)
    }

    /// How long the response is fresh for from its origin, in seconds (RFC 9111 §4.2.1): explicit
    /// from `Cache-Control: max-age` or `Expires`, else heuristic from `Last-Modified`, else 0.
    public var freshnessLifetime: TimeInterval {
        HTTPCachePolicy.freshnessLifetime(of: self)
    }
}

/// The answer of `HTTPCaching.lookup`.
public enum HTTPCacheLookup: Sendable, Hashable {
    /// Nothing usable is stored: send the request unchanged.
    case miss
    /// A stored response that may be used without contacting the server.
    case fresh(CachedHTTPResponse)
    /// A stored response that must be revalidated: add `conditionalHeaders` (`If-None-Match`,
    /// `If-Modified-Since`) to the request; on `304` call `refresh`, on a new `200` call `store`.
    case stale(CachedHTTPResponse, conditionalHeaders: HTTPHeaders)

    /// The stored response of a `.fresh` or `.stale` result.
    public var cachedResponse: CachedHTTPResponse? {
        switch self {
        case .miss: nil
        case .fresh(let cached), .stale(let cached, _): cached
        }
    }
}
