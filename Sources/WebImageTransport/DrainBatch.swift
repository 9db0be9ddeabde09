import Foundation

/// Queue hops held back on one thread until `flush()`: callback-queue drains (see QueueChannel) and
/// the operation table's removal barrier, both in WebImage; and work moved off the thread (`offload`), sent to another
/// thread in one block. Installed once on a thread with `install()` and used only on that thread.
package final class DrainBatch {
    private var held: [@Sendable () -> Void] = []
    private var offloaded: [@Sendable () -> Void] = []

    /// A batch holding nothing; `install()` puts it to use.
    package init() {}

    /// Thread-specific slot holding the current thread's batch, if any.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The batch of the calling thread.
    package static var current: DrainBatch? {
        pthread_getspecific(key).map { Unmanaged<DrainBatch>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Makes this the calling thread's batch until `uninstall()`. The thread keeps a strong reference to
    /// the batch for that long, so the unretained pointer in the slot stays valid.
    package func install() {
        pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Flushes and removes this batch from the calling thread.
    package func uninstall() {
        flush()
        pthread_setspecific(Self.key, nil)
    }

    /// Runs `schedule` (which dispatches work to a queue) now, or at the next `flush()` when the calling
    /// thread has a batch installed.
    package static func scheduleOrDefer(_ schedule: @escaping @Sendable () -> Void) {
        if let batch = current {
            batch.held.append(schedule)
        } else {
            schedule()
        }
    }

    /// Runs `work` on another thread: at the next `flush()`, in one block with the other work offloaded
    /// in the same turn, when the calling thread has a batch installed; otherwise right here.
    package static func offload(_ work: @escaping @Sendable () -> Void) {
        if let batch = current {
            batch.offloaded.append(work)
        } else {
            work()
        }
    }

    /// Runs every hop held back so far. Call it before the thread blocks.
    ///
    /// With offloaded work, the held hops go along with it, after it: operations that finished in this
    /// turn are announced to their queue before any callback of the turn can run, as when they were
    /// announced on this thread.
    package func flush() {
        guard !held.isEmpty || !offloaded.isEmpty else { return }
        let hops = held
        held.removeAll(keepingCapacity: true)
        guard !offloaded.isEmpty else {
            for hop in hops { hop() }
            return
        }
        let work = offloaded
        offloaded.removeAll(keepingCapacity: true)
        // Not `DispatchQueue.global()`: see BackgroundQueues.
        BackgroundQueues.next.async {
            let batch = DrainBatch()
            batch.install()
            for item in work { item() }
            for hop in hops { hop() }
            batch.uninstall()
        }
    }
}
