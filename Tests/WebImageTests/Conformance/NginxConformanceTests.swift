import Foundation
import LocalImageServer
import TestSupport
import Testing
import WebImage

/// WebImage against a real nginx (the Debian package `make deps` installs): plain HTTP/1.1, HTTP/1.1
/// over TLS, and HTTP/2 over TLS, the protocol most image servers speak. Every download goes through
/// the public API with TLS verified against nginx's self-signed certificate.
@Suite(.timeLimit(.minutes(3)), .serialized) struct NginxConformanceTests {
    /// The images served under 200 names each (`/img/<n>.<ext>`), with their decoded sizes.
    static let images: [(file: String, ext: String, width: Int, height: Int)] = [
        ("horse-rgba.png", "png", 400, 328), ("astronaut-baseline.jpg", "jpg", 512, 512),
        ("horse-lossless.webp", "webp", 400, 328), ("chelsea.gif", "gif", 451, 300),
    ]

    /// A folder with 200 images under distinct names, removed by the caller.
    static func makeSite() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-site-\(UUID().uuidString)")
        let images = folder.appendingPathComponent("img")
        try FileManager.default.createDirectory(at: images, withIntermediateDirectories: true)
        for index in 0..<200 {
            let image = Self.images[index % Self.images.count]
            try FileManager.default.copyItem(
                at: Fixtures.corpusImages.appendingPathComponent(image.file),
                to: images.appendingPathComponent("\(index).\(image.ext)"))
        }
        return folder
    }

    static func path(_ index: Int) -> String { "/img/\(index).\(images[index % images.count].ext)" }

    struct Run {
        var failures: [String] = []
        var versions: Set<String> = []
        var connections = 0
    }

    /// Downloads the 200 images from `listener` with `concurrency` slots and checks every image.
    static func download(
        from nginx: NginxServer, _ listener: NginxServer.Listener, concurrency: Int
    ) async -> Run {
        var config = ImageDownloaderConfig()
        config.maxConcurrentDownloads = concurrency
        config.caBundlePath = nginx.certificateURL.path
        let downloader = ImageDownloader(config: config)
        defer {
            downloader.invalidate(cancelPendingDownloads: true)
            _ = downloader.waitUntilInvalidated(timeout: 10)
        }
        let mark = nginx.accessLogMark()
        var run = Run()
        await withTaskGroup(of: (Int, Result<ImageDownloadResult, any Error>).self) { group in
            for index in 0..<200 {
                group.addTask {
                    do {
                        return (index, .success(try await downloader.image(for: nginx.url(listener, path(index)))))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            for await (index, result) in group {
                let expected = images[index % images.count]
                switch result {
                case .success(let result):
                    if result.image?.width != expected.width || result.image?.height != expected.height {
                        run.failures.append("\(path(index)): \(result.image?.width ?? 0)x\(result.image?.height ?? 0)")
                    }
                    run.versions.insert(result.metrics?.httpVersion ?? "?")
                case .failure(let error):
                    run.failures.append("\(path(index)): \(error)")
                }
            }
        }
        run.connections = nginx.connections(on: listener, since: mark, expecting: 200)
        return run
    }

    /// Serves the 200 images from a fresh nginx with `options` and downloads them from `listener`.
    static func run(
        _ listener: NginxServer.Listener, concurrency: Int, options: NginxServer.Options = NginxServer.Options()
    ) async throws -> Run {
        let site = try makeSite()
        defer { try? FileManager.default.removeItem(at: site) }
        let nginx = try NginxServer(serving: site, options: options)
        defer { nginx.stop() }
        return await download(from: nginx, listener, concurrency: concurrency)
    }

    @Test(arguments: NginxServer.Listener.allCases, [1, 6, 16, 64])
    func twoHundredURLsAllSucceed(listener: NginxServer.Listener, concurrency: Int) async throws {
        let run = try await Self.run(listener, concurrency: concurrency)
        #expect(run.failures.count == 0, "\(run.failures.count) failed; first: \(run.failures.first ?? "")")
        #expect(run.versions == [listener == .http2 ? "2" : "1.1"])
        if listener == .http2 {
            #expect(run.connections >= 1 && run.connections <= 2, "\(run.connections) connections over h2")
        }
    }

    /// nginx 1.22 applies `keepalive_requests` to HTTP/2 connections: after 50 streams it sends GOAWAY.
    @Test func aGoawayMidRunLosesNoDownload() async throws {
        var options = NginxServer.Options()
        options.keepaliveRequests = 50
        let run = try await Self.run(.http2, concurrency: 6, options: options)
        #expect(run.failures.count == 0, "\(run.failures.count) failed; first: \(run.failures.first ?? "")")
        #expect(run.connections >= 4, "GOAWAY after 50 requests should need at least 4 connections")
    }

    @Test func moreDownloadsThanTheStreamLimitStillAllSucceed() async throws {
        var options = NginxServer.Options()
        options.http2MaxConcurrentStreams = 8
        let run = try await Self.run(.http2, concurrency: 64, options: options)
        #expect(run.failures.count == 0, "\(run.failures.count) failed; first: \(run.failures.first ?? "")")
        #expect(run.versions == ["2"])
    }
}
