import Foundation
import TestSupport
import Testing

@testable import WebImage

/// Coalescing, cancellation and ordering against `ScriptedTransport`: each transfer stays open until the
/// test answers it, so nothing depends on a server's delay or on timing.
@Suite(.timeLimit(.minutes(5))) struct ScriptedDownloaderTests {
    let pixel: Data

    init() throws {
        pixel = try Fixtures.corpusFile("pixel-1x1.png")
    }

    static let url = URL(string: "http://scripted.test/a.png")!

    @Test func callersOfOneURLShareOneHeldTransfer() throws {
        let transport = ScriptedTransport()
        let downloader = ImageDownloader(transport: transport)
        let recorder = CallbackRecorder()
        downloader.downloadImage(with: Self.url, completed: recorder.completion(1))
        let transfer = try #require(transport.waitForStarted(1)?.first)
        downloader.downloadImage(with: Self.url, completed: recorder.completion(2))
        #expect(downloader.callerCount(for: Self.url) == 2)
        transport.respond(transfer, with: .image(pixel))
        #expect(recorder.waitForTerminal(2))
        #expect(transport.madeCount == 1)
        #expect(recorder.terminals.map(\.tag).sorted() == [1, 2])
        #expect(recorder.terminals.allSatisfy { $0.image?.width == 1 && $0.error == nil })
    }

    @Test func cancellingOneOfTwoCallersLeavesTheTransferRunning() throws {
        let transport = ScriptedTransport()
        let downloader = ImageDownloader(transport: transport)
        let recorder = CallbackRecorder()
        let first = downloader.downloadImage(with: Self.url, completed: recorder.completion(1))
        let transfer = try #require(transport.waitForStarted(1)?.first)
        downloader.downloadImage(with: Self.url, completed: recorder.completion(2))
        first?.cancel()
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 1).first?.error?.code == .cancelled)
        #expect(!transfer.wasCancelled)
        transport.respond(transfer, with: .image(pixel))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 2).first?.image != nil)
        #expect(recorder.terminals(tag: 1).count == 1, "the cancelled caller heard twice")
    }

    @Test func cancellingTheLastCallerStopsTheTransferAndPostsStopButNoFinish() throws {
        let transport = ScriptedTransport()
        let downloader = ImageDownloader(transport: transport)
        // A URL of its own: notifications are told apart by URL, and the other tests run in parallel.
        let url = URL(string: "http://scripted.test/cancelled-last.png")!
        let notifications = NotificationLog(url: url)
        defer { notifications.stop() }
        let recorder = CallbackRecorder()
        let token = downloader.downloadImage(with: url, completed: recorder.completion())
        let transfer = try #require(transport.waitForStarted(1)?.first)
        token?.cancel()
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.first?.error?.code == .cancelled)
        #expect(transport.wait { transfer.isCompleted })
        #expect(transfer.wasCancelled)
        // An answer arriving after the cancel is dropped: nobody hears twice.
        transport.respond(transfer, with: .image(pixel))
        transport.drain()
        #expect(poll { downloader.currentDownloadCount == 0 })
        downloader.drainCallbacks()
        #expect(recorder.terminals.count == 1)
        #expect(notifications.names.contains(.imageDownloadStop))
        #expect(!notifications.names.contains(.imageDownloadFinish))
    }

    @Test func aCallerAfterTheOutcomeGetsANewTransfer() throws {
        let transport = ScriptedTransport()
        let downloader = ImageDownloader(transport: transport)
        let recorder = CallbackRecorder()
        downloader.downloadImage(with: Self.url, completed: recorder.completion(1))
        let first = try #require(transport.waitForStarted(1)?.first)
        transport.respond(first, with: .image(pixel))
        #expect(recorder.waitForTerminal(1))
        downloader.downloadImage(with: Self.url, completed: recorder.completion(2))
        let transfers = try #require(transport.waitForStarted(2))
        #expect(transfers[1] !== first)
        transport.respond(transfers[1], with: .image(pixel))
        #expect(recorder.waitForTerminal(1))
    }

    @Test func aFailureReachesEveryCallerOnce() throws {
        let transport = ScriptedTransport()
        let downloader = ImageDownloader(transport: transport)
        let recorder = CallbackRecorder()
        for tag in 1...3 { downloader.downloadImage(with: Self.url, completed: recorder.completion(tag)) }
        let transfer = try #require(transport.waitForStarted(1)?.first)
        transport.fail(transfer, with: ImageDownloaderError(.timedOut, "scripted"))
        #expect(recorder.waitForTerminal(3))
        #expect(recorder.terminals.map(\.tag).sorted() == [1, 2, 3])
        #expect(recorder.terminals.allSatisfy { $0.error?.code == .timedOut && $0.error?.url == Self.url })
    }

    @Test(arguments: [ImageDownloaderExecutionOrder.fifo, .lifo])
    func waitingDownloadsStartInTheConfiguredOrder(_ order: ImageDownloaderExecutionOrder) throws {
        let transport = ScriptedTransport()
        var config = ImageDownloaderConfig.default
        config.maxConcurrentDownloads = 1
        config.executionOrder = order
        let downloader = ImageDownloader(config: config, transport: transport)
        let recorder = CallbackRecorder()
        downloader.isSuspended = true
        for n in 1...4 {
            downloader.downloadImage(
                with: URL(string: "http://scripted.test/\(n).png"), completed: recorder.completion(n))
        }
        downloader.isSuspended = false
        for started in 1...4 {
            let transfers = try #require(transport.waitForStarted(started))
            #expect(transfers.count == started, "more than one download ran at once")
            transport.respond(transfers[started - 1], with: .image(pixel))
        }
        #expect(recorder.waitForTerminal(4))
        let names = transport.started.map(\.url.lastPathComponent)
        #expect(
            names == (order == .fifo ? ["1.png", "2.png", "3.png", "4.png"] : ["4.png", "3.png", "2.png", "1.png"]))
    }
}

extension ScriptedDownloaderTests {
    /// Claims bodies starting with "TEST" and answers with a 2×3 image.
    struct TestFormatDecoder: ImageDecoding {
        func canDecode(_ data: Data) -> Bool { data.starts(with: Array("TEST".utf8)) }
        func decode(_ data: Data, options: ImageDecodingOptions) throws -> Image {
            Image(
                format: .unknown, width: 2, height: 3,
                frames: [ImageFrame(width: 2, height: 3, bytesPerRow: 8, pixels: [UInt8](repeating: 9, count: 24))])
        }
    }

    @Test func theConfigsDecoderRegistryDecodesTheDownloads() throws {
        var config = ImageDownloaderConfig.default
        config.decoderRegistry = ImageDecoderRegistry(decoders: [TestFormatDecoder()])
        let testBody = Data("TEST body".utf8)
        let pixel = self.pixel
        let transport = ScriptedTransport { request in
            request.url.lastPathComponent == "custom" ? .image(testBody, contentType: "image/x-test") : .image(pixel)
        }
        let downloader = ImageDownloader(config: config, transport: transport)
        let recorder = CallbackRecorder()
        downloader.downloadImage(with: URL(string: "http://scripted.test/custom"), completed: recorder.completion(1))
        downloader.downloadImage(with: URL(string: "http://scripted.test/a.png"), completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(2))
        let custom = try #require(recorder.terminals(tag: 1).first)
        #expect(custom.image?.width == 2 && custom.image?.height == 3)
        // The registry replaces the shared one: without PNG in it, the PNG is data nobody recognises.
        #expect(recorder.terminals(tag: 2).first?.error?.code == .badImageData)
        #expect(ImageDecoderRegistry.shared.decoder(for: testBody) == nil)
    }
}

/// The notifications posted for one URL, recorded as they arrive.
final class NotificationLog {
    private let seen = Locked<[Notification.Name]>([])
    private var observers: [any NSObjectProtocol] = []

    init(url: URL) {
        let names: [Notification.Name] = [
            .imageDownloadStart, .imageDownloadReceiveResponse, .imageDownloadStop, .imageDownloadFinish,
        ]
        let seen = self.seen
        observers = names.map { name in
            NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { note in
                guard (note.object as? ImageDownloaderOperation)?.request.url == url else { return }
                seen.update { $0.append(name) }
            }
        }
    }

    var names: [Notification.Name] { seen.value }

    func stop() {
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
    }
}
