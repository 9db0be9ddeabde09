import Dispatch
import Foundation
import LocalImageServer
import LocalImageServerTLS
import Locking
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// `context.encoder` with `config.processedImageCache`: the encoded output is stored after the first
/// download and served to the next caller without any request; requests that may not use shared caches
/// neither read nor write it.
@Suite(.timeLimit(.minutes(2))) struct ProcessedImageCacheDownloaderTests {
    let server: LocalImageServer
    let directory: URL

    init() throws {
        server = try Fixtures.server(tls: .selfSigned)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "webimage-processed-\(UUID().uuidString)")
    }

    private let path = "/files/horse-rgba.png"

    private func downloader(
        _ cache: ImageDiskCache, _ change: (inout ImageDownloaderConfig) -> Void = { _ in }
    ) -> ImageDownloader {
        server.downloader {
            $0.processedImageCache = cache
            change(&$0)
        }
    }

    private func context(_ encoder: any ImageEncoding = PNGEncoder()) -> ImageDownloadContext {
        var context = ImageDownloadContext()
        context.transformer = ImageTransformer.resize(to: PixelSize(width: 100, height: 100))
        context.encoder = encoder
        return context
    }

    @Test func aSecondRequestIsServedFromTheProcessedCacheWithoutARequest() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = ImageDiskCache(directory: directory)
        let downloader = downloader(cache)
        let first = try await downloader.image(for: server.url(path), context: context())
        #expect(first.metrics?.cacheStatus == .network)
        #expect(first.image?.width == 100)
        #expect(ImageFormat.detect(first.data) == .png)
        let decoded = try ImageDecoderRegistry.shared.decode(first.data)
        #expect(decoded.width == 100, "the data is the encoded transformed image")

        let second = try await downloader.image(for: server.url(path), context: context())
        #expect(second.metrics?.cacheStatus == .processedImageCache)
        #expect(second.image == nil)
        #expect(second.data == first.data)
        #expect(server.count(for: path) == 1)

        // Another encoder (or transformer) is another entry; another instance on the directory reads it.
        let jpeg = try await downloader.image(for: server.url(path), context: context(JPEGEncoder(quality: 70)))
        #expect(jpeg.metrics?.cacheStatus == .network)
        #expect(ImageFormat.detect(jpeg.data) == .jpeg)
        var unresized = context()
        unresized.transformer = nil
        let original = try await downloader.image(for: server.url(path), context: unresized)
        #expect(original.metrics?.cacheStatus == .network)
        #expect(server.count(for: path) == 3)
        let elsewhere = self.downloader(ImageDiskCache(directory: directory))
        let again = try await elsewhere.image(for: server.url(path), context: context(JPEGEncoder(quality: 70)))
        #expect(again.metrics?.cacheStatus == .processedImageCache)
        #expect(again.data == jpeg.data)
        #expect(server.count(for: path) == 3)
        #expect(cache.keysByLastAccess.count == 3)
    }

    @Test func requestsThatMayNotUseSharedCachesNeitherReadNorWriteIt() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = ImageDiskCache(directory: directory)
        var withAuthorization = context()
        withAuthorization.headers["Authorization"] = "Bearer top-secret"
        var withCookie = context()
        withCookie.headers["Cookie"] = "session=abc"
        var withSecret = context()
        withSecret.headers["X-Api-Key"] = "key-123"
        let cases: [(String, ImageDownloader, ImageDownloaderOptions, ImageDownloadContext)] = [
            ("Authorization header", downloader(cache), [], withAuthorization),
            ("Cookie header", downloader(cache), [], withCookie),
            ("secret header field", downloader(cache), [], withSecret),
            ("handleCookies", downloader(cache), .handleCookies, context()),
            (
                "credentials",
                downloader(cache) {
                    $0.username = "ann"
                    $0.password = "secret"
                }, [], context()
            ),
            ("TLS checks off", downloader(cache) { $0.caBundlePath = nil }, .allowInvalidSSLCertificates, context()),
            (
                "restricting destination policy",
                downloader(cache) { $0.destinationPolicy = .publicOnly.allowing(["127.0.0.0/8", "::1/128"]) }, [],
                context()
            ),
        ]
        for (name, downloader, options, context) in cases {
            let result = try await downloader.image(for: server.url(path), options: options, context: context)
            #expect(result.metrics?.cacheStatus == .network, "\(name)")
            #expect(ImageFormat.detect(result.data) == .png, "\(name)")
            #expect(cache.keysByLastAccess.isEmpty, "\(name) was stored")
        }
        // A plain request stores it; the callers above then still do not read it.
        _ = try await downloader(cache).image(for: server.url(path), context: context())
        #expect(cache.keysByLastAccess.count == 1)
        for (name, downloader, options, context) in cases {
            let before = server.count(for: path)
            let result = try await downloader.image(for: server.url(path), options: options, context: context)
            #expect(result.metrics?.cacheStatus == .network, "\(name) read the processed cache")
            #expect(server.count(for: path) == before + 1, "\(name)")
        }
    }

    /// An `ImageDiskCache` that records the threads it is read on.
    final class ThreadRecordingCache: ProcessedImageCaching {
        let base: ImageDiskCache
        let readers = Lock<[pthread_t]>([])

        init(_ base: ImageDiskCache) { self.base = base }

        func data(for key: ProcessedImageKey) -> Data? {
            readers.withLock { $0.append(pthread_self()) }
            return base.data(for: key)
        }
        func store(_ data: Data, for key: ProcessedImageKey) { base.store(data, for: key) }
        func remove(_ key: ProcessedImageKey) { base.remove(key) }
        func removeAll() { base.removeAll() }
    }

    @Test func theCacheIsReadOffTheThreadThatCallsDownloadImage() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = ThreadRecordingCache(ImageDiskCache(directory: directory))
        let downloader = server.downloader { $0.processedImageCache = cache }
        let url = server.url(path)
        let stored = try await downloader.image(for: url, context: context())
        let context = context()
        let (caller, image, data) = await offCooperativePool { () -> (pthread_t, Image?, Data?) in
            let done = DispatchSemaphore(value: 0)
            let result = Lock<(Image?, Data?)>((nil, nil))
            downloader.downloadImage(with: url, context: context) { image, data, _, finished in
                guard finished else { return }
                result.withLock { $0 = (image, data) }
                done.signal()
            }
            done.wait()
            return (pthread_self(), result.withLock { $0.0 }, result.withLock { $0.1 })
        }
        #expect(image == nil && data == stored.data, "served from the processed cache")
        #expect(server.count(for: path) == 1)
        #expect(cache.readers.withLock { $0.count } == 2)
        #expect(!cache.readers.withLock { $0.contains(caller) }, "read on the caller's thread")
    }
}
