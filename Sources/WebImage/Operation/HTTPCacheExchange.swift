import Foundation

/// What one operation exchanges with the HTTP cache (`.useURLCache` only): the cache, when the request
/// was sent, and where the revalidation of a stored entry stands. It lives in the lifecycle's
/// `transferring` state, and in `stopping`, so that what a 304 taught is not lost to a cancel.
struct HTTPCacheExchange {
    let cache: any HTTPCaching
    /// When the request was sent (RFC 9111 `request_time`).
    let requestDate: Date
    var revalidation: Revalidation

    /// The revalidation of a stored entry (RFC 9111 §4.3), one answer at most:
    ///
    /// ```
    /// fetching   ──────────────────────────────────────────────────────────▶ a 200 is stored
    /// validating ──304 matching, served──────▶ notModified(refresh, stored body) ▶ served from the cache
    ///    │       ──304 matching, ignored─────▶ notModified(refresh, nil)         ▶ cacheNotModified
    ///    │       ──304 for another version───▶ notModified(remove, nil)          ▶ cacheNotModified
    ///    └──────────────────────────────────────────────────────────────────────▶ a 200 replaces the entry
    /// ```
    enum Revalidation {
        /// Nothing usable was stored: the request went without validators.
        case fetching
        /// The validators of this stale entry were sent. Until a 304 answers, the answer is a new
        /// response, which replaces the entry.
        case validating(CachedHTTPResponse)
        /// A 304 answered: `change` is what it taught the cache (a refresh of the entry, or its removal),
        /// `storedBody` the body to serve, nil when the callers may not use the entry (cacheNotModified).
        case notModified(HTTPCacheWrite.Change, storedBody: Data?)
    }

    /// What the cache gets when the answer is served: a new answer (`response`) is stored, or what a 304
    /// taught is written.
    func writeWhenServed(_ response: TransferResponse?) -> HTTPCacheWrite? {
        switch revalidation {
        case .fetching, .validating:
            response.map { HTTPCacheWrite(cache: cache, change: .store($0, requestDate: requestDate)) }
        case .notModified(let change, _):
            HTTPCacheWrite(cache: cache, change: change)
        }
    }

    /// What the cache gets when the operation fails or is cancelled: only what a 304 taught; an answer
    /// nobody was served is not stored.
    var writeWhenNotServed: HTTPCacheWrite? {
        guard case .notModified(let change, _) = revalidation else { return nil }
        return HTTPCacheWrite(cache: cache, change: change)
    }

    /// The stored body a 304 confirmed, served instead of the (empty) 304 body.
    var confirmedBody: Data? {
        guard case .notModified(_, let body) = revalidation else { return nil }
        return body
    }

    /// Decides what a 304 means, at `now`: a 304 that confirms the entry whose validators were sent
    /// refreshes its head (RFC 9111 §4.3.4) and serves its body, unless `ignoringCachedResponse`; a 304
    /// for another representation makes the entry outdated. Returns the refreshed head, nil when the
    /// 304 confirmed nothing this request may use (no validators were sent, another representation, or
    /// a second answer).
    mutating func notModified(_ answer: TransferResponse, at now: Date, ignoringCachedResponse: Bool)
        -> TransferResponse?
    {
        guard case .validating(let stored) = revalidation else { return nil }
        guard HTTPCachePolicy.notModified(answer.headers, matches: stored.response.headers) else {
            revalidation = .notModified(.remove, storedBody: nil)
            return nil
        }
        var refreshed = stored.response
        refreshed.headers = HTTPCachePolicy.mergedHeaders(
            stored: stored.response.headers, notModified: answer.headers, receivedAt: now)
        let refresh = HTTPCacheWrite.Change.refresh(notModified: answer, requestDate: requestDate, responseDate: now)
        revalidation = .notModified(refresh, storedBody: ignoringCachedResponse ? nil : stored.body)
        return refreshed
    }
}

/// A write to the HTTP cache that an operation's answer calls for. The operation carries it out off the
/// transport thread: the cache's index is SQLite, and the transport thread drives every other transfer.
struct HTTPCacheWrite: Sendable {
    let cache: any HTTPCaching
    let change: Change

    enum Change: Sendable {
        /// Store a new answer with its body, when RFC 9111 allows (to a plain or a conditional request).
        case store(TransferResponse, requestDate: Date)
        /// Merge a 304's fields into the stored entry it confirmed.
        case refresh(notModified: TransferResponse, requestDate: Date, responseDate: Date)
        /// The 304 validated another representation: the stored entry is outdated.
        case remove
    }
}
