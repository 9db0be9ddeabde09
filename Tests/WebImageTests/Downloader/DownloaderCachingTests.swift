import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// `.useURLCache`, `.ignoreCachedResponse` and `config.imageCache` through the downloader, against the
/// loopback server's caching routes. Each test uses its own cache directory.
@Suite(.timeLimit(.minutes(5))) struct DownloaderCachingTests {
    let server: LocalImageServer
    let directory: URL
    let cache: HTTPCache

    init() throws {
        server = try Fixtures.server()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("webimage-cache-\(UUID().uuidString)")
        cache = HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 8 << 20, directory: directory)
    }

    private func downloader() -> ImageDownloader {
        var config = ImageDownloaderConfig()
        config.urlCache = cache
        return ImageDownloader(config: config)
    }

    private func fetch(
        _ downloader: ImageDownloader, _ path: String, options: ImageDownloaderOptions = .useURLCache,
        context: ImageDownloadContext? = nil
    ) async throws -> ImageDownloadResult {
        try await downloader.image(for: server.url(path), options: options, context: context)
    }

    private func validators(_ path: String) -> [String?] {
        server.requests(for: path).map { $0.request.header("If-None-Match") ?? $0.request.header("If-Modified-Since") }
    }

    @Test func freshResponseIsServedWithoutARequest() async throws {
        let downloader = downloader()
        let path = "/cache/max-age%3D3600/horse-rgba.png"
        let first = try await fetch(downloader, path)
        let second = try await fetch(downloader, path)
        #expect(server.count(for: "/cache/max-age=3600/horse-rgba.png") + server.count(for: path) == 1)
        #expect(first.metrics?.cacheStatus == .network)
        #expect(second.metrics?.cacheStatus == .fresh)
        #expect(second.isFromCache)
        #expect(second.data == first.data)
        #expect(second.image?.width == 400)
    }

    @Test func staleResponseIsRevalidatedWithIfNoneMatchAnd304ServesTheStoredBody() async throws {
        let downloader = downloader()
        let path = "/cache/max-age%3D0/coffee-progressive.jpg"
        let first = try await fetch(downloader, path)
        let second = try await fetch(downloader, path)
        let entries = server.requests.filter { $0.request.path.hasPrefix("/cache/") }
        #expect(entries.count == 2)
        #expect(entries.first?.request.header("If-None-Match") == nil)
        #expect(entries.last?.request.header("If-None-Match") != nil)
        #expect(entries.last?.status == 304)
        #expect(second.metrics?.cacheStatus == .revalidated)
        #expect(second.data == first.data)
        #expect(second.data == (try Fixtures.corpusFile("coffee-progressive.jpg")))
        #expect(second.image?.width == 600)
    }

    @Test func aChangedResourceReplacesTheEntry() async throws {
        let downloader = downloader()
        server.setFile(name: "changing.png", data: try Fixtures.corpusFile("horse-rgba.png"), contentType: "image/png")
        let path = "/cache/no-cache/changing.png"
        let first = try await fetch(downloader, path)
        server.setFile(name: "changing.png", data: try Fixtures.corpusFile("pixel-1x1.png"), contentType: "image/png")
        let second = try await fetch(downloader, path)
        let third = try await fetch(downloader, path)
        #expect(first.image?.width == 400)
        #expect(second.metrics?.cacheStatus == .network)
        #expect(second.image?.width == 1)
        #expect(third.metrics?.cacheStatus == .revalidated)
        #expect(third.data == (try Fixtures.corpusFile("pixel-1x1.png")))
    }

    @Test func noStoreIsNeverStoredAndNoCacheIsAlwaysRevalidated() async throws {
        let downloader = downloader()
        _ = try await fetch(downloader, "/cache/no-store/pixel-1x1.png")
        let again = try await fetch(downloader, "/cache/no-store/pixel-1x1.png")
        #expect(again.metrics?.cacheStatus == .network)
        let noStore = server.requests.filter { $0.request.path.contains("no-store") }
        #expect(noStore.count == 2)
        #expect(noStore.allSatisfy { $0.request.header("If-None-Match") == nil })

        for _ in 0..<3 { _ = try await fetch(downloader, "/cache/no-cache/pixel-1x1.png") }
        let noCache = server.requests.filter { $0.request.path.contains("no-cache") }
        #expect(noCache.count == 3)
        #expect(noCache.dropFirst().allSatisfy { $0.request.header("If-None-Match") != nil && $0.status == 304 })
    }

    @Test func varyAcceptKeepsDifferentAcceptHeadersApart() async throws {
        let downloader = downloader()
        _ = try await fetch(downloader, "/vary/pixel-1x1.png")
        let sameAccept = try await fetch(downloader, "/vary/pixel-1x1.png")
        var context = ImageDownloadContext()
        context.headers["Accept"] = "image/png"
        let otherAccept = try await fetch(downloader, "/vary/pixel-1x1.png", context: context)
        #expect(sameAccept.metrics?.cacheStatus == .fresh)
        #expect(otherAccept.metrics?.cacheStatus == .network)
        #expect(server.count(for: "/vary/pixel-1x1.png") == 2)
    }

    @Test func lastModifiedOnlySendsIfModifiedSince() async throws {
        let downloader = downloader()
        let file = try Fixtures.corpusFile("pixel-1x1.png")
        let stamp = "Mon, 01 Jan 2024 00:00:00 GMT"
        server.route("/lm-only") { request in
            if request.header("If-Modified-Since") == stamp { return LocalImageServer.Response(status: 304) }
            return LocalImageServer.Response(
                headers: [("Content-Type", "image/png"), ("Last-Modified", stamp), ("Cache-Control", "max-age=0")],
                body: .data(file))
        }
        _ = try await fetch(downloader, "/lm-only")
        let second = try await fetch(downloader, "/lm-only")
        let sent = server.requests(for: "/lm-only").map { $0.request.header("If-Modified-Since") }
        #expect(sent == [nil, stamp])
        #expect(second.metrics?.cacheStatus == .revalidated)
        #expect(second.data == file)
    }

    @Test func ignoreCachedResponseTurnsCacheResultsIntoCacheNotModified() async throws {
        let downloader = downloader()
        _ = try await fetch(downloader, "/cache/max-age%3D3600/pixel-1x1.png")
        await #expect(throws: ImageDownloaderError.self) {
            _ = try await fetch(
                downloader, "/cache/max-age%3D3600/pixel-1x1.png", options: [.useURLCache, .ignoreCachedResponse])
        }
        do {
            _ = try await fetch(
                downloader, "/cache/max-age%3D3600/pixel-1x1.png", options: [.useURLCache, .ignoreCachedResponse])
        } catch let error as ImageDownloaderError {
            #expect(error.code == .cacheNotModified)
        }

        do {
            _ = try await fetch(downloader, "/cache/no-cache/horse-rgba.png")
            _ = try await fetch(
                downloader, "/cache/no-cache/horse-rgba.png", options: [.useURLCache, .ignoreCachedResponse])
            Issue.record("a 304 with ignoreCachedResponse succeeded")
        } catch let error as ImageDownloaderError {
            #expect(error.code == .cacheNotModified)
            #expect(server.requests.last?.status == 304)
        }
    }

    @Test func withoutUseURLCacheNothingIsReadWrittenOrValidated() async throws {
        let downloader = downloader()
        for _ in 0..<2 { _ = try await fetch(downloader, "/cache/max-age%3D3600/horse-rgba.png", options: []) }
        #expect(server.requests.filter { $0.request.path.hasPrefix("/cache/") }.count == 2)
        #expect(
            server.requests.allSatisfy {
                $0.request.header("If-None-Match") == nil && $0.request.header("If-Modified-Since") == nil
            })
        #expect(cache.currentDiskUsage == 0)
        #expect(cache.currentMemoryUsage == 0)
    }

    @Test func a304WithNothingCachedIsCacheNotModified() async throws {
        let downloader = downloader()
        do {
            _ = try await fetch(downloader, "/status/304", options: [])
            Issue.record("a bare 304 succeeded")
        } catch let error as ImageDownloaderError {
            #expect(error.code == .cacheNotModified)
        }
    }

    @Test func imageCacheHitCompletesWithoutATransfer() async throws {
        var config = ImageDownloaderConfig()
        let images = AutoPurgingImageCache()
        config.imageCache = images
        let downloader = ImageDownloader(config: config)
        let first = try await downloader.image(for: server.url("/files/horse-rgba.png"))
        let second = try await downloader.image(for: server.url("/files/horse-rgba.png"))
        var thumbnail = ImageDownloadContext()
        thumbnail.thumbnailPixelSize = PixelSize(width: 40, height: 40)
        let third = try await downloader.image(for: server.url("/files/horse-rgba.png"), context: thumbnail)
        #expect(first.metrics?.cacheStatus == .network)
        #expect(second.metrics?.cacheStatus == .imageCache)
        #expect(second.image?.width == 400)
        #expect(third.image?.width == 40, "a different decode size must not hit the full-size entry")
        #expect(server.count(for: "/files/horse-rgba.png") == 2)
        #expect(images.count == 2)
    }
}
