import Dispatch
import Locking

/// One stage of the image work after a body arrived (decoding, or transforming and encoding), with its own
/// width: at most `width` of its jobs run at once, across every operation of the downloader; the others
/// wait in the order they came.
///
/// A job is submitted, never waited for: it runs on `target`, a Dispatch queue off the Swift cooperative
/// pool (decoders and encoders block their thread for milliseconds to seconds), and a finishing job starts
/// the next waiting one on the same thread. Nothing blocks to wait for room, so a full stage never holds a
/// thread.
final class WorkStage: Sendable {
    /// The most jobs that run at once (at least 1).
    let width: Int
    private let target: DispatchQueue

    private struct State {
        var running = 0
        /// Jobs waiting for room, oldest first from `head`; a taken entry is set to nil at once, so the
        /// images and bodies its closure holds are freed as soon as it ran, not when the list is compacted.
        var waiting: [(@Sendable () -> Void)?] = []
        var head = 0

        mutating func next() -> (@Sendable () -> Void)? {
            guard head < waiting.count, let job = waiting[head] else {
                waiting.removeAll(keepingCapacity: true)
                head = 0
                return nil
            }
            waiting[head] = nil
            head += 1
            if head >= 64, head * 2 >= waiting.count {
                waiting.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    private let state = Lock(State())

    /// A stage running at most `width` jobs at once on `target`, a concurrent queue.
    init(width: Int, target: DispatchQueue) {
        self.width = max(1, width)
        self.target = target
    }

    /// Runs `job` when there is room: now, or after the jobs submitted before it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        let runsNow = state.withLock { state in
            if state.running < width {
                state.running += 1
                return true
            }
            state.waiting.append(job)
            return false
        }
        if runsNow { target.async { self.run(job) } }
    }

    /// How many jobs run now (for tests and metrics).
    var runningCount: Int { state.withLock { $0.running } }

    private func run(_ first: @escaping @Sendable () -> Void) {
        var job = first
        while true {
            job()
            // The slot passes straight to the next waiting job, on this thread: no wake-up of another.
            let next = state.withLock { state -> (@Sendable () -> Void)? in
                guard let next = state.next() else {
                    state.running -= 1
                    return nil
                }
                return next
            }
            guard let next else { return }
            job = next
        }
    }
}
