import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// One caller's trust (TLS checks off, cookies, credentials, headers) never reaches another caller:
/// requests share a transfer or a cached image only when their trust is equal.
@Suite(.timeLimit(.minutes(2))) struct TrustIsolationTests {
    @Test(arguments: Wire.allCases)
    func aStrictCallerJoiningAnInsecureCallersURLGetsSSLFailure(wire: Wire) throws {
        let server = try wire.startTLSServer()
        defer { server.shutdown() }
        let downloader = ImageDownloader()  // the system trust store: the self-signed certificate fails
        let recorder = CallbackRecorder()
        // The insecure caller's response waits at a gate, so the strict caller arrives while it runs.
        let url = server.url("/files/horse-rgba.png?gate=insecure")
        downloader.downloadImage(with: url, options: .allowInvalidSSLCertificates, completed: recorder.completion(1))
        downloader.downloadImage(with: url, completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 2).first?.error?.code == .sslFailure)
        server.openGate("insecure")
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 1).first?.image?.width == 400)
        #expect(recorder.terminals(tag: 2).first?.image?.width == nil)
        #expect(recorder.terminals(tag: 2).first?.error?.code == .sslFailure)
        #expect(server.count(for: "/files/horse-rgba.png") == 1, "only the insecure caller reached the server")
    }

    @Test func requestsShareATransferOnlyWithEqualHeadersAndCookieHandling() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        let url = server.url("/files/horse-rgba.png")
        func context(_ fields: [(String, String)]) -> ImageDownloadContext {
            var context = ImageDownloadContext()
            for (name, value) in fields { context.headers[name] = value }
            return context
        }
        downloader.isSuspended = true
        // 1 and 2 differ only in the order and case of their fields: one transfer.
        downloader.downloadImage(
            with: url, context: context([("X-A", "1"), ("X-B", "2")]), completed: recorder.completion(1))
        downloader.downloadImage(
            with: url, context: context([("x-b", "2"), ("x-a", "1")]), completed: recorder.completion(2))
        // 3 sends another value; 4 has the fields of 1 but handles cookies: each its own transfer.
        downloader.downloadImage(
            with: url, context: context([("X-A", "other"), ("X-B", "2")]), completed: recorder.completion(3))
        downloader.downloadImage(
            with: url, options: .handleCookies, context: context([("X-A", "1"), ("X-B", "2")]),
            completed: recorder.completion(4))
        #expect(downloader.currentDownloadCount == 3)
        downloader.isSuspended = false
        #expect(recorder.waitForTerminal(4))
        #expect(recorder.terminals.allSatisfy { $0.image?.width == 400 })
        let sent = server.requests(for: "/files/horse-rgba.png").map { $0.request.header("X-A") ?? "-" }
        #expect(sent.sorted() == ["1", "1", "other"])
    }

    @Test(arguments: Wire.allCases)
    func theImageCacheKeepsTrustLevelsApart(wire: Wire) throws {
        let server = try wire.startTLSServer()
        defer { server.shutdown() }
        let cache = AutoPurgingImageCache()
        var config = ImageDownloaderConfig()
        config.imageCache = cache
        let downloader = ImageDownloader(config: config)
        let recorder = CallbackRecorder()
        let url = server.url("/files/pixel-1x1.png")

        downloader.downloadImage(with: url, options: .allowInvalidSSLCertificates, completed: recorder.completion(1))
        #expect(recorder.waitForTerminal(1))
        #expect(cache.count == 1)
        // A strict request must not be served the image an unverified connection delivered.
        downloader.downloadImage(with: url, completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 2).first?.error?.code == .sslFailure)
        // Another insecure request is a hit: no new request reaches the server.
        let hit = downloader.downloadImage(
            with: url, options: .allowInvalidSSLCertificates, completed: recorder.completion(3))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 3).first?.image?.width == 1)
        #expect(hit?.metrics?.cacheStatus == .imageCache)
        #expect(server.count(for: "/files/pixel-1x1.png") == 1)

        // A second downloader with other credentials shares the cache but not its entries.
        var other = config
        other.username = "ann"
        other.password = "secret"
        let second = ImageDownloader(config: other)
        second.downloadImage(with: url, options: .allowInvalidSSLCertificates, completed: recorder.completion(4))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 4).first?.image?.width == 1)
        #expect(server.count(for: "/files/pixel-1x1.png") == 2)
    }
}
