import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// Animated sources through `webimage serve` run as a child process on 127.0.0.1: WebP, GIF and JPEG XL
/// results keep every frame (resized alike, delays and loop count kept), JPEG and PNG get the first frame,
/// and `Accept` never chooses GIF or JPEG XL.
@Suite("webimage serve: animations, GIF and JPEG XL results", .timeLimit(.minutes(5)))
struct ServeAnimationTests {
    typealias Colour = (Int, Int, Int)
    /// Each frame's background; frame k also has a white 40×40 square at x = 20k, y = 20.
    static let backgrounds: [Colour] = [(255, 0, 0), (0, 160, 0), (0, 0, 255), (255, 255, 0)]
    static let delays: [TimeInterval] = [0.1, 0.2, 0.3, 0.5]

    /// A 120×80 GIF of four frames (see `backgrounds`) that plays 5 times, made with `GIFEncoder`.
    static func animation() throws -> Data {
        let frames = backgrounds.indices.map { index in
            var pixels = [UInt8](repeating: 255, count: 120 * 80 * 4)
            for y in 0..<80 {
                for x in 0..<120 where !((index * 20)..<(index * 20 + 40)).contains(x) || !(20..<60).contains(y) {
                    let offset = (y * 120 + x) * 4
                    let colour = backgrounds[index]
                    (pixels[offset], pixels[offset + 1], pixels[offset + 2]) =
                        (UInt8(colour.0), UInt8(colour.1), UInt8(colour.2))
                }
            }
            return ImageFrame(width: 120, height: 80, bytesPerRow: 480, pixels: pixels, duration: delays[index])
        }
        return try GIFEncoder().encode(Image(format: .gif, width: 120, height: 80, frames: frames, loopCount: 5))
    }

    /// A running origin serving the animation at `/files/dance.gif`, and `webimage serve`.
    struct Setup {
        let origin: LocalImageServer
        let serve: ServeProcess

        init(_ arguments: [String] = []) async throws {
            origin = try Fixtures.server()
            origin.setFile(name: "dance.gif", data: try ServeAnimationTests.animation())
            serve = try await ServeProcess.start(
                ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"] + arguments)
        }

        /// `options` on the animation, with `ext` after the source when given.
        func get(_ options: String, ext: String? = nil, headers: [String: String] = [:]) async throws
            -> ServeProcess.Reply
        {
            let source = origin.url("/files/dance.gif").absoluteString + (ext.map { "@\($0)" } ?? "")
            return try await serve.get("/insecure/\(options)/plain/\(source)", headers: headers)
        }

        /// The decoded 200 answer to `options`, checked to have `contentType`.
        func image(
            _ options: String, ext: String? = nil, headers: [String: String] = [:], contentType: String
        ) async throws -> Image {
            let reply = try await get(options, ext: ext, headers: headers)
            try #require(
                reply.status == 200, "\(options): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
            #expect(reply.header("Content-Type") == contentType, "\(options)")
            return try ImageDecoderRegistry.shared.decode(reply.body)
        }

        func stop() async {
            #expect(await serve.stop() == 0)
            origin.shutdown()
        }
    }

    /// Whether the pixel at (`x`, `y`) of `frame` is within `tolerance` of `colour` in each channel.
    static func pixel(_ frame: ImageFrame, _ x: Int, _ y: Int, is colour: Colour, tolerance: Int = 24) -> Bool {
        let offset = y * frame.bytesPerRow + x * 4
        let actual = (Int(frame.pixels[offset]), Int(frame.pixels[offset + 1]), Int(frame.pixels[offset + 2]))
        return abs(actual.0 - colour.0) <= tolerance && abs(actual.1 - colour.1) <= tolerance
            && abs(actual.2 - colour.2) <= tolerance
    }

    /// Frame `index` of a 50×33 result shows that frame's background at the bottom right and its square where
    /// only that frame has one.
    static func checkFrame(_ image: Image, _ index: Int, _ label: String) {
        let frame = image.frames[index]
        // Source (110, 70): never under a square.
        #expect(pixel(frame, 45, 28, is: backgrounds[index]), "\(label) frame \(index): background")
        // Source (20k + 20, 40): inside frame k's square, outside the squares of frames k ± 2 and beyond.
        #expect(pixel(frame, (index * 20 + 20) * 50 / 120, 16, is: (255, 255, 255)), "\(label) frame \(index): square")
    }

    @Test("f:webp, f:gif and f:jxl keep every frame, resized alike, with their delays and the loop count")
    func animatedResults() async throws {
        let setup = try await Setup()
        for (format, contentType) in [("webp", "image/webp"), ("gif", "image/gif"), ("jxl", "image/jxl")] {
            let image = try await setup.image("rs:fit:50:50/f:\(format)", contentType: contentType)
            #expect(image.width == 50 && image.height == 33, "\(format): \(image.width)×\(image.height)")
            try #require(image.frames.count == 4, "\(format): \(image.frames.count) frames")
            #expect(image.frameCount == 4)
            #expect(image.frames.map(\.duration) == Self.delays, "\(format)")
            #expect(image.loopCount == 5, "\(format): loop count \(image.loopCount)")
            for index in [0, 2, 3] { Self.checkFrame(image, index, format) }
            // Frame 2's square is where frame 0 has background: the later frame is not the first one again.
            #expect(Self.pixel(image.frames[2], 25, 16, is: (255, 255, 255)))
            #expect(Self.pixel(image.frames[0], 25, 16, is: Self.backgrounds[0]))
        }
        // The extension spelling, a crop, and a lossless JPEG XL.
        let filled = try await setup.image("rs:fill:40:40", ext: "gif", contentType: "image/gif")
        #expect(filled.width == 40 && filled.height == 40 && filled.frames.count == 4)
        #expect(filled.frames.map(\.duration) == Self.delays)
        let lossless = try await setup.image("rs:fit:50:50/q:100/f:jxl", contentType: "image/jxl")
        #expect(lossless.frames.count == 4 && lossless.frames.map(\.duration) == Self.delays)
        for index in lossless.frames.indices { Self.checkFrame(lossless, index, "lossless jxl") }
        await setup.stop()
    }

    @Test("f:jpg and f:png get the first frame; Accept never chooses GIF or JPEG XL")
    func stillResults() async throws {
        // WebP detection on (off by default, as in imgproxy), so Accept may choose WebP.
        let setup = try await Setup(["--enable-webp-detection"])
        for (format, contentType) in [("jpg", "image/jpeg"), ("png", "image/png")] {
            let image = try await setup.image("rs:fit:50:50/f:\(format)", contentType: contentType)
            #expect(image.frames.count == 1 && image.frameCount == 1, "\(format): \(image.frameCount) frames")
            #expect(image.width == 50 && image.height == 33)
            Self.checkFrame(image, 0, format)
        }
        let negotiated = try await setup.get("rs:fit:50:50", headers: ["Accept": "image/jxl,image/gif,image/*"])
        #expect(negotiated.status == 200 && negotiated.header("Content-Type") == "image/jpeg")
        #expect(negotiated.header("Vary") == "Accept")
        // WebP, when accepted, animates.
        let webP = try await setup.image(
            "rs:fit:50:50", headers: ["Accept": "image/jxl,image/webp"], contentType: "image/webp")
        #expect(webP.frames.count == 4)
        await setup.stop()
    }

    @Test("An animation whose frames together pass the pixel limit is refused for an animated result, never cut short")
    func limits() async throws {
        // 120×80 is 9,600 pixels a frame, 38,400 for the four.
        let setup = try await Setup(["--max-source-pixels", "20000"])
        for format in ["webp", "gif", "jxl"] {
            let reply = try await setup.get("rs:fit:50:50/f:\(format)")
            #expect(reply.status == 422, "\(format): \(reply.status)")
            #expect(String(decoding: reply.body, as: UTF8.self).contains("animation has more pixels"), "\(format)")
        }
        #expect(try await setup.get("rs:fit:50:50/f:jpg").status == 200, "the first frame alone fits")
        await setup.stop()
    }
}
