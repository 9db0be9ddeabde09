import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// imgproxy's effect options through `webimage serve` run as a child process on 127.0.0.1, checked by the
/// result's pixels: `background` (flattening and the fill of padding), `blur`, `sharpen`, `pixelate` and
/// `flip`. Sources are PNGs made here; the quadrant picture is `ServeGeometryTests`'.
@Suite("webimage serve: effects", .timeLimit(.minutes(5)))
struct ServeEffectsTests {
    typealias Colour = ServeGeometryTests.Colour

    static func png(width: Int, height: Int, _ colour: (Int, Int) -> [UInt8]) throws -> Data {
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width { pixels += colour(x, y) }
        }
        let frame = ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)
        let hasAlpha = stride(from: 3, to: pixels.count, by: 4).contains { pixels[$0] != 255 }
        return try PNGEncoder().encode(
            Image(format: .png, width: width, height: height, frames: [frame], hasAlpha: hasAlpha))
    }

    /// The origin and server of `ServeGeometryTests`, with the effect tests' sources added: `alpha.png`
    /// (100×50, the left half transparent, the right half opaque green), `edge.png` (100×50, black left
    /// of x = 50, white right of it), `grey-edge.png` (the same in greys 100 and 160) and `gradient.png`
    /// (100×60, every pixel its own colour).
    static func setup() async throws -> ServeGeometryTests.Setup {
        let setup = try await ServeGeometryTests.Setup()
        setup.origin.setFile(
            name: "alpha.png",
            data: try png(width: 100, height: 50) { x, _ in x < 50 ? [0, 0, 255, 0] : [0, 255, 0, 255] })
        setup.origin.setFile(
            name: "edge.png",
            data: try png(width: 100, height: 50) { x, _ in x < 50 ? [0, 0, 0, 255] : [255, 255, 255, 255] })
        setup.origin.setFile(
            name: "grey-edge.png",
            data: try png(width: 100, height: 50) { x, _ in x < 50 ? [100, 100, 100, 255] : [160, 160, 160, 255] })
        setup.origin.setFile(
            name: "gradient.png",
            data: try png(width: 100, height: 60) { x, y in [UInt8(x * 2), UInt8(y * 4), UInt8((x + y) % 256), 255] })
        return setup
    }

    static func pixel(_ image: Image, _ x: Int, _ y: Int) -> Colour { ServeGeometryTests.pixel(image, x, y) }

    @Test("bg flattens alpha onto its colour, R:G:B or hex, as JPEG or PNG; without it PNG keeps alpha")
    func background() async throws {
        let setup = try await Self.setup()
        let red = (255, 0, 0, 255)
        let green = ServeGeometryTests.green
        for (options, format) in [("bg:255:0:0", "jpg"), ("bg:ff0000", "png"), ("background:f00", "webp")] {
            let image = try await setup.image(options, "alpha.png", format: format)
            ServeGeometryTests.check(
                image, "\(options) as \(format)", size: (100, 50), [(10, 25, red), (90, 25, green)])
            #expect(!image.hasAlpha || Self.pixel(image, 10, 25).3 == 255, "\(options) as \(format) is opaque")
        }
        let kept = try await setup.image("w:100", "alpha.png", format: "png")
        #expect(Self.pixel(kept, 10, 25).3 == 0, "without bg the transparent half stays transparent")
        // Without bg a JPEG is flattened onto white, imgproxy's default.
        let white = try await setup.image("w:100", "alpha.png", format: "jpg")
        ServeGeometryTests.check(white, "no bg as jpg", size: (100, 50), [(10, 25, ServeGeometryTests.white)])
        await setup.stop()
    }

    @Test("bg is the colour padding and extension fill with, opaque even in PNG")
    func backgroundFill() async throws {
        let setup = try await Self.setup()
        let blue = ServeGeometryTests.blue
        let padded = try await setup.image("pd:10/bg:0:0:255", format: "png")
        ServeGeometryTests.check(
            padded, "pd:10/bg", size: (220, 120), [(3, 3, blue), (215, 60, blue), (20, 20, ServeGeometryTests.red)])
        #expect(Self.pixel(padded, 3, 3).3 == 255)
        let extended = try await setup.image("rs:fit:200:200:0:1/bg:0000ff", format: "png")
        ServeGeometryTests.check(extended, "ex/bg", size: (200, 200), [(100, 10, blue), (100, 190, blue)])
        let clear = try await setup.image("pd:10", format: "png")
        #expect(Self.pixel(clear, 3, 3).3 == 0, "without bg padding is transparent in PNG")
        await setup.stop()
    }

    @Test("blur grades a sharp edge, symmetrically, and leaves areas far from it alone")
    func blur() async throws {
        let setup = try await Self.setup()
        let sharp = try await setup.image("w:100", "edge.png")
        #expect(Self.pixel(sharp, 49, 25).0 == 0 && Self.pixel(sharp, 50, 25).0 == 255)
        for options in ["bl:2", "blur:2"] {
            let image = try await setup.image(options, "edge.png")
            let left = Self.pixel(image, 49, 25).0
            let right = Self.pixel(image, 50, 25).0
            #expect(left > 20 && left < 128 && right > 128 && right < 235, "\(options): \(left), \(right)")
            #expect(abs(left + right - 255) <= 2, "\(options): the edge blurs symmetrically")
            #expect(Self.pixel(image, 10, 25).0 == 0 && Self.pixel(image, 90, 25).0 == 255)
        }
        await setup.stop()
    }

    @Test("sharpen darkens the dark side of an edge and lightens the light side; flat areas stay")
    func sharpen() async throws {
        let setup = try await Self.setup()
        let image = try await setup.image("sh:1", "grey-edge.png")
        let dark = Self.pixel(image, 49, 25)
        let light = Self.pixel(image, 50, 25)
        #expect(dark.0 < 95 && light.0 > 165, "\(dark), \(light)")
        #expect(dark.0 == dark.1 && dark.1 == dark.2, "grey stays grey: \(dark)")
        #expect(Self.pixel(image, 10, 25).0 == 100 && Self.pixel(image, 90, 25).0 == 160)
        await setup.stop()
    }

    @Test("pixelate makes equal pixels within each block and different blocks apart")
    func pixelate() async throws {
        let setup = try await Self.setup()
        let image = try await setup.image("pix:10", "gradient.png")
        #expect(image.width == 100 && image.height == 60)
        var blocks = Set<String>()
        for top in stride(from: 0, to: 60, by: 10) {
            for left in stride(from: 0, to: 100, by: 10) {
                let first = Self.pixel(image, left, top)
                var uniform = true
                for y in top..<(top + 10) {
                    for x in left..<(left + 10) where Self.pixel(image, x, y) != first { uniform = false }
                }
                #expect(uniform, "the block at (\(left), \(top)) is one colour")
                blocks.insert("\(first)")
            }
        }
        #expect(blocks.count == 60, "every block has its own mean")
        await setup.stop()
    }

    @Test("flip mirrors horizontally, vertically or both, after rotate; crop gravity sees the flipped image")
    func flip() async throws {
        let setup = try await Self.setup()
        let (r, g, b, y) = (
            ServeGeometryTests.red, ServeGeometryTests.green, ServeGeometryTests.blue, ServeGeometryTests.yellow
        )
        let cases: [(String, (Int, Int), [(Int, Int, Colour)])] = [
            ("fl:1", (200, 100), [(20, 20, g), (180, 20, r), (20, 80, y), (180, 80, b)]),
            ("flip:0:1", (200, 100), [(20, 20, b), (180, 20, y), (20, 80, r), (180, 80, g)]),
            ("fl:t:t", (200, 100), [(20, 20, y), (180, 20, b), (20, 80, g), (180, 80, r)]),
            // Turned clockwise: blue top left, red top right; then mirrored left to right.
            ("rot:90/fl:1", (100, 200), [(20, 20, r), (80, 20, b), (20, 180, g), (80, 180, y)]),
            // The crop's west gravity keeps the left of the flipped image: green over yellow.
            ("fl:1/c:100:100:we", (100, 100), [(20, 20, g), (80, 80, y)]),
        ]
        for (options, size, colours) in cases {
            ServeGeometryTests.check(try await setup.image(options), options, size: size, colours)
        }
        await setup.stop()
    }

    @Test("a bad effect argument is 400 naming the option")
    func badArguments() async throws {
        let setup = try await Self.setup()
        for (options, named) in [
            ("bl:1000", "bl"), ("sh:-1", "sh"), ("pix:x", "pix"), ("bg:300:0:0", "bg"), ("fl:2", "fl"),
        ] {
            let (status, body) = try await setup.answer(options)
            // The option's own sentence, not the one for an option the server does not know.
            #expect(status == 400 && body.hasPrefix("option \(named): "), "\(options): \(status) \(body)")
        }
        await setup.stop()
    }
}
