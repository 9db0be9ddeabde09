import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// The codecs as the downloader drives them: what it asks for in `Accept`, progressive partial images while
/// a body arrives, a caller's colour space and transformer, and what each does to the image cache. The
/// codecs' own behaviour is tested in WebImageCodecsTests.
@Suite(.timeLimit(.minutes(2))) struct DownloaderDecodingTests {
    @Test func theDownloaderAsksForAndDecodesBoth() async throws {
        let server = LocalImageServer(root: PipelineFixtures.directory)
        try server.start()
        defer { server.shutdown() }
        let downloader = ImageDownloader()
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        for (file, format) in [("horse-alpha.avif", ImageFormat.avif), ("horse-alpha-container.jxl", .jxl)] {
            let result = try await downloader.image(for: server.url("/files/\(file)"))
            #expect(result.image?.format == format)
            #expect(result.image?.width == 400 && result.image?.hasAlpha == true)
        }
        let accept = server.requests.first?.request.header("Accept") ?? ""
        #expect(accept.hasPrefix("image/avif,image/jxl,"))
    }

    @Test func progressiveLoadShowsAJXLsPassesWhileItArrives() async throws {
        let server = LocalImageServer(root: PipelineFixtures.directory)
        try server.start()
        defer { server.shutdown() }
        let downloader = ImageDownloader()
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/drip/coffee-progressive.jxl?chunk=4096&interval=30"), options: .progressiveLoad,
            completed: recorder.completion())
        #expect(await offCooperativePool { recorder.waitForTerminal(1) })
        let partials = recorder.partials
        #expect(partials.count >= 1, "no partial image")
        #expect(partials.allSatisfy { $0.image?.isPartial == true && $0.image?.width == 600 })
        let final = try #require(recorder.terminals.first?.image)
        #expect(!final.isPartial && final.format == .jxl)
    }

    @Test func twoCallersOfOneURLGetTheColourSpaceEachAskedFor() async throws {
        let server = LocalImageServer(root: PipelineFixtures.directory)
        try server.start()
        defer { server.shutdown() }
        var config = ImageDownloaderConfig()
        config.imageCache = AutoPurgingImageCache()
        let downloader = ImageDownloader(config: config)
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        // Both callers attach synchronously to one transfer, which the gate holds until they are on it.
        let url = server.url("/files/coffee-p3.png?gate=both")
        let preserve = {
            var context = ImageDownloadContext()
            context.colorSpace = .preserve
            return context
        }()
        let recorder = CallbackRecorder()
        downloader.downloadImage(with: url, completed: recorder.completion(1))
        downloader.downloadImage(with: url, context: preserve, completed: recorder.completion(2))
        server.openGate("both")
        #expect(await offCooperativePool { recorder.waitForTerminal(2) })
        let sRGB = try #require(recorder.terminals(tag: 1).first?.image)
        let stored = try #require(recorder.terminals(tag: 2).first?.image)
        #expect(server.count(for: "/files/coffee-p3.png") == 1)
        #expect(sRGB.iccProfile == nil)
        #expect(stored.iccProfile == (try PipelineFixtures.data("display-p3.icc")))
        #expect(sRGB.frames[0].pixels != stored.frames[0].pixels)
        // The image cache keeps them apart too.
        let again = try await downloader.image(for: url, context: preserve)
        #expect(again.metrics?.cacheStatus == .imageCache)
        #expect(again.image?.iccProfile != nil)
    }

    @Test func theDownloaderTransformsShrinksOnLoadAndCachesApart() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        var config = ImageDownloaderConfig()
        config.imageCache = AutoPurgingImageCache()
        let downloader = ImageDownloader(config: config)
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        var context = ImageDownloadContext()
        context.transformer = ImageTransformer.resize(to: PixelSize(width: 256, height: 256), mode: .fill)
        let url = server.url("/files/astronaut-36mp.jpg")
        let budget = try #require(downloader.decodeMemoryForTesting)

        let thumbnail = try await downloader.image(for: url, context: context)
        #expect(thumbnail.image?.width == 256 && thumbnail.image?.height == 256)
        // The 36 MP JPEG was decoded through DCT scaling: its full bitmap (144 MB) was never claimed.
        #expect(budget.peakBytesInUse < 40_000_000, "peak \(budget.peakBytesInUse)")

        let again = try await downloader.image(for: url, context: context)
        #expect(again.metrics?.cacheStatus == .imageCache)
        var other = ImageDownloadContext()
        other.transformer = ImageTransformer.resize(to: PixelSize(width: 128, height: 128), mode: .fill)
        let second = try await downloader.image(for: url, context: other)
        #expect(second.metrics?.cacheStatus == .network)
        #expect(second.image?.width == 128)
    }

    @Test func aFailingTransformerFailsTheCallerWithBadImageData() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let downloader = ImageDownloader()
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        var context = ImageDownloadContext()
        context.transformer = FailingTransformer()
        let error = await #expect(throws: ImageDownloaderError.self) {
            _ = try await downloader.image(for: server.url("/files/pixel-1x1.png"), context: context)
        }
        #expect(error?.code == .badImageData)
        #expect(error?.message.contains("failing") == true)
    }

    struct FailingTransformer: ImageTransforming {
        var key: String { "failing" }
        func transform(_ image: Image) throws -> Image { throw CocoaError(.featureUnsupported) }
    }
}
