import Dispatch
import Foundation

/// The (URL, trust) → operation table (see `MergeKey`), guarded by a concurrent queue used as a barrier queue: reads run `sync`,
/// changes run as barriers.
///
/// Never `sync` onto `queue` from code that may already run on it (SDWebImage #803): the only paths that
/// take it are `downloadImage` (caller threads) and `count`; removal runs as an *async* barrier because
/// it is triggered from an operation finishing, which can happen on any thread.
final class OperationTable: @unchecked Sendable {
    // @unchecked Sendable: `entries` is only touched inside blocks on `queue` — reads in `sync`, writes in
    // barrier blocks — so no two threads ever write it at once or read it during a write.
    struct Entries {
        var operations: [MergeKey: ImageDownloaderOperation] = [:]
        /// Operations not yet started, oldest first, for LIFO chaining.
        var waitingLIFO: [ImageDownloaderOperation] = []
        private var pruneThreshold = 64

        /// Makes the newest waiting operation wait for `operation` to *start* (see StartGate), so waiting
        /// operations start newest first while every slot stays busy. Returns the gate `operation` opens
        /// when it starts.
        mutating func chainLIFO(_ operation: ImageDownloaderOperation) -> StartGate {
            dropStartedFromTop()
            if waitingLIFO.count > pruneThreshold {
                // Started operations in the middle of the stack are dropped in bulk, amortised O(1) per add.
                waitingLIFO.removeAll { $0.hasStarted }
                pruneThreshold = max(64, waitingLIFO.count * 2)
            }
            let gate = StartGate()
            if let newestWaiting = waitingLIFO.last {
                // Only operations that have not started get a dependency (corelibs crash pattern a);
                // if it starts concurrently, the gate still keeps it alive until the gate opens.
                gate.hold(newestWaiting)
            }
            waitingLIFO.append(operation)
            return gate
        }

        /// Pops started operations off the top of the LIFO stack. Run on every add and every finish: an
        /// operation holds the environment, whose finish handler holds this table, so a finished operation
        /// left on the stack would keep itself, the table and the transport thread alive forever.
        mutating func dropStartedFromTop() {
            while let last = waitingLIFO.last, last.hasStarted { waitingLIFO.removeLast() }
        }
    }

    private let queue: DispatchQueue
    /// Removals, sent as blocks that run as barriers on `queue`: operations finishing close together
    /// share one barrier (on the transport thread, one per turn of its loop).
    private let removals: QueueChannel
    private var entries = Entries()

    init() {
        // A concurrent queue of the default kind would run the removal barriers on the threads Swift's
        // cooperative pool uses; while async callers hold them all, a `download` blocked in `withBarrier`
        // behind a removal would wait with them (BackgroundQueues says why). Its own target runs them anyway.
        queue = DispatchQueue(
            label: "WebImage.operationTable", attributes: .concurrent,
            target: BackgroundQueues.target(label: "WebImage.operationTable"))
        removals = QueueChannel(queue: queue, barrier: true)
    }

    func withBarrier<T>(_ body: (inout Entries) -> T) -> T {
        queue.sync(flags: .barrier) { body(&entries) }
    }

    /// Removes the entry for `operation`'s key if it still is that operation (a newer one may have taken
    /// the slot after this one stopped taking callers). Asynchronous, as a barrier.
    func remove(_ operation: ImageDownloaderOperation) {
        removals.async { [self] in
            if let key = operation.mergeKey, entries.operations[key] === operation { entries.operations[key] = nil }
            // When the last operation finishes, every operation has started, so this empties the stack.
            entries.dropStartedFromTop()
        }
    }

    var count: Int { queue.sync { entries.operations.count } }
}
