import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `trim` and smart gravity (`g:sm`) through `webimage serve` run as a child process on 127.0.0.1, checked
/// by the sizes and pixels of the results.
@Suite("webimage serve: trim and smart gravity", .timeLimit(.minutes(5)))
struct ServeTrimAndSmartGravityTests {
    typealias Colour = (Int, Int, Int, Int)

    /// A PNG of `width`×`height` whose pixel at (x, y) is `colour(x, y)`.
    static func png(_ width: Int, _ height: Int, _ colour: (Int, Int) -> Colour) throws -> Data {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let (r, g, b, a) = colour(x, y)
                let index = (y * width + x) * 4
                pixels[index] = UInt8(r)
                pixels[index + 1] = UInt8(g)
                pixels[index + 2] = UInt8(b)
                pixels[index + 3] = UInt8(a)
            }
        }
        let frame = ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)
        let alpha = pixels.enumerated().contains { $0.offset % 4 == 3 && $0.element != 255 }
        return try PNGEncoder().encode(
            Image(format: .png, width: width, height: height, frames: [frame], hasAlpha: alpha))
    }

    /// A running origin with the test pictures and an unsigned `webimage serve`.
    struct Setup {
        let origin: LocalImageServer
        let serve: ServeProcess

        init() async throws {
            origin = try Fixtures.server()
            // White 300×200, a red 100×50 block at (150, 100): margins 150 left, 50 right, 100 top, 50 bottom.
            origin.setFile(
                name: "block.png",
                data: try png(300, 200) { x, y in
                    (150..<250).contains(x) && (100..<150).contains(y) ? (255, 0, 0, 255) : (255, 255, 255, 255)
                })
            origin.setFile(name: "white.png", data: try png(120, 80) { _, _ in (255, 255, 255, 255) })
            // A blue 40×20 sticker at (10, 50) on transparency.
            origin.setFile(
                name: "sticker.png",
                data: try png(100, 100) { x, y in
                    (10..<50).contains(x) && (50..<70).contains(y) ? (0, 0, 255, 255) : (0, 0, 0, 0)
                })
            // Flat grey 600×200 with a black-and-white checkerboard of 10-pixel squares over x 480..<580.
            origin.setFile(
                name: "patch.png",
                data: try png(600, 200) { x, y in
                    guard (480..<580).contains(x) else { return (128, 128, 128, 255) }
                    return (x / 10 + y / 10) % 2 == 0 ? (0, 0, 0, 255) : (255, 255, 255, 255)
                })
            // Grey 800×300 with a skin-toned disc at x 700 and one of the same channels reversed (bluish, as
            // colourful and as far from the grey) at x 100.
            origin.setFile(
                name: "discs.png",
                data: try png(800, 300) { x, y in
                    func inside(_ centreX: Int) -> Bool { (x - centreX) * (x - centreX) + (y - 150) * (y - 150) < 2500 }
                    if inside(700) { return (224, 172, 140, 255) }
                    if inside(100) { return (140, 172, 224, 255) }
                    return (175, 175, 175, 255)
                })
            serve = try await ServeProcess.start(["--allow-unsigned", "--allow-destination", "127.0.0.0/8"])
        }

        /// The decoded PNG result of `options` on `name`; a status other than 200 is recorded.
        func image(_ options: String, _ name: String) async throws -> Image {
            let reply = try await serve.get("/insecure/\(options)/plain/\(origin.url("/files/\(name)"))@png")
            try #require(
                reply.status == 200, "\(options): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
            return try ImageDecoderRegistry.shared.decode(reply.body)
        }

        func stop() async {
            #expect(await serve.stop() == 0)
            origin.shutdown()
        }
    }

    static func pixel(_ image: Image, _ x: Int, _ y: Int) -> Colour { ServeGeometryTests.pixel(image, x, y) }

    /// How many pixels of row `y` are within `tolerance` of `colour` in each of red, green and blue.
    static func count(_ image: Image, row y: Int, near colour: (Int, Int, Int), tolerance: Int = 8) -> Int {
        (0..<image.width).filter { x in
            let (r, g, b, _) = pixel(image, x, y)
            return abs(r - colour.0) <= tolerance && abs(g - colour.1) <= tolerance && abs(b - colour.2) <= tolerance
        }.count
    }

    @Test("trim cuts the background first, the sizes follow the trimmed image, equal_hor/ver cut the smaller margin")
    func trim() async throws {
        let setup = try await Setup()
        let cases: [(String, String, (Int, Int))] = [
            ("t:10", "block.png", (100, 50)), ("trim:10:fff", "block.png", (100, 50)),
            ("t:10/w:50", "block.png", (50, 25)), ("t:10/rs:fill:20:20", "block.png", (20, 20)),
            ("t:10::1", "block.png", (200, 50)), ("t:10::0:1", "block.png", (100, 100)),
            ("t:10::1:1", "block.png", (200, 100)),
            // Red is not the background here: the white around it is kept.
            ("t:10:f00", "block.png", (300, 200)),
            // All background: kept whole, as imgproxy does.
            ("t:10", "white.png", (120, 80)), ("t:10/w:60", "white.png", (60, 40)),
            // Transparency is magenta to trim, given or taken from the top left pixel.
            ("t:10:ff00ff", "sticker.png", (40, 20)), ("t:10", "sticker.png", (40, 20)),
        ]
        for (options, name, size) in cases {
            let image = try await setup.image(options, name)
            #expect(
                image.width == size.0 && image.height == size.1, "\(options) on \(name): \(image.width)×\(image.height)"
            )
        }
        let block = try await setup.image("t:10", "block.png")
        #expect(Self.count(block, row: 25, near: (255, 0, 0)) == 100, "only red is left")
        // equal_hor keeps 50 pixels either side: the block starts 100 from the left.
        let equal = try await setup.image("t:10::1", "block.png")
        #expect(Self.count(equal, row: 25, near: (255, 255, 255)) == 100)
        #expect(Self.pixel(equal, 99, 25) == (255, 255, 255, 255) && Self.pixel(equal, 100, 25) == (255, 0, 0, 255))
        await setup.stop()
    }

    @Test("g:sm keeps the busy patch and the skin-toned disc where centre gravity keeps flat grey")
    func smartGravity() async throws {
        let setup = try await Setup()
        func checker(_ image: Image, row: Int) -> Int {
            Self.count(image, row: row, near: (0, 0, 0), tolerance: 40)
                + Self.count(image, row: row, near: (255, 255, 255), tolerance: 40)
        }
        // 600×200 filled into 100×100: scaled to 300×100, the patch is x 240..<290, outside the middle.
        let smart = try await setup.image("rs:fill:100:100/g:sm", "patch.png")
        #expect(smart.width == 100 && smart.height == 100)
        #expect(checker(smart, row: 50) >= 20, "\(checker(smart, row: 50)) checker pixels")
        let centre = try await setup.image("rs:fill:100:100/g:ce", "patch.png")
        #expect(checker(centre, row: 50) == 0, "the middle of the picture is flat grey")
        // crop's own smart gravity, and g:sm as the crop's gravity, before any scale: the whole patch.
        for options in ["c:150:200:sm", "c:150:0:sm", "crop:150:200/gravity:sm"] {
            let cropped = try await setup.image(options, "patch.png")
            #expect(
                cropped.width == 150 && checker(cropped, row: 100) == 100, "\(options): \(checker(cropped, row: 100))")
        }
        // 800×300 filled into 150×150: scaled to 400×150, each disc 50 across, the window holds one.
        let discs = try await setup.image("rs:fill:150:150/g:sm", "discs.png")
        #expect(Self.count(discs, row: 75, near: (224, 172, 140)) >= 40, "the skin-toned disc is kept")
        #expect(Self.count(discs, row: 75, near: (140, 172, 224)) == 0)
        await setup.stop()
    }

    @Test("a bad trim or a smart gravity where none is taken is 400 naming the option")
    func refusals() async throws {
        let setup = try await Setup()
        for (options, named) in [
            ("t:300", "option t"), ("trim:10:red", "option trim"), ("t:10:fff:maybe", "equal_hor"),
            ("g:sm:0:5", "no offsets"), ("ex:1:sm", "only for crops"), ("exar:1:sm", "only for crops"),
        ] {
            let reply = try await setup.serve.get(
                "/insecure/\(options)/plain/\(setup.origin.url("/files/block.png"))@png")
            let body = String(decoding: reply.body, as: UTF8.self)
            #expect(reply.status == 400 && body.contains(named), "\(options): \(reply.status) \(body)")
        }
        await setup.stop()
    }
}
