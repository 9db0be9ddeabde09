import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage
@testable import WebImageProxy

/// The proxy has one result cache, its downloader's `processedImageCache`: a result made through either
/// is a hit through the other, under the same key.
@Suite("serve: one result cache, shared with the downloader", .timeLimit(.minutes(5)))
struct ServeSharedCacheTests {
    /// What the proxy's downloader is asked for `path`: the URL's source and the proxy's own context.
    static func request(_ proxy: ImageProxy, _ path: String) throws -> (URL, ImageDownloadContext) {
        let url = try ProxyURL(path: path)
        let choice = FormatChoice(format: url.options.format, accept: nil)
        return (url.source, proxy.context(for: url, choice: choice, cancellation: JobCancellation()))
    }

    @Test("a result the proxy made is a downloader hit, and one the downloader made is a proxy hit")
    func oneCacheForBoth() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("serve-shared-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = ImageDiskCache(directory: folder, maximumAge: nil)
        let proxy = ServeOperationsTests.proxy(cache: cache)
        let file = "/files/coffee-progressive.jpg"

        // Made by the proxy, stored by its downloader as it encoded: the downloader's own lookup hits.
        let madeByProxy = ServeOperationsTests.path("rs:fill:120:120/f:png", origin, file: "coffee-progressive.jpg")
        let first = await proxy.respond(to: ProxyRequest(path: madeByProxy))
        #expect(first.status == 200 && first.cacheStatus == .miss)
        #expect(cache.keysByLastAccess.count == 1, "the result was stored once, in the one cache")
        let (source, context) = try Self.request(proxy, madeByProxy)
        let again = try await proxy.downloader.image(for: source, options: proxy.sourceOptions, context: context)
        #expect(again.metrics?.cacheStatus == .processedImageCache)
        #expect(again.data == first.body)
        #expect(origin.count(for: file) == 1)

        // Made by the downloader directly: the proxy answers it from the cache without the origin.
        let madeByDownloader = ServeOperationsTests.path("rs:fit:64:64/f:png", origin, file: "coffee-progressive.jpg")
        let (otherSource, otherContext) = try Self.request(proxy, madeByDownloader)
        let made = try await proxy.downloader.image(
            for: otherSource, options: proxy.sourceOptions, context: otherContext)
        #expect(made.metrics?.cacheStatus == .network)
        #expect(origin.count(for: file) == 2)
        let reply = await proxy.respond(to: ProxyRequest(path: madeByDownloader))
        #expect(reply.status == 200 && reply.cacheStatus == .hit)
        #expect(reply.body == made.data)
        #expect(origin.count(for: file) == 2, "the hit fetched nothing")
        #expect(cache.keysByLastAccess.count == 2)

        let samples = await ServeOperationsTests.scrape(proxy)
        #expect(samples["webimage_serve_result_cache_hits_total"] == 1)
        #expect(samples["webimage_serve_result_cache_misses_total"] == 1)
    }

    @Test("a truncated source is refused before it is encoded, so it never becomes a stored result")
    func aRefusedSourceIsNotStored() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("serve-refused-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = ImageDiskCache(directory: folder, maximumAge: nil)
        let proxy = ServeOperationsTests.proxy(cache: cache)
        let path = ServeOperationsTests.path("w:50/f:png", origin, file: "truncated-half.jpg")
        for _ in 0..<2 {
            let reply = await proxy.respond(to: ProxyRequest(path: path))
            #expect(reply.status == 422, "\(String(decoding: reply.body, as: UTF8.self))")
            #expect(String(decoding: reply.body, as: UTF8.self).contains("truncated"))
        }
        #expect(cache.keysByLastAccess.isEmpty)
    }
}
