import Dispatch
import Locking

/// Where the library sends its own background hops, so they never wait for a thread that async code holds.
///
/// On Linux, Swift's cooperative pool and Dispatch's global concurrent queues of the default quality of
/// service draw on one pool of as many threads as cores. When async code keeps those threads busy (a long
/// computation, a blocking wait), work sent to `DispatchQueue.global()` or to a concurrent queue waits until
/// one is free, and a caller blocked in `sync` on such a queue waits with it: with two cores, one CPU-bound
/// task and one `download` call taking the operation table's barrier stalled every download of the process
/// until the computation ended. Serial queues target Dispatch's overcommit root queue instead, which starts
/// a thread whenever work waits; a few of them, taken in turn, keep unrelated hops parallel.
package enum BackgroundQueues {
    private static let queues: [DispatchQueue] = (0..<8).map { DispatchQueue(label: "WebImage.background.\($0)") }
    private static let turn = Lock(0)

    /// The next queue, in turn.
    package static var next: DispatchQueue {
        let index = turn.withLock { turn in
            defer { turn = (turn + 1) % queues.count }
            return turn
        }
        return queues[index]
    }

    /// A serial queue of its own for `label` that never waits for the cooperative pool's threads, for a
    /// concurrent queue to target (its barriers then keep their meaning; its blocks run one at a time).
    package static func target(label: String) -> DispatchQueue {
        DispatchQueue(label: label + ".target")
    }
}
