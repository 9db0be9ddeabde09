import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// imgproxy's size and geometry options through `webimage serve` run as a child process on 127.0.0.1,
/// checked by the result's pixels: a 200×100 PNG of four 100×50 quadrants (red top left, green top right,
/// blue bottom left, yellow bottom right) tells which part of the source a crop kept and where an
/// extension put it.
@Suite("webimage serve: sizes and geometry", .timeLimit(.minutes(5)))
struct ServeGeometryTests {
    static let red = (255, 0, 0, 255)
    static let green = (0, 255, 0, 255)
    static let blue = (0, 0, 255, 255)
    static let yellow = (255, 255, 0, 255)
    static let white = (255, 255, 255, 255)
    static let clear = (0, 0, 0, 0)

    typealias Colour = (Int, Int, Int, Int)

    /// The quadrant picture, as PNG.
    static func quadrants() throws -> Data {
        var pixels = [UInt8](repeating: 0, count: 200 * 100 * 4)
        for y in 0..<100 {
            for x in 0..<200 {
                let colour = y < 50 ? (x < 100 ? red : green) : (x < 100 ? blue : yellow)
                let index = (y * 200 + x) * 4
                pixels[index] = UInt8(colour.0)
                pixels[index + 1] = UInt8(colour.1)
                pixels[index + 2] = UInt8(colour.2)
                pixels[index + 3] = 255
            }
        }
        let frame = ImageFrame(width: 200, height: 100, bytesPerRow: 800, pixels: pixels)
        return try PNGEncoder().encode(Image(format: .png, width: 200, height: 100, frames: [frame]))
    }

    /// A running origin with the quadrants at `/files/quadrants.png` and an unsigned `webimage serve`.
    struct Setup {
        let origin: LocalImageServer
        let serve: ServeProcess

        init() async throws {
            origin = try Fixtures.server()
            origin.setFile(name: "quadrants.png", data: try ServeGeometryTests.quadrants())
            serve = try await ServeProcess.start(["--allow-unsigned", "--allow-destination", "127.0.0.0/8"])
        }

        func source(_ name: String = "quadrants.png") -> String { origin.url("/files/\(name)").absoluteString }

        /// The decoded result of `options` on `name`, as `format`; a status other than 200 is recorded.
        func image(_ options: String, _ name: String = "quadrants.png", format: String = "png") async throws -> Image {
            let reply = try await serve.get("/insecure/\(options)/plain/\(source(name))@\(format)")
            try #require(
                reply.status == 200, "\(options): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
            return try ImageDecoderRegistry.shared.decode(reply.body)
        }

        /// The status and body of `options` on the quadrants.
        func answer(_ options: String) async throws -> (Int, String) {
            let reply = try await serve.get("/insecure/\(options)/plain/\(source())@png")
            return (reply.status, String(decoding: reply.body, as: UTF8.self))
        }

        func stop() async {
            #expect(await serve.stop() == 0)
            origin.shutdown()
        }
    }

    static func pixel(_ image: Image, _ x: Int, _ y: Int) -> Colour {
        guard let frame = image.frames.first, x < frame.width, y < frame.height else { return (-1, -1, -1, -1) }
        let index = y * frame.bytesPerRow + x * 4
        let p = frame.pixels
        return (Int(p[index]), Int(p[index + 1]), Int(p[index + 2]), Int(p[index + 3]))
    }

    /// Within 40 per channel (JPEG and Lanczos move colours a little), alpha exactly when it is 0.
    static func near(_ a: Colour, _ b: Colour) -> Bool {
        abs(a.0 - b.0) <= 40 && abs(a.1 - b.1) <= 40 && abs(a.2 - b.2) <= 40 && abs(a.3 - b.3) <= 40
    }

    /// Expects `image` to be `width`×`height` with `colours` at the given points.
    static func check(
        _ image: Image, _ label: String, size: (Int, Int), _ colours: [(Int, Int, Colour)],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            image.width == size.0 && image.height == size.1, "\(label): \(image.width)×\(image.height)",
            sourceLocation: sourceLocation)
        for (x, y, colour) in colours {
            let found = pixel(image, x, y)
            #expect(
                near(found, colour), "\(label) at (\(x), \(y)): \(found), not \(colour)", sourceLocation: sourceLocation
            )
        }
    }

    @Test("sizes: w, h, s, rs with five arguments, rt, mw, mh, z, dpr and el, each checked by its pixels")
    func sizes() async throws {
        let setup = try await Setup()
        let (r, g, b, y) = (Self.red, Self.green, Self.blue, Self.yellow)
        let cases: [(String, (Int, Int), [(Int, Int, Colour)])] = [
            ("w:100", (100, 50), [(20, 10, r), (80, 10, g), (20, 40, b), (80, 40, y)]),
            ("height:20", (40, 20), [(5, 3, r), (35, 3, g), (5, 17, b), (35, 17, y)]),
            ("rs:fit:20:50", (20, 10), [(2, 2, r), (17, 2, g), (2, 7, b), (17, 7, y)]),  // not 19×10
            ("s:100:50", (100, 50), [(20, 10, r), (80, 40, y)]),
            ("size:400:200:1", (400, 200), [(40, 20, r), (360, 180, y)]),
            ("rt:force/s:100:100", (100, 100), [(20, 20, r), (80, 20, g), (20, 80, b), (80, 80, y)]),
            ("resizing_type:fill/w:50/h:50", (50, 50), [(5, 5, r), (45, 45, y)]),
            ("w:400", (200, 100), [(20, 10, r), (180, 90, y)]),  // never enlarged without el
            ("w:400/el:1", (400, 200), [(40, 20, r), (360, 180, y)]),
            ("w:400/enlarge:t", (400, 200), [(40, 20, r), (360, 180, y)]),
            ("w:50/dpr:2", (100, 50), [(20, 10, r), (80, 40, y)]),
            ("w:100/z:2", (200, 100), [(20, 10, r), (180, 90, y)]),
            ("w:100/zoom:2:1", (200, 50), [(20, 10, r), (180, 40, y)]),
            // mw and mh scale past the box; fit keeps the box and crops around the centre.
            ("rs:fit:50:50", (50, 25), [(5, 5, r), (45, 20, y)]),
            ("rs:fit:50:50/mw:100", (50, 50), [(10, 10, r), (40, 10, g), (10, 40, b), (40, 40, y)]),
            ("rs:fit:50:50/min-height:50", (50, 50), [(10, 10, r), (40, 40, y)]),
            // rs's fifth argument is extend: the 300×300 canvas has the image in its middle.
            ("rs:fit:300:300:0:1", (300, 300), [(5, 5, Self.clear), (70, 120, r), (230, 180, y)]),
        ]
        for (options, size, colours) in cases {
            Self.check(try await setup.image(options), options, size: size, colours)
        }
        // The issue's photo: 640×427 at w:300 is 300×200, as in imgproxy, not 299×200.
        let photo = try await setup.image("w:300", "rocket-cmyk.jpg")
        #expect(photo.width == 300 && photo.height == 200, "\(photo.width)×\(photo.height)")
        await setup.stop()
    }

    @Test("gravity: fill crops at each of the nine directions, offsets and a focus point; crop has its own")
    func gravityAndCrop() async throws {
        let setup = try await Setup()
        let (r, g, b, y) = (Self.red, Self.green, Self.blue, Self.yellow)
        let cases: [(String, (Int, Int), [(Int, Int, Colour)])] = [
            // 50×50 out of the image scaled to 100×50: the left or right half.
            ("rs:fill:50:50/g:we", (50, 50), [(10, 10, r), (10, 40, b)]),
            ("rs:fill:50:50/g:ea", (50, 50), [(40, 10, g), (40, 40, y)]),
            ("rs:fill:50:50/g:nowe", (50, 50), [(10, 10, r)]),
            ("rs:fill:50:50/g:soea", (50, 50), [(40, 40, y)]),
            ("rs:fill:50:50/g:ce", (50, 50), [(10, 10, r), (40, 10, g)]),
            // 200×50 out of the unscaled image: the top or bottom half.
            ("rs:fill:200:50/g:no", (200, 50), [(20, 20, r), (180, 20, g)]),
            ("rs:fill:200:50/g:so", (200, 50), [(20, 20, b), (180, 20, y)]),
            ("rs:fill:200:50/g:noea", (200, 50), [(20, 20, r), (180, 20, g)]),
            ("rs:fill:200:50/g:sowe", (200, 50), [(20, 20, b), (180, 20, y)]),
            // Offsets: pixels from the anchored edge, or a fraction of the side.
            ("rs:fill:200:50/g:no:0:50", (200, 50), [(20, 20, b)]),
            ("rs:fill:200:50/g:ce:0:0.5", (200, 50), [(20, 20, b)]),
            ("rs:fill:200:50/g:so:0:50", (200, 50), [(20, 20, r)]),
            // A focus point, as fractions of the image.
            ("rs:fill:200:50/g:fp:0.5:0.9", (200, 50), [(20, 20, b), (180, 20, y)]),
            ("rs:fill:200:50/g:fp:0.5:0.1", (200, 50), [(20, 20, r), (180, 20, g)]),
            // crop before the scale, absolute or relative, with its own gravity or the general one.
            ("c:100:50:nowe", (100, 50), [(50, 25, r)]),
            ("c:100:50:noea", (100, 50), [(50, 25, g)]),
            ("c:100:50:sowe", (100, 50), [(50, 25, b)]),
            ("crop:0.5:0.5:soea", (100, 50), [(50, 25, y)]),
            ("c:100:50/g:sowe", (100, 50), [(50, 25, b)]),
            ("c:40:20:nowe:110:0", (40, 20), [(20, 10, g)]),
            ("c:40:20:nowe:0.55:0.6", (40, 20), [(20, 10, y)]),
            ("c:20:20:fp:0.75:0.25", (20, 20), [(10, 10, g)]),
            ("c:100:50:soea/w:50", (50, 25), [(25, 12, y)]),
        ]
        for (options, size, colours) in cases {
            Self.check(try await setup.image(options), options, size: size, colours)
        }
        await setup.stop()
    }

    @Test("extend and extend_aspect_ratio: the image placed by gravity on transparent or, for JPEG, white")
    func extend() async throws {
        let setup = try await Setup()
        let (r, y, clear, white) = (Self.red, Self.yellow, Self.clear, Self.white)
        let cases: [(String, String, (Int, Int), [(Int, Int, Colour)])] = [
            ("rs:fit:400:200/ex:1", "png", (400, 200), [(10, 10, clear), (110, 60, r), (290, 140, y)]),
            ("rs:fit:400:200/ex:1:nowe", "png", (400, 200), [(10, 10, r), (190, 90, y), (390, 190, clear)]),
            ("rs:fit:400:200/extend:1:soea", "png", (400, 200), [(10, 10, clear), (210, 110, r), (390, 190, y)]),
            ("rs:fit:400:200/ex:1:nowe:20:10", "png", (400, 200), [(10, 5, clear), (30, 20, r), (210, 105, y)]),
            ("rs:fit:400:200/ex:1", "jpg", (400, 200), [(10, 10, white), (110, 60, r), (290, 140, y)]),
            ("s:400:200:0:1:no", "png", (400, 200), [(110, 10, r), (290, 90, y), (200, 150, clear)]),
            ("rs:fit:400:400/exar:1", "png", (200, 200), [(10, 10, clear), (10, 60, r), (190, 140, y)]),
            (
                "rs:fit:400:400/extend_aspect_ratio:1:no", "png", (200, 200),
                [(10, 10, r), (190, 90, y), (100, 150, clear)]
            ),
            ("rs:fit:400:400/exar:1:so", "jpg", (200, 200), [(10, 10, white), (10, 110, r), (190, 190, y)]),
        ]
        for (options, format, size, colours) in cases {
            Self.check(try await setup.image(options, format: format), "\(options)@\(format)", size: size, colours)
        }
        // Without a format and WebP, an opaque JPEG stays JPEG: its background is white, not alpha that would
        // turn the answer into a PNG (imgproxy keeps a JPEG source's format). 640×427 fits 400×200 as 300×200.
        let negotiated = try await setup.serve.get(
            "/insecure/rs:fit:400:200/ex:1/plain/\(setup.source("rocket-cmyk.jpg"))", headers: ["Accept": "*/*"])
        #expect(negotiated.header("Content-Type") == "image/jpeg")
        let image = try ImageDecoderRegistry.shared.decode(negotiated.body)
        Self.check(image, "negotiated", size: (400, 200), [(10, 100, white), (390, 100, white)])
        #expect(!Self.near(Self.pixel(image, 200, 100), white), "the photo is in the middle")
        // The quadrant PNG has an alpha channel: its answer is a PNG with transparent background.
        let withAlpha = try await setup.serve.get(
            "/insecure/rs:fit:400:200/ex:1/plain/\(setup.source())", headers: ["Accept": "*/*"])
        #expect(withAlpha.header("Content-Type") == "image/png")
        Self.check(
            try ImageDecoderRegistry.shared.decode(withAlpha.body), "negotiated with alpha", size: (400, 200),
            [(10, 10, clear), (110, 60, r)])
        await setup.stop()
    }

    @Test("padding (CSS shorthand, scaled by dpr), rotate and auto_rotate")
    func paddingAndRotation() async throws {
        let setup = try await Setup()
        let (r, g, b, y, clear, white) = (Self.red, Self.green, Self.blue, Self.yellow, Self.clear, Self.white)
        let cases: [(String, String, String, (Int, Int), [(Int, Int, Colour)])] = [
            (
                "w:100/pd:10", "quadrants.png", "png", (120, 70),
                [(5, 5, clear), (15, 15, r), (105, 55, y), (115, 65, clear)]
            ),
            (
                "w:100/pd:10:20", "quadrants.png", "png", (140, 70),
                [(15, 5, clear), (25, 15, r), (115, 45, y), (130, 35, clear)]
            ),
            (
                "w:100/padding:0:0:0:30", "quadrants.png", "png", (130, 50),
                [(15, 25, clear), (40, 10, r), (120, 40, y)]
            ),
            ("w:100/pd:10/dpr:2", "quadrants.png", "png", (240, 140), [(10, 10, clear), (30, 30, r), (210, 110, y)]),
            ("w:100/pd:10", "quadrants.png", "jpg", (120, 70), [(5, 5, white), (15, 15, r)]),
            // 90° clockwise: the bottom left (blue) comes to the top left.
            ("rot:90", "quadrants.png", "png", (100, 200), [(25, 25, b), (75, 25, r), (25, 175, y), (75, 175, g)]),
            ("rotate:180", "quadrants.png", "png", (200, 100), [(25, 25, y), (175, 75, r)]),
            ("rot:-90", "quadrants.png", "png", (100, 200), [(25, 25, g), (75, 175, b)]),
            ("rot:90/c:100:50:nowe", "quadrants.png", "png", (100, 50), [(25, 25, b), (75, 25, r)]),
            // EXIF 6: stored 48×32 with a red 16×16 marker top left; upright it is 32×48, the marker top right.
            ("w:0", "exif-6.jpg", "png", (32, 48), [(28, 4, r), (4, 4, (128, 128, 128, 255))]),
            ("ar:0", "exif-6.jpg", "png", (48, 32), [(4, 4, r), (44, 4, (128, 128, 128, 255))]),
            ("auto_rotate:0/rot:90", "exif-6.jpg", "png", (32, 48), [(28, 4, r)]),
        ]
        let exif = try Data(
            contentsOf: Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/orientation/jpeg-exif-6.jpg"))
        setup.origin.setFile(name: "exif-6.jpg", data: exif)
        for (options, name, format, size, colours) in cases {
            let image = try await setup.image(options, name, format: format)
            Self.check(image, "\(options) on \(name)@\(format)", size: size, colours)
        }
        await setup.stop()
    }

    @Test("an option with a bad argument is 400 naming it; sm gravity is refused for extend and with offsets")
    func badArguments() async throws {
        let setup = try await Setup()
        for (options, named) in [
            ("rs:fit:10:10:0:maybe", "extend"), ("s:10:10:2", "enlarge"), ("rt:stretch", "stretch"),
            ("mw:-1", "mw"), ("min-height:x", "min-height"), ("z:0", "z"), ("zoom:1:nan", "zoom"),
            ("dpr:9", "dpr"), ("ex:1:sm", "smart gravity"), ("exar:1:up", "gravity"),
            ("g:sm:1:1", "smart gravity"), ("g:fp:2:0", "focus point"), ("g:no:1e300", "offset"), ("c:-5", "crop"),
            ("c:10:10:ce:0:0:0", "c"), ("pd:1:2:3:4:5", "pd"), ("padding:-1", "padding"), ("ar:yes", "auto_rotate"),
            ("rot:45", "multiple of 90"), ("w:1.5", "w"), ("rs:fit:1:1:1:1:ce:1:1:1", "rs"),
        ] {
            let (status, body) = try await setup.answer(options)
            #expect(status == 400, "\(options): \(status) \(body)")
            #expect(body.contains(named), "\(options): \(body)")
        }
        await setup.stop()
    }
}
