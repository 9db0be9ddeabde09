import Foundation
import LocalImageServer
import Logging
import MetricsTestKit
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// `config.logger` (swift-log) and `config.metricsFactory` (swift-metrics), against the loopback server.
/// Each test gives its downloader its own `TestMetrics` and `LogCollector`, so nothing is bootstrapped
/// process-wide.
@Suite(.timeLimit(.minutes(2))) struct ObservabilityTests {
    let server: LocalImageServer
    let metrics = TestMetrics()
    let log = LogCollector()

    init() throws {
        server = try Fixtures.server()
    }

    private func downloader(_ change: (inout ImageDownloaderConfig) -> Void = { _ in }) -> ImageDownloader {
        var config = ImageDownloaderConfig()
        config.metricsFactory = metrics
        config.logger = log.logger
        change(&config)
        return ImageDownloader(config: config)
    }

    private func downloads(_ result: String) -> Int64 {
        metrics.counterTotal(label: "webimage_downloads_total", dimensions: [("result", result)])
    }

    private func errors(_ code: String) -> Int64 {
        metrics.counterTotal(label: "webimage_errors_total", dimensions: [("code", code)])
    }

    private func cacheHits(_ cache: String) -> Int64 {
        metrics.counterTotal(label: "webimage_cache_hits_total", dimensions: [("cache", cache)])
    }

    @Test func everyOutcomeIsCountedOnceWithItsDuration() async throws {
        let downloader = downloader { $0.imageCache = AutoPurgingImageCache() }
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        let file = try Fixtures.corpusFile("horse-rgba.png")

        _ = try await downloader.image(for: server.url("/files/horse-rgba.png"))
        let cached = try await downloader.image(for: server.url("/files/horse-rgba.png"))
        #expect(cached.metrics?.cacheStatus == .imageCache)
        await #expect(throws: ImageDownloaderError.self) {
            _ = try await downloader.image(for: server.url("/status/404"))
        }
        let recorder = CallbackRecorder()
        let token = downloader.downloadImage(
            with: server.url("/files/coffee-rgb.png?gate=held"), completed: recorder.completion(1))
        token?.cancel()
        #expect(recorder.waitForTerminal(1))
        server.openGate("held")
        #expect(downloader.downloadImage(with: URL(string: "ftp://example.com/a.png"), completed: nil) == nil)

        #expect(downloads("success") == 2)
        #expect(downloads("failure") == 2)
        #expect(downloads("cancelled") == 1)
        #expect(errors("invalidDownloadStatusCode") == 1)
        #expect(errors("invalidURL") == 1)
        #expect(errors("cancelled") == 1)
        #expect(cacheHits("image") == 1)
        #expect(cacheHits("http") == 0)
        // The image-cache hit and the cancelled caller moved no body; the 404's small body is counted.
        let bytes = metrics.counterTotal(label: "webimage_bytes_received_total")
        #expect(bytes >= Int64(file.count))
        #expect(bytes < Int64(file.count) + 4096)
        let timer = try metrics.expectTimer("webimage_download_duration")
        #expect(timer.values.count == 5)
        #expect(timer.values.allSatisfy { $0 >= 0 })
    }

    @Test func freshAndRevalidatedHTTPCacheEntriesCountAsHTTPHits() async throws {
        let downloader = downloader { $0.urlCache = HTTPCache(directory: nil) }
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        for path in ["/cache/max-age%3D3600/horse-rgba.png", "/cache/max-age%3D0/coffee-progressive.jpg"] {
            _ = try await downloader.image(for: server.url(path), options: .useURLCache)
            _ = try await downloader.image(for: server.url(path), options: .useURLCache)
        }
        #expect(cacheHits("http") == 2)
        #expect(cacheHits("image") == 0)
        #expect(downloads("success") == 4)
    }

    @Test func aSuccessfulDownloadIsTracedAndAFailedTransferLoggedAtDebug() async throws {
        let downloader = downloader()
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        let url = server.url("/files/pixel-1x1.png")
        _ = try await downloader.image(for: url)
        let error = await #expect(throws: ImageDownloaderError.self) {
            _ = try await downloader.image(for: server.url("/close-mid-body/coffee-rgb.png"))
        }

        let traced = log.records.filter { $0.level == .trace && $0.metadata["url"] == "\(url.absoluteString)" }
        #expect(traced.map(\.message) == ["transfer started", "transfer finished", "download ended"])
        #expect(traced.last?.metadata["result"] == "success")
        let failures = log.records.filter { $0.level == .debug }
        #expect(failures.count == 1)
        #expect(failures.first?.message.hasPrefix("transfer failed") == true)
        #expect(failures.first?.metadata["code"] == error.map { "\($0.code)" })
        #expect(error?.code != .badImageData)  // the transfer failed, not the decode
        #expect(!log.records.contains { $0.level > .debug })
    }

    @Test func aLoggerAtInfoHearsNothingFromRoutineDownloads() async throws {
        let downloader = downloader { $0.logger = log.logger(level: .info) }
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        _ = try await downloader.image(for: server.url("/files/pixel-1x1.png"))
        await #expect(throws: ImageDownloaderError.self) {
            _ = try await downloader.image(for: server.url("/status/500"))
        }
        #expect(log.records.isEmpty)
    }
}
