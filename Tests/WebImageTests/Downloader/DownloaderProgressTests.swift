import Foundation
import LocalImageServer
import TestSupport
import Testing

@testable import WebImage

/// Progress, progressive decoding and notifications, each over HTTP/1.1 and over HTTP/2 with TLS (`Wire`).
@Suite(.timeLimit(.minutes(2))) struct DownloaderProgressTests {
    private func progress(of url: URL, config: ImageDownloaderConfig) -> [(Int, Int)] {
        let downloader = ImageDownloader(config: config)
        let reports = Locked<[(Int, Int)]>([])
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: url, progress: { received, expected, _ in reports.update { $0.append((received, expected)) } },
            completed: recorder.completion())
        _ = recorder.waitForTerminal(1)
        return reports.value
    }

    @Test(arguments: Wire.allCases)
    func progressStartsUnknownThenKnownAndEndsComplete(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let size = try Fixtures.corpusFile("horse-lossless.webp").count
        let reports = progress(
            of: server.url("/drip/horse-lossless.webp?chunk=1000&interval=5"), config: server.downloaderConfig())
        #expect(reports.first.map { $0 == (0, -1) } == true)
        #expect(reports.dropFirst().first.map { $0 == (0, size) } == true)
        #expect(reports.last.map { $0 == (size, size) } == true)
        #expect(reports.count >= 5)
        let received = reports.map(\.0)
        #expect(received == received.sorted())
    }

    @Test(arguments: Wire.allCases)
    func minimumProgressIntervalThrottlesKnownLengthsButNeverTheLastReport(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let config = server.downloaderConfig { $0.minimumProgressInterval = 0.51 }
        let size = try Fixtures.corpusFile("horse-lossless.webp").count
        // ~4,600 bytes at 500 bytes per 100 ms: about one second of data callbacks.
        let reports = progress(of: server.url("/drip/horse-lossless.webp?chunk=500&interval=100"), config: config)
        let dataReports = reports.filter { $0.0 > 0 }
        #expect(dataReports.last.map { $0 == (size, size) } == true)
        #expect(dataReports.count <= 3, "at most 2 throttled data callbacks plus the last: \(dataReports)")
    }

    @Test(arguments: Wire.allCases)
    func chunkedResponsesReportUnknownLengthAndAreNotThrottled(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let config = server.downloaderConfig { $0.minimumProgressInterval = 1 }
        let size = try Fixtures.corpusFile("coffee-rgb.png").count
        let reports = progress(of: server.url("/chunked/coffee-rgb.png"), config: config)
        #expect(reports.allSatisfy { $0.1 == -1 })
        #expect(reports.last?.0 == size)
        #expect(reports.filter { $0.0 > 0 }.count >= 10, "chunked progress was throttled: \(reports.count) reports")
    }

    @Test(arguments: Wire.allCases, ["coffee-progressive.jpg", "astronaut-lossy.webp"])
    func progressiveLoadDeliversPartialImagesThenOneFinal(wire: Wire, file: String) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/drip/\(file)?chunk=4096&interval=30"), options: .progressiveLoad,
            completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        downloader.drainCallbacks()
        let calls = recorder.all
        let partials = calls.filter { !$0.finished }
        #expect(partials.count >= 1, "no partial image for \(file)")
        #expect(partials.allSatisfy { $0.image?.isPartial == true && $0.data == nil && $0.error == nil })
        #expect(calls.filter(\.finished).count == 1)
        #expect(calls.last?.finished == true, "a partial image arrived after the final one")
        let final = try #require(calls.last)
        #expect(final.image?.isPartial == false)
        #expect(final.data == (try Fixtures.corpusFile(file)))
    }

    @Test(arguments: Wire.allCases)
    func progressiveLoadIsOffWithADecryptor(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader { $0.decryptor = ImageDownloaderDecryptor { data, _ in data } }
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/drip/coffee-progressive.jpg?chunk=4096&interval=20"), options: .progressiveLoad,
            completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        downloader.drainCallbacks()
        #expect(recorder.partials.isEmpty)
        #expect(recorder.terminals.first?.image?.width == 600)
    }

    @Test(arguments: Wire.allCases)
    func notificationsComeInOrderAndTheTokenHasTheResponse(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let port = server.port
        let seen = Locked<[String]>([])
        let names: [(Notification.Name, String)] = [
            (.imageDownloadStart, "start"), (.imageDownloadReceiveResponse, "response"), (.imageDownloadStop, "stop"),
            (.imageDownloadFinish, "finish"),
        ]
        let observers = names.map { name, label in
            NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { note in
                guard let operation = note.object as? ImageDownloaderOperation, operation.request.url.port == port
                else { return }
                seen.update { $0.append("\(operation.request.url.lastPathComponent):\(label)") }
            }
        }
        defer {
            for observer in observers { NotificationCenter.default.removeObserver(observer) }
        }

        let tokenResponse = Locked<Int?>(nil)
        let recorder = CallbackRecorder()
        let tokenBox = Locked<ImageDownloadToken?>(nil)
        // Suspended until the token is stored, so the completion can never run before it is.
        downloader.isSuspended = true
        tokenBox.value = downloader.downloadImage(with: server.url("/files/pixel-1x1.png")) {
            image, data, error, finished in
            tokenResponse.value = tokenBox.value?.response?.statusCode
            recorder.completion()(image, data, error, finished)
        }
        downloader.isSuspended = false
        #expect(recorder.waitForTerminal(1))
        downloader.downloadImage(with: server.url("/status/404"), completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        let cancelled = downloader.downloadImage(with: server.url("/hang"), completed: recorder.completion())
        #expect(server.wait { $0.count(for: "/hang") == 1 })
        cancelled?.cancel()
        #expect(recorder.waitForTerminal(1))
        #expect(poll { seen.value.filter { $0.hasPrefix("hang:") }.count == 2 })
        downloader.drainCallbacks()

        #expect(tokenResponse.value == 200)
        let events = seen.value
        #expect(
            events.filter { $0.hasPrefix("pixel-1x1.png:") } == [
                "pixel-1x1.png:start", "pixel-1x1.png:response", "pixel-1x1.png:stop", "pixel-1x1.png:finish",
            ])
        #expect(events.filter { $0.hasPrefix("404:") } == ["404:start", "404:response", "404:stop"])
        #expect(events.filter { $0.hasPrefix("hang:") } == ["hang:start", "hang:stop"])
    }
}
