import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

@Suite(.timeLimit(.minutes(5))) struct ImageTaskTests {
    let server: LocalImageServer
    init() throws { server = try Fixtures.server() }

    /// Every event of `task`, read to the end of its stream.
    private func allEvents(_ task: ImageTask) async -> [ImageTask.Event] {
        var events: [ImageTask.Event] = []
        for await event in task.events { events.append(event) }
        return events
    }

    /// The outcomes of the `completed` events among `events`.
    private func completions(_ events: [ImageTask.Event]) -> [Result<ImageDownloadResult, ImageDownloaderError>] {
        events.compactMap { event in
            if case .completed(let outcome) = event { return outcome }
            return nil
        }
    }

    /// The numbers in `?n=` of the requests the server saw for `path`, in arrival order.
    private func arrivals(_ path: String) -> [Int] {
        server.requests(for: path).compactMap { $0.request.queryValue("n").flatMap(Int.init) }
    }

    /// A downloader with one download slot, FIFO.
    private func oneSlot() -> ImageDownloader { patient(slots: 1) }

    /// A downloader whose transfers may sit at a server gate for minutes: in the full parallel suite the
    /// test that opens the gate can be scheduled late (the cooperative pool is as wide as the cores), and
    /// the default 15 s idle timeout would end the held transfer first.
    static func patient(slots: Int = 6) -> ImageDownloader {
        var config = ImageDownloaderConfig()
        config.maxConcurrentDownloads = slots
        config.downloadTimeout = 300
        config.totalTimeout = 300
        return ImageDownloader(config: config)
    }

    private func patient(slots: Int) -> ImageDownloader { Self.patient(slots: slots) }

    @Test func eventsAreProgressAndPartialsThenOneCompletion() async throws {
        let downloader = ImageDownloader()  // held: a downloader released cancels its downloads
        let task = downloader.imageTask(
            for: server.url("/drip/coffee-progressive.jpg?chunk=4096&interval=20"), options: .progressiveLoad)
        let events = await allEvents(task)
        let progress = events.filter { if case .progress = $0 { true } else { false } }.count
        let partials = events.filter { if case .partialImage = $0 { true } else { false } }.count
        #expect(progress >= 3)
        #expect(partials >= 1)
        let outcomes = completions(events)
        #expect(outcomes.count == 1)
        guard case .completed(.success(let result)) = events.last else {
            Issue.record("the last event is not a successful completion: \(String(describing: events.last))")
            return
        }
        #expect(result.image?.width == 600)
        // `value` gives the same outcome after the fact.
        #expect(try await task.value.data == result.data)
    }

    @Test func aFailureIsTheOneTerminalEventAndTheTypedErrorOfValue() async {
        let downloader = ImageDownloader()
        for (url, code) in [
            (server.url("/status/500"), ImageDownloaderError.Code.invalidDownloadStatusCode),
            // Refused before anything is queued: the completion runs before `imageTask` returns.
            (URL(string: "gopher://127.0.0.1/")!, .invalidURL),
        ] {
            let task = downloader.imageTask(for: url)
            let outcomes = completions(await allEvents(task))
            #expect(outcomes.count == 1)
            if case .failure(let error) = outcomes.first {
                #expect(error.code == code)
            } else {
                Issue.record("\(url) did not fail")
            }
            do {
                _ = try await task.value
                Issue.record("\(url) gave a value")
            } catch {
                #expect(error.code == code)  // `error` is an ImageDownloaderError: `value` throws that type only
            }
        }
    }

    @Test func cancelCompletesThatTaskOnceWithCancelledAndLeavesTheOthers() async throws {
        let downloader = ImageDownloader()
        let url = server.url("/files/horse-rgba.png")
        // Suspended until both tasks are attached, so the cancel certainly lands before the transfer.
        downloader.isSuspended = true
        let doomed = downloader.imageTask(for: url)
        let survivor = downloader.imageTask(for: url)
        #expect(downloader.callerCount(for: url) == 2)
        doomed.cancel()
        doomed.cancel()  // a second cancel adds nothing
        #expect(downloader.callerCount(for: url) == 1)
        downloader.isSuspended = false
        let outcomes = completions(await allEvents(doomed))
        #expect(outcomes.count == 1)
        if case .failure(let error) = outcomes.first {
            #expect(error.code == .cancelled)
        } else {
            Issue.record("the cancelled task did not fail")
        }
        await #expect(throws: ImageDownloaderError.self) { try await doomed.value }
        #expect(try await survivor.value.image?.width == 400)
        doomed.cancel()  // after completion: nothing
        #expect(completions(await allEvents(survivor)).count == 1)
        #expect(server.count(for: "/files/horse-rgba.png") == 1)
    }

    @Test func cancellingTheTaskThatAwaitsValueCancelsTheImageTask() async throws {
        let downloader = patient(slots: 6)
        let url = server.url("/files/horse-rgba.png?gate=never")
        let task = downloader.imageTask(for: url)
        let waiting = Task { try await task.value }
        #expect(await server.waitUntil(timeout: .seconds(60)) { $0.waitingCount(atGate: "never") == 1 })
        waiting.cancel()
        let outcomes = completions(await allEvents(task))
        if case .failure(let error) = outcomes.first {
            #expect(error.code == .cancelled)
        } else {
            Issue.record("the task was not cancelled")
        }
        server.openGate("never")
    }

    /// One slot, held by a download at a gate; two more wait, in order. Raising the later one's priority
    /// makes it start first when the slot frees.
    @Test func raisingAWaitingTasksPriorityStartsItBeforeAnEarlierOne() async throws {
        let downloader = oneSlot()
        let path = "/files/pixel-1x1.png"
        let first = downloader.imageTask(for: server.url("\(path)?n=1&gate=slot"))
        #expect(await server.waitUntil(timeout: .seconds(60)) { $0.waitingCount(atGate: "slot") == 1 })
        let earlier = downloader.imageTask(for: server.url("\(path)?n=2"))
        let later = downloader.imageTask(for: server.url("\(path)?n=3"))
        #expect(later.priority == .normal)
        later.priority = .high
        #expect(later.priority == .high)
        server.openGate("slot")
        for task in [first, earlier, later] { _ = try await task.value }
        #expect(arrivals(path) == [1, 3, 2])
    }

    /// Callers sharing one operation: it waits with the highest priority of its waiting callers, and
    /// falls back when the caller that asked for it leaves.
    @Test func aSharedDownloadTakesTheHighestPriorityOfItsWaitingTasks() async throws {
        let path = "/files/pixel-1x1.png"
        for cancelsTheRaisedOne in [false, true] {
            let downloader = oneSlot()
            let gate = "shared-\(cancelsTheRaisedOne)"
            let first = downloader.imageTask(for: server.url("\(path)?n=1&gate=\(gate)&c=\(cancelsTheRaisedOne)"))
            #expect(await server.waitUntil(timeout: .seconds(60)) { $0.waitingCount(atGate: gate) == 1 })
            let other = downloader.imageTask(for: server.url("\(path)?n=2&c=\(cancelsTheRaisedOne)"))
            let shared = server.url("\(path)?n=3&c=\(cancelsTheRaisedOne)")
            let calm = downloader.imageTask(for: shared, priority: .low)
            let eager = downloader.imageTask(for: shared)
            #expect(downloader.callerCount(for: shared) == 2)
            eager.priority = .veryHigh
            if cancelsTheRaisedOne { eager.cancel() }
            server.openGate(gate)
            for task in [first, other, calm] { _ = try await task.value }
            let seen = server.requests(for: path).filter { $0.request.queryValue("c") == "\(cancelsTheRaisedOne)" }
                .compactMap { $0.request.queryValue("n").flatMap(Int.init) }
            // Cancelled, the eager task leaves only the calm one's low priority: n=3 goes last.
            #expect(seen == (cancelsTheRaisedOne ? [1, 2, 3] : [1, 3, 2]))
        }
    }
}
