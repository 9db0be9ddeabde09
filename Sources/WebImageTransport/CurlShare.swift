import CCurl
import Foundation
import Locking

/// A curl share handle: cookies, DNS cache and TLS sessions shared by every transfer of one transport.
///
/// curl asks for a lock per kind of shared data, from whichever thread runs a transfer (here always the
/// transport thread, but the cookie jar's API also reaches in from callers' threads), so each kind
/// gets its own mutex. curl calls lock and unlock as two separate C callbacks, which rules out a
/// scoped `Lock`; `pthread_mutex_t` in stable heap memory is what it needs.
package final class CurlShare: @unchecked Sendable {
    // @unchecked Sendable: `handle` is only configured in init and freed in deinit; every access to the
    // shared data in between goes through curl, which takes `locks` around it.
    package let handle: UnsafeMutableRawPointer
    private let locks: UnsafeMutablePointer<pthread_mutex_t>
    private static let lockCount = Int(CURL_LOCK_DATA_LAST.rawValue)

    package init(sharesCookies: Bool) throws(TransportError) {
        try CurlRuntime.ensureInitialized()
        guard let handle = curl_share_init() else {
            throw TransportError(.failed, "curl_share_init failed")
        }
        self.handle = handle
        locks = .allocate(capacity: Self.lockCount)
        for index in 0..<Self.lockCount { pthread_mutex_init(locks + index, nil) }

        // The lock callbacks receive `locks` as user data; it lives until deinit, after curl_share_cleanup.
        let lockCode = wi_share_setopt_lock(
            handle,
            { _, data, _, user in
                guard let user else { return }
                pthread_mutex_lock(user.assumingMemoryBound(to: pthread_mutex_t.self) + Int(data.rawValue))
            },
            { _, data, user in
                guard let user else { return }
                pthread_mutex_unlock(user.assumingMemoryBound(to: pthread_mutex_t.self) + Int(data.rawValue))
            }, UnsafeMutableRawPointer(locks))
        var kinds = [CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_SSL_SESSION]
        if sharesCookies { kinds.append(CURL_LOCK_DATA_COOKIE) }
        do {
            // Without the lock callbacks curl would touch shared data from several threads unguarded.
            try CurlRuntime.checkShare(lockCode, "curl_share_setopt(LOCKFUNC)")
            for kind in kinds {
                try CurlRuntime.checkShare(
                    wi_share_setopt_long(handle, CURLSHOPT_SHARE, Int(kind.rawValue)), "curl_share_setopt(SHARE)")
            }
        } catch {
            curl_share_cleanup(handle)
            for index in 0..<Self.lockCount { pthread_mutex_destroy(locks + index) }
            locks.deallocate()
            throw error
        }
    }

    /// Runs `body` holding the lock curl uses for `kind`, for reading shared data outside a transfer.
    package func withLock<T>(_ kind: curl_lock_data, _ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(locks + Int(kind.rawValue))
        defer { pthread_mutex_unlock(locks + Int(kind.rawValue)) }
        return try body()
    }

    deinit {
        // Every easy handle using this share was cleaned up first (the transport owns both and frees
        // the share last), so curl_share_cleanup cannot fail with CURLSHE_IN_USE here.
        curl_share_cleanup(handle)
        for index in 0..<Self.lockCount { pthread_mutex_destroy(locks + index) }
        locks.deallocate()
    }
}
