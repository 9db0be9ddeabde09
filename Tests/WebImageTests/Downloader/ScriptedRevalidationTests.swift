import Foundation
import TestSupport
import Testing

@testable import WebImage

/// The revalidation of a stale HTTP cache entry with callers that share it, against `ScriptedTransport`:
/// the conditional request is held until the test answers it, cancels it or fails it, so each of the
/// lifecycle's revalidation paths is reached through the downloader without relying on timing.
@Suite(.timeLimit(.minutes(5))) struct ScriptedRevalidationTests {
    let pixel: Data
    let cache = HTTPCache(directory: nil)
    let transport = ScriptedTransport()
    let downloader: ImageDownloader

    init() throws {
        pixel = try Fixtures.corpusFile("pixel-1x1.png")
        var config = ImageDownloaderConfig()
        config.urlCache = cache
        downloader = ImageDownloader(config: config, transport: transport)
    }

    /// A URL of its own per test: the suites run in parallel and notifications are told apart by URL.
    static func url(_ name: String) -> URL {
        URL(string: "http://scripted.test/revalidation/\(name).png")!
    }

    /// Downloads `url` once with an answer that is stored and stale at once (ETag "v1", max-age=0), and
    /// returns the held conditional request of a second download's two callers.
    private func heldRevalidation(
        _ url: URL, recorder: CallbackRecorder, options: ImageDownloaderOptions = .useURLCache
    ) throws -> (ScriptedTransport.Transfer, [ImageDownloadToken?]) {
        let first = CallbackRecorder()
        downloader.downloadImage(with: url, options: .useURLCache, completed: first.completion())
        let initial = try #require(transport.waitForStarted(1)?.last)
        var reply = ScriptedTransport.Reply.image(pixel)
        reply.headers["ETag"] = "\"v1\""
        reply.headers["Cache-Control"] = "max-age=0"
        transport.respond(initial, with: reply)
        #expect(first.waitForTerminal(1))
        #expect(first.terminals.first?.image != nil)

        let tokens = [1, 2].map { tag in
            downloader.downloadImage(with: url, options: options, completed: recorder.completion(tag))
        }
        let conditional = try #require(transport.waitForStarted(2)?.last)
        #expect(conditional.request.headers["If-None-Match"] == "\"v1\"")
        return (conditional, tokens)
    }

    @Test func aConfirming304ServesTheStoredBodyToEveryCallerAndRefreshesTheEntry() throws {
        let url = Self.url("confirmed")
        let recorder = CallbackRecorder()
        let (conditional, _) = try heldRevalidation(url, recorder: recorder)
        transport.respond(
            conditional,
            with: ScriptedTransport.Reply(status: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=600"]))
        #expect(recorder.waitForTerminal(2))
        downloader.drainCallbacks()
        #expect(recorder.terminals.map(\.tag).sorted() == [1, 2], "each caller hears once")
        #expect(recorder.terminals.allSatisfy { $0.image?.width == 1 && $0.data == pixel && $0.error == nil })

        // The refreshed entry is fresh now: the next download makes no transfer.
        let third = CallbackRecorder()
        downloader.downloadImage(with: url, options: .useURLCache, completed: third.completion())
        #expect(third.waitForTerminal(1))
        #expect(third.terminals.first?.data == pixel)
        #expect(transport.madeCount == 2)
    }

    @Test func a200ToTheValidatorsReplacesTheEntry() throws {
        let url = Self.url("replaced")
        let recorder = CallbackRecorder()
        let (conditional, _) = try heldRevalidation(url, recorder: recorder)
        let replacement = try Fixtures.corpusFile("horse-rgba.png")
        var reply = ScriptedTransport.Reply.image(replacement)
        reply.headers["ETag"] = "\"v2\""
        reply.headers["Cache-Control"] = "max-age=600"
        transport.respond(conditional, with: reply)
        #expect(recorder.waitForTerminal(2))
        downloader.drainCallbacks()
        #expect(recorder.terminals.count == 2)
        #expect(recorder.terminals.allSatisfy { $0.data == replacement && $0.error == nil })

        let third = CallbackRecorder()
        downloader.downloadImage(with: url, options: .useURLCache, completed: third.completion())
        #expect(third.waitForTerminal(1))
        #expect(third.terminals.first?.data == replacement, "the new answer replaced the stored one")
        #expect(transport.madeCount == 2)
    }

    @Test func aCancelDuringRevalidationGivesEachCallerOneCancelledAndKeepsTheEntry() throws {
        let url = Self.url("cancelled")
        let recorder = CallbackRecorder()
        let (conditional, tokens) = try heldRevalidation(url, recorder: recorder)
        for token in tokens { token?.cancel() }
        #expect(recorder.waitForTerminal(2))
        #expect(transport.wait { conditional.isCompleted })
        #expect(conditional.wasCancelled)
        // An answer after the cancel is dropped: nobody hears twice.
        transport.respond(conditional, with: ScriptedTransport.Reply(status: 304, headers: ["ETag": "\"v1\""]))
        transport.drain()
        #expect(poll { downloader.currentDownloadCount == 0 })
        downloader.drainCallbacks()
        #expect(recorder.terminals.map(\.tag).sorted() == [1, 2])
        #expect(recorder.terminals.allSatisfy { $0.error?.code == .cancelled })

        // The entry is still there, still stale: the next download revalidates it again.
        let third = CallbackRecorder()
        downloader.downloadImage(with: url, options: .useURLCache, completed: third.completion())
        let again = try #require(transport.waitForStarted(3)?.last)
        #expect(again.request.headers["If-None-Match"] == "\"v1\"")
        transport.respond(again, with: ScriptedTransport.Reply(status: 304, headers: ["ETag": "\"v1\""]))
        #expect(third.waitForTerminal(1))
        #expect(third.terminals.first?.data == pixel)
    }

    @Test func aFailureDuringRevalidationGivesEachCallerTheErrorOnceAndKeepsTheEntry() throws {
        let url = Self.url("failed")
        let recorder = CallbackRecorder()
        let (conditional, _) = try heldRevalidation(url, recorder: recorder)
        transport.fail(conditional, with: ImageDownloaderError(.connectionLost, "the connection was lost", url: url))
        #expect(recorder.waitForTerminal(2))
        #expect(poll { downloader.currentDownloadCount == 0 })
        downloader.drainCallbacks()
        #expect(recorder.terminals.map(\.tag).sorted() == [1, 2], "each caller hears once")
        #expect(recorder.terminals.allSatisfy { $0.error?.code == .connectionLost })

        let third = CallbackRecorder()
        downloader.downloadImage(with: url, options: .useURLCache, completed: third.completion())
        let again = try #require(transport.waitForStarted(3)?.last)
        #expect(again.request.headers["If-None-Match"] == "\"v1\"", "a failure leaves the stored entry alone")
        transport.respond(again, with: ScriptedTransport.Reply(status: 304, headers: ["ETag": "\"v1\""]))
        #expect(third.waitForTerminal(1))
        #expect(third.terminals.first?.data == pixel)
    }

    @Test func a304ForAnotherRepresentationFailsEachCallerOnceAndRemovesTheEntry() throws {
        let url = Self.url("other-representation")
        let recorder = CallbackRecorder()
        let (conditional, _) = try heldRevalidation(url, recorder: recorder)
        transport.respond(conditional, with: ScriptedTransport.Reply(status: 304, headers: ["ETag": "\"v2\""]))
        #expect(recorder.waitForTerminal(2))
        downloader.drainCallbacks()
        #expect(recorder.terminals.map(\.tag).sorted() == [1, 2], "each caller hears once")
        #expect(recorder.terminals.allSatisfy { $0.error?.code == .cacheNotModified })
        // The removal runs off the transport thread, after the callbacks.
        let request = ImageDownloadRequest(url: url)
        #expect(poll(seconds: 30) { cache.lookup(request, now: Date()) == .miss }, "the outdated entry was kept")
    }
}
