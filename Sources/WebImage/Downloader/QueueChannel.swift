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
