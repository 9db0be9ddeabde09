import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `watermark` through `webimage serve` run as a child process on 127.0.0.1 with `--watermark-path` (or
/// IMGPROXY_WATERMARK_PATH): a red 20×20 square on a white 200×100 source, read back from the PNG result.
@Suite("webimage serve: watermark", .timeLimit(.minutes(5)))
struct ServeWatermarkTests {
    typealias Colour = (Int, Int, Int, Int)

    /// A `width`×`height` PNG of one opaque colour.
    static func png(_ width: Int, _ height: Int, _ colour: (UInt8, UInt8, UInt8)) throws -> Data {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for index in stride(from: 0, to: pixels.count, by: 4) {
            (pixels[index], pixels[index + 1], pixels[index + 2]) = colour
        }
        let frame = ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)
        return try PNGEncoder().encode(Image(format: .png, width: width, height: height, frames: [frame]))
    }

    static func pixel(_ image: Image, _ x: Int, _ y: Int) -> Colour {
        let frame = image.frames[0]
        let index = y * frame.bytesPerRow + x * 4
        let p = frame.pixels
        return (Int(p[index]), Int(p[index + 1]), Int(p[index + 2]), Int(p[index + 3]))
    }

    /// A folder with the red watermark at `mark.png`, and an origin serving the white source.
    struct Files {
        let folder: URL
        let origin: LocalImageServer

        init() throws {
            folder = try CLIRunner.temporaryFolder()
            try ServeWatermarkTests.png(20, 20, (255, 0, 0)).write(to: folder.appendingPathComponent("mark.png"))
            origin = try Fixtures.server()
            origin.setFile(name: "white.png", data: try ServeWatermarkTests.png(200, 100, (255, 255, 255)))
        }

        var mark: String { folder.appendingPathComponent("mark.png").path }
        var source: String { origin.url("/files/white.png").absoluteString }

        func close() {
            origin.shutdown()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    static let unsigned = ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"]

    /// The decoded PNG result of `options` on the white source.
    static func result(_ serve: ServeProcess, _ options: String, _ files: Files) async throws -> Image {
        let reply = try await serve.get("/insecure/\(options)/plain/\(files.source)@png")
        try #require(reply.status == 200, "\(options): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        return try ImageDecoderRegistry.shared.decode(reply.body)
    }

    @Test("a red opaque watermark at soea is red at the bottom right and white elsewhere; opacity 0.5 mixes it")
    func corner() async throws {
        let files = try Files()
        defer { files.close() }
        let serve = try await ServeProcess.start(Self.unsigned + ["--watermark-path", files.mark])
        let opaque = try await Self.result(serve, "wm:1:soea", files)
        #expect(opaque.width == 200 && opaque.height == 100)
        #expect(Self.pixel(opaque, 199, 99) == (255, 0, 0, 255))
        #expect(Self.pixel(opaque, 180, 80) == (255, 0, 0, 255))
        #expect(Self.pixel(opaque, 179, 80) == (255, 255, 255, 255))
        #expect(Self.pixel(opaque, 180, 79) == (255, 255, 255, 255))
        #expect(Self.pixel(opaque, 0, 0) == (255, 255, 255, 255))

        let half = try await Self.result(serve, "wm:0.5:soea", files)
        #expect(Self.pixel(half, 199, 99) == (255, 128, 128, 255))
        #expect(Self.pixel(half, 0, 0) == (255, 255, 255, 255))

        // After padding, on the finished canvas: the mark sits in the padded corner (transparent in a PNG),
        // the offsets times dpr.
        let padded = try await Self.result(serve, "pd:10/wm:1:soea:5:5/dpr:2/el:1", files)
        #expect(padded.width == 440 && padded.height == 240)
        #expect(Self.pixel(padded, 429, 229) == (255, 0, 0, 255))
        #expect(Self.pixel(padded, 430, 230) == (0, 0, 0, 0))
        #expect(Self.pixel(padded, 410, 210) == (255, 0, 0, 255))
        #expect(Self.pixel(padded, 409, 209) == (255, 255, 255, 255))
        // Without enlarge the source cannot grow, and imgproxy's dpr scale falls back to 1 for the offsets too.
        let unscaled = try await Self.result(serve, "pd:10/wm:1:soea:5:5/dpr:2", files)
        #expect(unscaled.width == 220 && unscaled.height == 120)
        #expect(Self.pixel(unscaled, 214, 114) == (255, 0, 0, 255))
        #expect(Self.pixel(unscaled, 215, 115) == (0, 0, 0, 0))
        #expect(Self.pixel(unscaled, 195, 95) == (255, 0, 0, 255))
        #expect(Self.pixel(unscaled, 194, 94) == (255, 255, 255, 255))
        #expect(await serve.stop() == 0, "\(serve.stderr)")
    }

    @Test("IMGPROXY_WATERMARK_PATH and IMGPROXY_WATERMARK_OPACITY configure it too; the base opacity multiplies")
    func environment() async throws {
        let files = try Files()
        defer { files.close() }
        let serve = try await ServeProcess.start(
            Self.unsigned,
            environment: ["IMGPROXY_WATERMARK_PATH": files.mark, "IMGPROXY_WATERMARK_OPACITY": "0.5"])
        let image = try await Self.result(serve, "wm:1:nowe", files)
        #expect(Self.pixel(image, 0, 0) == (255, 128, 128, 255))
        #expect(Self.pixel(image, 20, 20) == (255, 255, 255, 255))
        #expect(await serve.stop() == 0, "\(serve.stderr)")
    }

    @Test("without a watermark file, wm is accepted and draws nothing, as in imgproxy")
    func unconfigured() async throws {
        let files = try Files()
        defer { files.close() }
        let serve = try await ServeProcess.start(Self.unsigned)
        let image = try await Self.result(serve, "wm:1:soea", files)
        #expect(Self.pixel(image, 199, 99) == (255, 255, 255, 255))
        #expect(await serve.stop() == 0, "\(serve.stderr)")
    }

    @Test("a missing or undecodable watermark file stops the start with exit 1 and a message naming it")
    func badFiles() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("missing.png").path
        let text = folder.appendingPathComponent("mark.png")
        try Data("not an image".utf8).write(to: text)
        for (arguments, environment, path) in [
            (["--watermark-path", missing], [:], missing),
            (["--watermark-path", text.path], [:], text.path),
            ([], ["IMGPROXY_WATERMARK_PATH": missing], missing),
        ] as [([String], [String: String], String)] {
            // A server that started anyway is killed, so the failure shows instead of a hang.
            let run = try await CLIRunner.run(
                "webimage", ["serve", "--allow-unsigned", "--port", "0"] + arguments, environment: environment,
                killAfterMilliseconds: 120_000)
            #expect(run.status == 1, "\(arguments) \(environment): \(run.stdout) \(run.stderr)")
            #expect(run.stderr.contains("watermark file '\(path)'"), "\(run.stderr)")
            #expect(!run.stdout.contains("listening"), "\(run.stdout)")
        }
        let opacity = try await CLIRunner.run(
            "webimage", ["serve", "--allow-unsigned", "--port", "0"], environment: ["IMGPROXY_WATERMARK_OPACITY": "2"],
            killAfterMilliseconds: 120_000)
        #expect(opacity.status != 0)
        #expect(opacity.stderr.contains("opacity"), "\(opacity.stderr)")
    }
}
