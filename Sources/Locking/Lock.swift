#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value behind a mutual-exclusion lock, on `pthread_mutex_t`. The same shape as
/// `Synchronization.Mutex`: `Lock(value)` and `withLock { value in ... }`.
///
/// Why not `Synchronization.Mutex`, which STYLE.md prefers: on Linux (Swift 6.3) ThreadSanitizer does not
/// see `Mutex`'s futex-based locking and reports every access it protects as a data race (an 8-line
/// program with `DispatchQueue.concurrentPerform` and `Mutex.withLock` reproduces it). TSan intercepts
/// pthread mutexes, so with this type `swift test --sanitize=thread` reports only real races. Uncontended
/// cost is the same order as `Mutex` (one atomic instruction each way).
///
/// `Value` must not be zero-sized (`Lock(())`): ThreadSanitizer then reports a false race, because the
/// exclusivity check of a zero-sized stored property is recorded at the object's own address, which
/// another thread reads (the object's header) when it calls `withLock` before taking the lock. A lock
/// that guards something outside itself holds that thing (or a count of its uses) as its value. Debug
/// builds assert this.
public final class Lock<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only read or written inside `withLock`, between lock and unlock of
    // `mutex`, so no two threads ever touch it at once (the guarantee `Mutex` gives, enforced the same way).
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// Creates a lock holding `value`.
    public init(_ value: Value) {
        assert(MemoryLayout<Value>.size > 0, "Lock's value must not be zero-sized (ThreadSanitizer false positive)")
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Never call back into code that takes the same lock.
    @inlinable
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body(&valueStorage)
    }

    @usableFromInline
    func lock() { pthread_mutex_lock(mutex) }

    @usableFromInline
    func unlock() { pthread_mutex_unlock(mutex) }

    @usableFromInline
    var valueStorage: Value {
        _read { yield value }
        _modify { yield &value }
    }
}
