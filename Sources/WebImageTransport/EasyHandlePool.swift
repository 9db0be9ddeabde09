import CCurl
import Locking
import Synchronization

/// Easy handles of one transport, kept for the next transfer instead of freed.
///
/// `curl_easy_init` allocates and fills a large handle and the first transfer on it allocates curl's
/// receive buffer; `curl_easy_cleanup` frees both. A returned handle is `curl_easy_reset` instead: every
/// option goes back to its default (URL, headers, credentials, callbacks, TLS switches) and the
/// authentication state is cleared, while the allocations stay (the receive buffer too, when the transfer
/// was an HTTP/2 stream whose connection other streams still used: see `CurlTransfer`'s
/// `setReceiveBufferSize`). A handle whose transfer turned curl's
/// cookie engine on is never reused: the reset does not reliably turn the engine off again, and a
/// reused handle must not send cookies for a request without `.handleCookies`.
///
/// Idle handles stay attached to the transport's share handle, so the pool frees them before it lets
/// the share go (`share` is a stored property: released only after `deinit` has run). The pool of
/// `BlockingTransfer` has no share.
final class EasyHandlePool: @unchecked Sendable {
    // @unchecked Sendable: `idle` is behind a Lock; the handles in it are used by nobody until checked
    // out, and a checked-out handle belongs to one CurlTransfer.
    private struct Idle {
        var handles: [UnsafeMutableRawPointer] = []
        var closed = false
    }

    private let share: CurlShare?
    private let idle = Lock(Idle())
    private let capacity: Int
    private let live = Atomic<Int>(0)

    /// Keeps at most `capacity` idle handles (enough for the downloader's concurrency).
    init(share: CurlShare?, capacity: Int = 16) {
        self.share = share
        self.capacity = capacity
    }

    deinit {
        let handles = idle.withLock { $0.handles }
        for easy in handles { curl_easy_cleanup(easy) }
    }

    /// Handles of this pool that exist: in use by a transfer or idle. 0 once the pool is closed and every
    /// transfer is gone.
    var liveHandleCount: Int { live.load(ordering: .relaxed) }

    /// An idle handle (already reset, `isReused` true), or a new one; nil when curl cannot make one.
    func checkOut() -> (easy: UnsafeMutableRawPointer, isReused: Bool)? {
        if let easy = idle.withLock({ $0.closed ? nil : $0.handles.popLast() }) { return (easy, true) }
        guard let easy = curl_easy_init() else { return nil }
        live.add(1, ordering: .relaxed)
        return (easy, false)
    }

    /// Takes back a handle that is in no multi handle any more. It is reset and kept when `reusable`,
    /// the pool is open and not full; otherwise freed.
    func checkIn(_ easy: UnsafeMutableRawPointer, reusable: Bool) {
        if reusable {
            curl_easy_reset(easy)
            let kept = idle.withLock { idle -> Bool in
                guard !idle.closed, idle.handles.count < capacity else { return false }
                idle.handles.append(easy)
                return true
            }
            if kept { return }
        }
        curl_easy_cleanup(easy)
        live.subtract(1, ordering: .relaxed)
    }

    /// Frees every idle handle; handles checked in later are freed at once. Idempotent.
    func close() {
        let handles = idle.withLock { idle -> [UnsafeMutableRawPointer] in
            idle.closed = true
            defer { idle.handles.removeAll() }
            return idle.handles
        }
        for easy in handles { curl_easy_cleanup(easy) }
        live.subtract(handles.count, ordering: .relaxed)
    }
}
