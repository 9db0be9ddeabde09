import Foundation
import LocalImageServer
import Locking
import ServerTestSupport
import TestSupport
import Testing
import WebImage
import WebImageCodecs

@testable import WebImageProxy

/// Work lives only while someone waits for it: `WorkLimiter` lets a cancelled job leave its queue,
/// `ResultCoalescer` cancels work whose last waiter left, and a cancelled job's download and encode stop.
@Suite("serve: scheduling — WorkLimiter, ResultCoalescer, cancelled jobs", .timeLimit(.minutes(5)))
struct ServeSchedulingTests {
    /// A one-shot event a test awaits.
    final class Event: Sendable {
        private let state = Lock<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func fire() {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.fired = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        var hasFired: Bool { state.withLock { $0.fired } }

        func wait() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let fired = state.withLock { state in
                    if !state.fired { state.waiters.append(continuation) }
                    return state.fired
                }
                if fired { continuation.resume() }
            }
        }
    }

    static func key(_ name: String) throws -> ProcessedImageKey {
        ProcessedImageKey(url: try #require(URL(string: "https://example.com/\(name)")), encoderKey: "png")
    }

    @Test("WorkLimiter: a queued job whose task is cancelled gives its place back and never takes a slot")
    func limiterDropsCancelledWaiters() async {
        let limiter = WorkLimiter(maximumRunning: 1, maximumQueued: 2)
        #expect(limiter.admit() == .granted)
        #expect(limiter.admit() == .queued)
        let abandoned = Task { await limiter.waitForTurn() }
        #expect(limiter.admit() == .queued)
        let next = Task { await limiter.waitForTurn() }
        #expect(await pollAsync(seconds: 120) { limiter.waiting == 2 })
        #expect(limiter.admit() == .refused)

        abandoned.cancel()
        #expect(await abandoned.value == false)
        #expect(limiter.waiting == 1)
        #expect(limiter.snapshot == WorkLimiter.Snapshot(running: 1, queued: 1))
        #expect(limiter.admit() == .queued, "the abandoned place is free again")
        let late = Task { await limiter.waitForTurn() }
        #expect(await pollAsync(seconds: 120) { limiter.waiting == 2 })

        limiter.release()
        #expect(await next.value == true, "the slot went to the next job still waiting")
        limiter.release()
        #expect(await late.value == true)
        limiter.release()
        #expect(limiter.snapshot == WorkLimiter.Snapshot(running: 0, queued: 0))

        // Cancelled before it even waits: it leaves at once.
        #expect(limiter.admit() == .granted)
        #expect(limiter.admit() == .queued)
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await limiter.waitForTurn()
        }
        #expect(await early.value == false)
        #expect(limiter.snapshot == WorkLimiter.Snapshot(running: 1, queued: 0))
        limiter.release()
    }

    @Test("ResultCoalescer: work goes on while a waiter is left and is cancelled when the last one leaves")
    func coalescerCancelsAbandonedWork() async throws {
        let coalescer = ResultCoalescer()
        let key = try Self.key("a.jpg")
        let (started, released, ended) = (Event(), Event(), Event())
        let sawCancellation = Lock(false)
        let work: @Sendable () async -> ResultCoalescer.Outcome = {
            started.fire()
            await withTaskCancellationHandler {
                await released.wait()
            } onCancel: {
                released.fire()
            }
            sawCancellation.withLock { $0 = Task.isCancelled }
            ended.fire()
            return .success(.init(data: Data([1])))
        }
        let first = Task { await coalescer.result(for: key, work: work) }
        await started.wait()
        let second = Task { await coalescer.result(for: key, work: work) }
        #expect(await pollAsync(seconds: 120) { coalescer.waiterCount == 2 })

        first.cancel()
        #expect(await first.value.outcome.failure?.status == 504)
        #expect(coalescer.waiterCount == 1)
        #expect(!ended.hasFired, "one waiter is left: the work goes on")

        second.cancel()
        #expect(await second.value.outcome.failure?.status == 504)
        await ended.wait()
        #expect(sawCancellation.withLock { $0 }, "nobody waits: the work's task was cancelled")
        #expect(coalescer.waiterCount == 0)
    }

    @Test("ResultCoalescer: a key asked again after its work was abandoned gets new work, untouched by the old")
    func coalescerStartsAfreshAfterAbandonment() async throws {
        let coalescer = ResultCoalescer()
        let key = try Self.key("b.jpg")
        let (oldStarted, oldRelease, newRelease) = (Event(), Event(), Event())
        // The old work ignores its cancellation and ends only when the test says.
        let abandoned = Task {
            await coalescer.result(for: key) {
                oldStarted.fire()
                await oldRelease.wait()
                return .success(.init(data: Data([1])))
            }
        }
        await oldStarted.wait()
        abandoned.cancel()
        #expect(await abandoned.value.outcome.failure?.status == 504)

        let fresh = Task {
            await coalescer.result(for: key) {
                await newRelease.wait()
                return .success(.init(data: Data([2])))
            }
        }
        #expect(await pollAsync(seconds: 120) { coalescer.waiterCount == 1 })
        oldRelease.fire()  // the old work ends now; the new entry must stay
        newRelease.fire()
        let shared = await fresh.value
        #expect(shared.outcome.success?.data == Data([2]))
        #expect(!shared.joined)
    }

    @Test("a job whose request left: queued, it never fetches; running, its download is cut and its slot freed")
    func abandonedJobsThroughTheProxy() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let proxy = ServeOperationsTests.proxy(concurrency: 1, queue: 1)
        let running = ServeOperationsTests.path("w:30/f:png", origin, file: "coffee-progressive.jpg", gate: "cut")
        let queued = ServeOperationsTests.path("w:31/f:png", origin, file: "horse-rgba.png", gate: "never")

        let first = Task { await proxy.respond(to: ProxyRequest(path: running)) }
        #expect(await origin.waitUntil(timeout: .seconds(180)) { $0.waitingCount(atGate: "cut") == 1 })
        let second = Task { await proxy.respond(to: ProxyRequest(path: queued)) }
        #expect(await pollAsync(seconds: 180) { proxy.load.jobsQueued == 1 })

        second.cancel()
        #expect(await second.value.status == 504)
        #expect(await pollAsync(seconds: 180) { proxy.load.jobsQueued == 0 }, "the queue place is given back")

        // The origin still holds the running job's answer: only the cancel can end its download.
        first.cancel()
        #expect(await first.value.status == 504)
        #expect(await origin.waitUntil(timeout: .seconds(180)) { $0.inFlight == 0 }, "the transfer was cut")
        #expect(await pollAsync(seconds: 180) { proxy.load.jobsInFlight == 0 }, "the slot was freed")
        #expect(origin.count(for: "/files/horse-rgba.png") == 0, "the queued job never fetched")

        // The slot serves the next request.
        let next = await proxy.respond(
            to: ProxyRequest(path: ServeOperationsTests.path("w:32/f:png", origin, file: "horse-rgba.png")))
        #expect(next.status == 200)
        #expect(origin.count(for: "/files/horse-rgba.png") == 1)
    }

    @Test(
        "a cancelled job's encode stops part-way in every format the proxy writes",
        arguments: [ProxyOutputFormat.jpeg, .png, .webp, .avif])
    func everyFormatsEncodeStops(format: ProxyOutputFormat) throws {
        guard format != .avif || AVIFEncoder.isAvailable else { return }
        let image = try ImageDecoderRegistry.shared.decode(Fixtures.corpusFile("coffee-rgb.png"))
        let cancellation = JobCancellation()
        let calls = Lock(0)
        // AVIF asks twice before its AV1 step; the third call is the first one during it, where there is one
        // (in a ThreadSanitizer build the AV1 step runs in process and is not asked during it).
        let cancelAt = format == .avif && AVIFEncoder.stopsInChildProcess ? 3 : 2
        let cancelling = EncodeStopCheck {
            if calls.withLock({
                $0 += 1
                return $0
            }) == cancelAt {
                cancellation.cancel()
            }
            return cancellation.isCancelled
        }
        let choice = FormatChoice(format: format, accept: nil)
        let encoder = JobEncoder(base: choice.encoder(quality: 80, stopCheck: cancelling), cancellation: cancellation)
        #expect {
            _ = try encoder.encode(image)
        } throws: { ($0 as? ImageCodecError)?.code == .stopped }
        #expect(calls.withLock { $0 } == cancelAt, "\(format) stopped at the first 'stop'")
    }

    @Test("a cancelled job's encode stops part-way, never starts once cancelled, and the job waits for it")
    func cancelledEncodeStops() async throws {
        let image = try ImageDecoderRegistry.shared.decode(Fixtures.corpusFile("coffee-rgb.png"))
        let choice = FormatChoice(format: .webp, accept: nil)

        // Cancelled while libwebp runs: the check cancels the job on its second call, as a deadline would.
        let cancellation = JobCancellation()
        let calls = Lock(0)
        let cancelling = EncodeStopCheck {
            if calls.withLock({
                $0 += 1
                return $0
            }) == 2 {
                cancellation.cancel()
            }
            return cancellation.isCancelled
        }
        let encoder = JobEncoder(base: choice.encoder(quality: 80, stopCheck: cancelling), cancellation: cancellation)
        #expect {
            _ = try encoder.encode(image)
        } throws: { ($0 as? ImageCodecError)?.code == .stopped }
        #expect(calls.withLock { $0 } == 2, "libwebp stopped at the first 'stop'")
        await cancellation.untilStepsEnded()

        // Once cancelled, no encode starts.
        #expect {
            _ = try encoder.encode(image)
        } throws: { ($0 as? ImageCodecError)?.code == .stopped }
        #expect(calls.withLock { $0 } == 2, "the encoder was not even entered")

        // The job's wait ends only once a running step has ended.
        let job = JobCancellation()
        #expect(job.beginStep())
        job.cancel()
        #expect(!job.beginStep(), "no step starts after the cancel")
        let order = Lock<[String]>([])
        let waiting = Task {
            await job.untilStepsEnded()
            order.withLock { $0.append("wait ended") }
        }
        for _ in 0..<100 { await Task.yield() }  // a wait that did not wait would have ended by now
        order.withLock { $0.append("step ended") }
        job.endStep()
        await waiting.value
        #expect(order.withLock { $0 } == ["step ended", "wait ended"])
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }

    fileprivate var success: Success? {
        if case .success(let value) = self { return value }
        return nil
    }
}
