import Foundation
import LocalImageServer
import TestSupport
import Testing

@testable import WebImage

/// Merging and cancelling, each over HTTP/1.1 and over HTTP/2 with TLS (`Wire`).
@Suite(.timeLimit(.minutes(3))) struct DownloaderMergingTests {
    @Test(arguments: Wire.allCases)
    func twoCallersOfOneURLShareOneTransfer(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        // The response waits at a gate until both callers are attached: they cannot miss each other.
        let url = server.url("/files/horse-rgba.png?gate=joined")
        let first = downloader.downloadImage(with: url, completed: recorder.completion(1))
        let second = downloader.downloadImage(with: url, completed: recorder.completion(2))
        #expect(first !== second)
        #expect(downloader.callerCount(for: url) == 2)
        server.openGate("joined")
        #expect(recorder.waitForTerminal(2))
        #expect(server.count(for: "/files/horse-rgba.png") == 1)
        #expect(recorder.terminals(tag: 1).count == 1 && recorder.terminals(tag: 2).count == 1)
        #expect(recorder.terminals.allSatisfy { $0.image?.width == 400 && $0.error == nil })
    }

    @Test(arguments: Wire.allCases)
    func cancellingOneCallerLeavesTheOtherRunning(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        let url = server.url("/files/horse-rgba.png?gate=cancelled")
        let first = downloader.downloadImage(with: url, completed: recorder.completion(1))
        downloader.downloadImage(with: url, completed: recorder.completion(2))
        first?.cancel()
        first?.cancel()  // a second cancel does nothing
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.map(\.tag) == [1])
        server.openGate("cancelled")
        #expect(recorder.waitForTerminal(1))
        downloader.drainCallbacks()
        #expect(recorder.terminals(tag: 1).map { $0.error?.code } == [.cancelled])
        #expect(recorder.terminals(tag: 2).count == 1)
        #expect(recorder.terminals(tag: 2).first?.image != nil)
        #expect(server.count(for: "/files/horse-rgba.png") == 1)
    }

    @Test(arguments: Wire.allCases)
    func cancelThenRequestAgainGivesCancelledThenSuccess(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        let url = server.url("/files/horse-rgba.png?gate=again")
        downloader.downloadImage(with: url, completed: recorder.completion(1))?.cancel()
        downloader.downloadImage(with: url, completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(1))
        server.openGate("again")
        #expect(recorder.waitForTerminal(1))
        downloader.drainCallbacks()
        #expect(recorder.terminals(tag: 1).map { $0.error?.code } == [.cancelled])
        #expect(recorder.terminals(tag: 2).count == 1)
        #expect(recorder.terminals(tag: 2).first?.image != nil)
    }

    @Test(arguments: Wire.allCases)
    func staggeredRequestsLoseNoCallback(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        let url = server.url("/drip/horse-lossless.webp?chunk=512&interval=20")
        // Each caller is added after the next event of the downloads so far (a body chunk or an outcome):
        // callers join before the first byte, at every chunk, while the outcome is delivered and after it
        // (then a new transfer starts), paced by the transfers themselves rather than by sleeps.
        let events = EventCounter()
        for index in 0..<201 {
            let seen = events.value
            let completion = recorder.completion(index)
            downloader.downloadImage(
                with: url, progress: { _, _, _ in events.record() },
                completed: { image, data, error, finished in
                    completion(image, data, error, finished)
                    events.record()
                })
            #expect(events.wait(forMoreThan: seen), "no event after caller \(index) joined")
        }
        #expect(recorder.waitForTerminal(201, seconds: 60))
        downloader.drainCallbacks()
        for index in 0..<201 {
            let calls = recorder.terminals(tag: index)
            #expect(calls.count == 1, "caller \(index) got \(calls.count) terminal callbacks")
            #expect(calls.first?.image?.width == 400)
        }
    }

    @Test(arguments: Wire.allCases)
    func everyCallerOfAFailingURLGetsExactlyOneError(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        for index in 0..<11 {
            downloader.downloadImage(with: server.url("/empty?gate=failing"), completed: recorder.completion(index))
        }
        #expect(downloader.callerCount(for: server.url("/empty?gate=failing")) == 11)
        server.openGate("failing")
        #expect(recorder.waitForTerminal(11))
        downloader.drainCallbacks()
        #expect(recorder.all.count == 11)
        for index in 0..<11 {
            #expect(recorder.terminals(tag: index).map { $0.error?.code } == [.badImageData])
        }
    }

    @Test(arguments: Wire.allCases)
    func eachCallerGetsItsOwnThumbnailFromOneTransfer(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        let url = server.url("/files/astronaut-baseline.jpg?gate=sizes")
        let sizes = (1...10).map { PixelSize(width: 20 * $0, height: 20 * $0) }
        for (index, size) in sizes.enumerated() {
            downloader.downloadImage(
                with: url, context: ImageDownloadContext(thumbnailPixelSize: size),
                completed: recorder.completion(index))
        }
        server.openGate("sizes")
        #expect(recorder.waitForTerminal(10))
        #expect(server.count(for: "/files/astronaut-baseline.jpg") == 1)
        for (index, size) in sizes.enumerated() {
            let image = try #require(recorder.terminals(tag: index).first?.image)
            #expect(
                image.width == size.width && image.height == size.height,
                "caller \(index): \(image.width)×\(image.height)")
        }
    }

    @Test(arguments: Wire.allCases)
    func cancelAllDownloadsCancelsQueuedAndRunningCallers(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader { $0.maxConcurrentDownloads = 2 }
        let recorder = CallbackRecorder()
        for index in 0..<8 {
            downloader.downloadImage(with: server.url("/hang?\(index)"), completed: recorder.completion(index))
        }
        #expect(
            server.wait { $0.count(for: "/hang") == 2 },
            "\(server.requests.map(\.request.path)) \(downloader.currentDownloadCount)")
        downloader.cancelAllDownloads()
        #expect(recorder.waitForTerminal(8))
        #expect(recorder.terminals.allSatisfy { $0.error?.code == .cancelled })
        #expect(poll { downloader.currentDownloadCount == 0 })
        #expect(poll { downloader.tableCount == 0 })
        downloader.drainCallbacks()
        #expect(recorder.all.count == 8)
    }

    @Test(arguments: Wire.allCases)
    func aLateCancelAfterSuccessChangesNothing(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        let token = downloader.downloadImage(with: server.url("/files/pixel-1x1.png"), completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        token?.cancel()
        downloader.drainCallbacks()
        #expect(recorder.all.count == 1)
        #expect(recorder.all.first?.error == nil)
    }
}
