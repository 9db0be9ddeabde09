import Dispatch
import Locking

#if canImport(Glibc)
    import Glibc
#endif

/// Runs blocks on a queue in the order they were sent, with one queue hop for every burst instead of
/// one per block.
///
/// Each `DispatchQueue.async` onto an idle queue wakes a thread, and a download sends several blocks to
/// the callback queue (the Start, ReceiveResponse, Stop and Finish notifications, each caller's
/// completion) and one removal to the URL table's barrier queue, from several threads. The channel
/// appends a block to a list and schedules a drain only when none is scheduled; the drain runs blocks
/// until the list is empty. Blocks sent while a drain is pending or running join it, so a busy
/// downloader wakes each queue once per burst.
///
/// Order: every block the library sends to the callback queue goes through its channel (see
/// `CallbackTarget`), so they run in the order sent. A block someone else puts on the queue directly
/// runs between two drains, never inside one. With `barrier`, each drain is a barrier block (the
/// operation table's queue), so the blocks run alone, as one barrier would.
///
/// A thread that produces many blocks in a short burst (the transport thread, once per turn of its
/// loop) may hold the drains back with a `DrainBatch`: blocks are listed as usual, and the drain is
/// scheduled when the batch is flushed, once for everything the turn produced.
///
/// So `async` behaves according to the calling thread: on a thread with a batch installed (only
/// `CurlTransport`'s loop installs one, in `TransportLoop.run`) the hop waits for the batch's flush;
/// anywhere else it is scheduled at once. The order of the blocks is the same either way. The same
/// holds for `DrainBatch.offload`, which `ImageDownloaderOperation.finish()` uses. Tests:
/// `QueueChannelTests` (`aDrainBatchHoldsTheHopUntilItIsFlushed` and the unbatched cases).
final class QueueChannel: Sendable {
    private struct Pending {
        var blocks: [@Sendable () -> Void] = []
        var drainScheduled = false
    }

    let queue: DispatchQueue
    private let isBarrier: Bool
    private let pending = Lock(Pending())

    /// A channel to a serial `queue`, or, with `barrier`, to a concurrent queue whose drains are barriers.
    init(queue: DispatchQueue, barrier: Bool = false) {
        self.queue = queue
        isBarrier = barrier
    }

    /// Runs `block` on the queue after every block sent before it.
    func async(_ block: @escaping @Sendable () -> Void) {
        let schedule = pending.withLock { pending -> Bool in
            pending.blocks.append(block)
            guard !pending.drainScheduled else { return false }
            pending.drainScheduled = true
            return true
        }
        guard schedule else { return }
        DrainBatch.scheduleOrDefer { self.queue.async(flags: self.isBarrier ? .barrier : []) { self.drain() } }
    }

    private func drain() {
        while true {
            let batch = pending.withLock { pending -> [@Sendable () -> Void] in
                if pending.blocks.isEmpty {
                    pending.drainScheduled = false
                    return []
                }
                defer { pending.blocks.removeAll(keepingCapacity: true) }
                return pending.blocks
            }
            if batch.isEmpty { return }
            for block in batch { block() }
        }
    }
}

/// Where one caller's (or one operation's notifications') blocks run: the downloader's callback queue
/// through its channel, or a queue given in `ImageDownloadContext.callbackQueue`, used directly.
struct CallbackTarget: Sendable {
    let queue: DispatchQueue
    private let channel: QueueChannel?

    /// `queue`, used directly.
    init(direct queue: DispatchQueue) {
        self.queue = queue
        channel = nil
    }

    /// `queue` when it is another queue than the channel's; otherwise the channel.
    init(queue: DispatchQueue?, default channel: QueueChannel) {
        if let queue, queue !== channel.queue {
            self.queue = queue
            self.channel = nil
        } else {
            self.queue = channel.queue
            self.channel = channel
        }
    }

    func async(_ block: @escaping @Sendable () -> Void) {
        if let channel {
            channel.async(block)
        } else {
            queue.async(execute: block)
        }
    }
}

/// Queue hops held back on one thread until `flush()`: callback-queue drains (see QueueChannel) and
/// the operation table's removal barrier; and work moved off the thread (`offload`), sent to another
/// thread in one block. Installed once on a thread with `install()` and used only on that thread.
final class DrainBatch {
    private var held: [@Sendable () -> Void] = []
    private var offloaded: [@Sendable () -> Void] = []

    /// Thread-specific slot holding the current thread's batch, if any.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The batch of the calling thread.
    static var current: DrainBatch? {
        pthread_getspecific(key).map { Unmanaged<DrainBatch>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Makes this the calling thread's batch until `uninstall()`. The thread keeps a strong reference to
    /// the batch for that long, so the unretained pointer in the slot stays valid.
    func install() {
        pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Flushes and removes this batch from the calling thread.
    func uninstall() {
        flush()
        pthread_setspecific(Self.key, nil)
    }

    /// Runs `schedule` (which dispatches work to a queue) now, or at the next `flush()` when the calling
    /// thread has a batch installed.
    static func scheduleOrDefer(_ schedule: @escaping @Sendable () -> Void) {
        if let batch = current {
            batch.held.append(schedule)
        } else {
            schedule()
        }
    }

    /// Runs `work` on another thread: at the next `flush()`, in one block with the other work offloaded
    /// in the same turn, when the calling thread has a batch installed; otherwise right here.
    static func offload(_ work: @escaping @Sendable () -> Void) {
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
    func flush() {
        guard !held.isEmpty || !offloaded.isEmpty else { return }
        let hops = held
        held.removeAll(keepingCapacity: true)
        guard !offloaded.isEmpty else {
            for hop in hops { hop() }
            return
        }
        let work = offloaded
        offloaded.removeAll(keepingCapacity: true)
        DispatchQueue.global().async {
            let batch = DrainBatch()
            batch.install()
            for item in work { item() }
            for hop in hops { hop() }
            batch.uninstall()
        }
    }
}
