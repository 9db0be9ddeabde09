import Foundation

/// What one operation exchanges with the HTTP cache (`.useURLCache` only): the cache, when the request
/// was sent, the stale entry being revalidated, and what a 304 taught about it.
struct HTTPCacheExchange {
    var cache: any HTTPCaching
    var requestDate: Date
    /// The stale entry whose validators were sent.
    var revalidating: CachedHTTPResponse?
    /// The stored entry a 304 confirmed; its body replaces the (empty) 304 body.
    var confirmedByServer: CachedHTTPResponse?
    /// What a 304 taught about the stored entry, written to the cache off the transport thread.
    var pendingRevalidation: PendingRevalidation?
}

/// A cache write a 304 calls for, decided on the transport thread and done off it.
enum PendingRevalidation: Sendable {
    /// Merge the 304's fields into the stored entry.
    case refresh(notModified: TransferResponse, requestDate: Date, responseDate: Date)
    /// The 304 validated another representation: the stored entry is outdated.
    case remove
}
