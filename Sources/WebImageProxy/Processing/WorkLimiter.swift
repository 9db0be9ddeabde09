import Locking

/// The proxy's backpressure: at most `maximumRunning` jobs at once and `maximumQueued` more waiting in
/// arrival order; anything past that is refused at once, so nothing ever queues without bound. A queued
/// job whose task is cancelled (every request for it left) leaves the queue without running.
///
/// ```swift
/// switch limiter.admit() {
/// case .refused: return busy
/// case .queued: guard await limiter.waitForTurn() else { return abandoned }
/// case .granted: break
/// }
/// defer { limiter.release() }
/// ```
final class WorkLimiter: Sendable {
    /// What `admit()` decided.
    enum Admission: Sendable, Equatable {
        /// A slot is taken: run now, then `release()`.
        case granted
        /// A place in the queue is taken: `waitForTurn()`, and when it returns true run, then `release()`.
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

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var running = 0
        /// Places taken in the queue: waiters below plus jobs between `admit()` and `waitForTurn()`.
        var queued = 0
        var waiters: [Waiter] = []
        var lastWaiter: UInt64 = 0
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

    /// After `.queued`: true once a slot is this job's (then `release()` it), false when the calling task
    /// was cancelled first: its place in the queue is given back and it holds nothing.
    func waitForTurn() async -> Bool {
        let id = state.withLock { state in
            state.lastWaiter += 1
            return state.lastWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                // Checking for cancellation under the lock pairs with `onCancel` taking it: either this sees
                // the flag and leaves now, or `onCancel` runs after the waiter is queued and removes it.
                let turn = state.withLock { state -> Bool? in
                    if Task.isCancelled {
                        state.queued -= 1
                        return false
                    }
                    // A slot freed between `admit()` and here found no waiter and was given back to
                    // `running`; taking it now is what keeps this job from waiting for the next release.
                    if state.running < maximumRunning {
                        state.running += 1
                        state.queued -= 1
                        return true
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let turn { continuation.resume(returning: turn) }
            }
        } onCancel: {
            // Not found: the waiter was not queued yet (the check above sees the flag) or already got a slot
            // (the job sees its cancellation and releases the slot).
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                state.queued -= 1
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    /// Gives the slot to the longest-waiting job, or frees it.
    func release() {
        let next = state.withLock { state -> Waiter? in
            guard !state.waiters.isEmpty else {
                state.running -= 1
                return nil
            }
            state.queued -= 1
            return state.waiters.removeFirst()  // the slot passes on: `running` stays
        }
        next?.continuation.resume(returning: true)
    }

    /// Jobs parked in `waitForTurn()` now (the queued ones past their `admit()`).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// The counts now.
    var snapshot: Snapshot {
        state.withLock { Snapshot(running: $0.running, queued: $0.queued) }
    }
}
