import Locking

/// The proxy's backpressure: at most `maximumRunning` jobs at once and `maximumQueued` more waiting in
/// arrival order; anything past that is refused at once, so nothing ever queues without bound.
///
/// ```swift
/// switch limiter.admit() {
/// case .refused: return busy
/// case .queued: await limiter.waitForTurn()
/// case .granted: break
/// }
/// defer { limiter.release() }
/// ```
final class WorkLimiter: Sendable {
    /// What `admit()` decided.
    enum Admission: Sendable, Equatable {
        /// A slot is taken: run now, then `release()`.
        case granted
        /// A place in the queue is taken: `waitForTurn()`, run, then `release()`.
        case queued
        /// Both are full: answer 503.
        case refused
    }

    /// How full the limiter is.
    struct Snapshot: Sendable, Equatable {
        /// Jobs holding a slot.
        var running: Int
        /// Jobs admitted to the queue and not yet running.
        var queued: Int
    }

    private struct State {
        var running = 0
        /// Places taken in the queue: waiters below plus jobs between `admit()` and `waitForTurn()`.
        var queued = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    let maximumRunning: Int
    let maximumQueued: Int
    private let state = Lock(State())

    init(maximumRunning: Int, maximumQueued: Int) {
        self.maximumRunning = max(1, maximumRunning)
        self.maximumQueued = max(0, maximumQueued)
    }

    /// Takes a slot or a place in the queue, or refuses; never waits.
    func admit() -> Admission {
        state.withLock { state in
            if state.running < maximumRunning {
                state.running += 1
                return .granted
            }
            if state.queued < maximumQueued {
                state.queued += 1
                return .queued
            }
            return .refused
        }
    }

    /// After `.queued`: returns once a slot is this job's.
    func waitForTurn() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // A slot freed between `admit()` and here found no waiter and was given back to `running`;
            // taking it now is what keeps that job from waiting for the next release.
            let runsNow = state.withLock { state in
                if state.running < maximumRunning {
                    state.running += 1
                    state.queued -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if runsNow { continuation.resume() }
        }
    }

    /// Gives the slot to the longest-waiting job, or frees it.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.running -= 1
                return nil
            }
            state.queued -= 1
            return state.waiters.removeFirst()  // the slot passes on: `running` stays
        }
        next?.resume()
    }

    /// The counts now.
    var snapshot: Snapshot {
        state.withLock { Snapshot(running: $0.running, queued: $0.queued) }
    }
}
