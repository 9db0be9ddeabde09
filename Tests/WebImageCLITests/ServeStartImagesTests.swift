import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// The images `webimage serve` is configured with, given as imgproxy gives them: the watermark by
/// IMGPROXY_WATERMARK_DATA, _PATH or _URL, the fallback image by IMGPROXY_FALLBACK_IMAGE_DATA, _PATH or _URL,
/// read in imgproxy's order (data, path, URL); a URL fetched once at the start, as sources are.
@Suite("webimage serve: watermark and fallback images by URL and Base64", .timeLimit(.minutes(5)))
struct ServeStartImagesTests {
    static let unsigned = ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"]
    static let red = (255, 0, 0, 255)
    static let blue = (0, 0, 255, 255)

    @Test("IMGPROXY_WATERMARK_URL is fetched once at the start and drawn")
    func watermarkURL() async throws {
        let files = try ServeWatermarkTests.Files()
        defer { files.close() }
        files.origin.setFile(name: "mark.png", data: try ServeWatermarkTests.png(20, 20, (255, 0, 0)))
        let serve = try await ServeProcess.start(
            ["--allow-unsigned"],
            environment: [
                "IMGPROXY_WATERMARK_URL": files.origin.url("/files/mark.png").absoluteString,
                "IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "true",
            ])
        for options in ["wm:1:soea", "wm:1:soea/w:199"] {
            let image = try await ServeWatermarkTests.result(serve, options, files)
            #expect(ServeWatermarkTests.pixel(image, image.width - 1, image.height - 1) == Self.red, "\(options)")
            #expect(ServeWatermarkTests.pixel(image, 0, 0) == (255, 255, 255, 255))
        }
        #expect(files.origin.count(for: "/files/mark.png") == 1, "fetched once, at the start")
        #expect(await serve.stop() == 0, "\(serve.stderr)")
        #expect(!serve.stderr.contains("is not a setting"), "\(serve.stderr)")
    }

    @Test("IMGPROXY_WATERMARK_DATA comes before _PATH and _URL, as in imgproxy; the URL is then never fetched")
    func watermarkOrder() async throws {
        let files = try ServeWatermarkTests.Files()
        defer { files.close() }
        files.origin.setFile(name: "mark.png", data: try ServeWatermarkTests.png(20, 20, (255, 0, 0)))
        let blue = try ServeWatermarkTests.png(20, 20, (0, 0, 255)).base64EncodedString()
        let url = files.origin.url("/files/mark.png").absoluteString
        let serve = try await ServeProcess.start(
            Self.unsigned,
            environment: [
                "IMGPROXY_WATERMARK_DATA": blue, "IMGPROXY_WATERMARK_PATH": files.mark, "IMGPROXY_WATERMARK_URL": url,
            ])
        let image = try await ServeWatermarkTests.result(serve, "wm:1:soea", files)
        #expect(ServeWatermarkTests.pixel(image, 199, 99) == Self.blue)
        #expect(await serve.stop() == 0, "\(serve.stderr)")
        #expect(files.origin.count(for: "/files/mark.png") == 0)

        // Without the data, the path comes before the URL; --watermark-url wins over both variables.
        files.origin.setFile(name: "blue.png", data: try ServeWatermarkTests.png(20, 20, (0, 0, 255)))
        let flagged = try await ServeProcess.start(
            Self.unsigned + ["--watermark-url", files.origin.url("/files/blue.png").absoluteString],
            environment: ["IMGPROXY_WATERMARK_PATH": files.mark, "IMGPROXY_WATERMARK_URL": url])
        let fromFlag = try await ServeWatermarkTests.result(flagged, "wm:1:soea", files)
        #expect(ServeWatermarkTests.pixel(fromFlag, 199, 99) == Self.blue)
        #expect(await flagged.stop() == 0, "\(flagged.stderr)")
        #expect(files.origin.count(for: "/files/mark.png") == 0)
    }

    @Test("a watermark or fallback URL that cannot be fetched stops the start with a message naming the variable")
    func unfetchable() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let missing = origin.url("/files/missing.png").absoluteString
        let image = origin.url("/files/coffee-progressive.jpg").absoluteString
        let cases: [([String: String], String)] = [
            // A loopback URL without the loopback allowance: refused as a source would be.
            (["IMGPROXY_WATERMARK_URL": image], "IMGPROXY_WATERMARK_URL"),
            (
                ["IMGPROXY_WATERMARK_URL": missing, "IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "1"],
                "IMGPROXY_WATERMARK_URL"
            ),
            (["IMGPROXY_FALLBACK_IMAGE_URL": image], "IMGPROXY_FALLBACK_IMAGE_URL"),
            (
                ["IMGPROXY_FALLBACK_IMAGE_URL": missing, "IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "1"],
                "IMGPROXY_FALLBACK_IMAGE_URL"
            ),
        ]
        try await ServeServerSettingsTests.expectStartRefused(cases)
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 0, "a refused address is never connected to")
    }

    @Test("IMGPROXY_FALLBACK_IMAGE_URL answers a missing source; _DATA comes before _PATH and _URL")
    func fallbackURL() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        origin.setFile(name: "quadrants.png", data: try ServeGeometryTests.quadrants())
        let fallback = origin.url("/files/quadrants.png").absoluteString
        let missing = origin.url("/files/missing.png").absoluteString
        let serve = try await ServeProcess.start(
            Self.unsigned, environment: ["IMGPROXY_FALLBACK_IMAGE_URL": fallback])
        for _ in 0..<2 {
            let reply = try await serve.get("/insecure/w:40/plain/\(missing)@png")
            #expect(reply.status == 200 && reply.header("Fallback-Image") == "1", "\(reply.status)")
            let image = try ImageDecoderRegistry.shared.decode(reply.body)
            #expect(image.width == 40 && image.height == 20)
            #expect(ServeGeometryTests.near(ServeGeometryTests.pixel(image, 2, 2), ServeGeometryTests.red))
        }
        #expect(origin.count(for: "/files/quadrants.png") == 1, "fetched once, at the start")
        #expect(await serve.stop() == 0, "\(serve.stderr)")

        // _DATA first: the _PATH (not an image) and the _URL are never read.
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let text = folder.appendingPathComponent("fallback.png")
        try Data("not an image".utf8).write(to: text)
        let ordered = try await ServeProcess.start(
            Self.unsigned,
            environment: [
                "IMGPROXY_FALLBACK_IMAGE_DATA": try ServeGeometryTests.quadrants().base64EncodedString(),
                "IMGPROXY_FALLBACK_IMAGE_PATH": text.path, "IMGPROXY_FALLBACK_IMAGE_URL": fallback,
            ])
        let reply = try await ordered.get("/insecure/w:40/plain/\(missing)@png")
        #expect(reply.status == 200 && reply.header("Fallback-Image") == "1", "\(reply.status)")
        #expect(await ordered.stop() == 0, "\(ordered.stderr)")
        #expect(origin.count(for: "/files/quadrants.png") == 1)
    }
}
