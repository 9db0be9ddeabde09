import Foundation
import Locking
import WebImageCodecs

/// One job's cancellation as the steps it hands to the downloader see it. The downloader encodes on its
/// processing stage (Dispatch threads), where Swift's task cancellation does not reach: the job's encoder asks
/// `stopCheck` instead, and the job, once cancelled, waits in `untilStepsEnded()` for an encode already
/// running to stop before it gives up its slot, since a slot stands for a core and an abandoned encode
/// still running holds one.
///
/// Decoding and resizing are not interrupted: the source limits bound them, and an encode that was not
/// started when the job was cancelled never starts (`beginStep()` refuses; the downloader also drops an
/// encode none of its callers still waits for).
final class JobCancellation: Sendable {
    private struct State {
        var cancelled = false
        var runningSteps = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Lock(State())

    /// Cancels the job: steps not started never start, running ones are asked to stop.
    func cancel() {
        state.withLock { $0.cancelled = true }
    }

    /// Whether `cancel()` ran.
    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// What the job's encoder asks while it works.
    var stopCheck: EncodeStopCheck { EncodeStopCheck { [self] in isCancelled } }

    /// Marks a step running; false, marking nothing, once the job is cancelled. Checked and marked under
    /// one lock, so `untilStepsEnded()` never returns while a step it did not see is starting.
    func beginStep() -> Bool {
        state.withLock { state in
            guard !state.cancelled else { return false }
            state.runningSteps += 1
            return true
        }
    }

    /// Marks a step begun with `beginStep()` ended.
    func endStep() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.runningSteps -= 1
            guard state.runningSteps == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once no step runs. Call it after `cancel()`: then no step can start afterwards either.
    func untilStepsEnded() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state in
                if state.runningSteps == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}

/// A format's encoder run as a step of one job: it does not start once the job is cancelled, and the job
/// waits for it to end before it frees its slot (`JobCancellation`). The key is the format encoder's: the
/// wrapper decides whether bytes are made, never which.
struct JobEncoder: ImageEncoding {
    let base: any ImageEncoding
    let cancellation: JobCancellation

    var format: ImageFormat { base.format }
    var key: String { base.key }

    func encode(_ image: Image) throws -> Data {
        guard cancellation.beginStep() else {
            throw ImageCodecError(.stopped, "the encode was not started: nobody waits for its result")
        }
        defer { cancellation.endStep() }
        return try base.encode(image)
    }
}
