import CCurl
import Locking

/// Idle curl easy handles of the object-store client. A handle keeps its connections (and their TLS
/// sessions) across `curl_easy_reset`, so the many small requests of a run (a shard's objects, a
/// `files` shard's per-sample objects, a listing's pages) reuse a few connections instead of opening
/// one each.
final class S3HandlePool: Sendable {
    /// The handles of every client of the process.
    static let shared = S3HandlePool()

    /// At most this many idle handles are kept; more are cleaned up on check-in.
    private static let maximumIdle = 8

    /// Idle handles as their addresses: an `UnsafeMutableRawPointer` is not `Sendable`, and a handle is
    /// used by one request at a time, between `checkOut` and `checkIn`.
    private let idle = Lock<[UInt]>([])

    /// An idle handle (with curl's default options) or a new one; nil when curl cannot make one.
    func checkOut() -> UnsafeMutableRawPointer? {
        if let address = idle.withLock({ $0.popLast() }), let handle = UnsafeMutableRawPointer(bitPattern: address) {
            return handle
        }
        return curl_easy_init()
    }

    /// Returns `handle` for another request; `reusable` false (a failed transfer) cleans it up instead.
    /// Its options are reset first, so no idle handle keeps a pointer to the request's buffers, header
    /// list or callbacks' object, which its caller frees.
    func checkIn(_ handle: UnsafeMutableRawPointer, reusable: Bool) {
        curl_easy_reset(handle)
        let kept =
            reusable
            && idle.withLock { handles -> Bool in
                guard handles.count < Self.maximumIdle else { return false }
                handles.append(UInt(bitPattern: handle))
                return true
            }
        if !kept { curl_easy_cleanup(handle) }
    }
}
