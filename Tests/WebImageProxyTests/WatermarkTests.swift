import Foundation
import Testing
import WebImage

@testable import WebImageProxy

/// imgproxy's `watermark` option: its parsing, the placement of the mark (`WatermarkLayout`, imgproxy's
/// `calcPosition` and tiling) and the compositing, checked on the pixels of small images.
@Suite("serve: the watermark option")
struct WatermarkTests {
    typealias Colour = (Int, Int, Int, Int)

    /// A `width`×`height` image of one colour; `hasAlpha` when the colour is not opaque.
    static func image(_ width: Int, _ height: Int, _ colour: Colour) -> Image {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for index in stride(from: 0, to: pixels.count, by: 4) {
            pixels[index] = UInt8(colour.0)
            pixels[index + 1] = UInt8(colour.1)
            pixels[index + 2] = UInt8(colour.2)
            pixels[index + 3] = UInt8(colour.3)
        }
        let frame = ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)
        return Image(format: .png, width: width, height: height, frames: [frame], hasAlpha: colour.3 < 255)
    }

    static func pixel(_ image: Image, _ x: Int, _ y: Int) -> Colour {
        let frame = image.frames[0]
        let index = y * frame.bytesPerRow + x * 4
        let p = frame.pixels
        return (Int(p[index]), Int(p[index + 1]), Int(p[index + 2]), Int(p[index + 3]))
    }

    /// The smallest rectangle holding every pixel that is not white.
    static func marked(_ image: Image) -> PixelRect? {
        var (x0, y0, x1, y1) = (Int.max, Int.max, -1, -1)
        for y in 0..<image.height {
            for x in 0..<image.width where pixel(image, x, y) != (255, 255, 255, 255) {
                (x0, y0, x1, y1) = (min(x0, x), min(y0, y), max(x1, x), max(y1, y))
            }
        }
        return x1 < 0 ? nil : PixelRect(x: x0, y: y0, width: x1 - x0 + 1, height: y1 - y0 + 1)
    }

    /// `options` (a `wm:` segment and any others) parsed as a URL would be.
    static func options(_ segments: String) throws -> ProcessingOptions {
        try ProxyURL(path: "/s/\(segments)/plain/http://h/a.jpg").options
    }

    /// A white `width`×`height` image with `mark` drawn as `segments` say.
    static func drawn(
        _ segments: String, mark: Image, on width: Int = 100, _ height: Int = 80, baseOpacity: Double = 1,
        dpr: Double = 1
    ) throws -> Image {
        let watermark = try ProxyWatermark(image: mark, opacity: baseOpacity)
        var canvas = image(width, height, (255, 255, 255, 255))
        try watermark.draw(try options(segments).watermark, on: &canvas, dprScale: dpr, budget: nil)
        return canvas
    }

    static let red = image(10, 10, (255, 0, 0, 255))

    // MARK: Parsing

    @Test("wm and watermark parse every argument; empty arguments keep what was set; canonical names them")
    func parsing() throws {
        let full = try Self.options("wm:0.5:soea:10:20:0.6").watermark
        #expect(full == WatermarkOption(opacity: 0.5, position: .gravity(.southEast), x: 10, y: 20, scale: 0.6))
        #expect(try Self.options("watermark:0.5:soea:10:20:0.6").watermark == full)
        #expect(try Self.options("wm:1").watermark == WatermarkOption(opacity: 1))
        #expect(try Self.options("wm:0.5:re:4:6").watermark.position == .replicate)
        let kept = try Self.options("wm:0.5:soea:10:20:0.6/wm:1::::").watermark
        #expect(kept == WatermarkOption(opacity: 1, position: .gravity(.southEast), x: 10, y: 20, scale: 0.6))
        #expect(try Self.options("wm:1:ce:0:0:0").watermark.scale == 0, "0 is the watermark's own size")

        let plain = try Self.options("w:10").canonical
        #expect(try Self.options("w:10/wm:0:soea").canonical == plain, "opacity 0 draws nothing: the same result")
        let drawn = try Self.options("w:10/wm:0.5:soea").canonical
        #expect(drawn != plain)
        #expect(try Self.options("w:10/wm:0.5:soea:1").canonical != drawn)
        #expect(try Self.options("w:10/wm:0.6:soea").canonical != drawn)
    }

    @Test(
        "bad watermark arguments are 400 naming what is wrong",
        arguments: [
            ("wm:", "opacity"),
            ("wm:1.5", "opacity"),
            ("wm:-0.1", "opacity"),
            ("wm:x", "not a decimal number"),
            ("wm:1:fp", "unknown position"),
            ("wm:1:sm", "unknown position"),
            ("wm:1:middle", "unknown position"),
            ("wm:1:re:-2:0", "spacing"),
            ("wm:1:ce:0:0:-1", "scale"),
            ("wm:1:ce:0:0:101", "scale"),
            ("wm:1:ce:2000000000", "offset"),
            ("wm:1:ce:0:0:0:0", "takes 1 to 5"),
        ])
    func errors(segment: String, named: String) {
        let error = #expect(throws: ProxyError.self) { try Self.options(segment) }
        #expect(error?.status == 400)
        #expect(error?.message.contains(named) == true, "\(segment): \(String(describing: error))")
        #expect(error?.message.contains("option wm") == true, "\(String(describing: error))")
    }

    // MARK: Placement

    @Test(
        "each of the nine positions puts a 10×10 mark on a 100×80 result where imgproxy's calcPosition does",
        arguments: [
            ("ce", 46, 36), ("no", 46, 0), ("so", 46, 70), ("ea", 90, 36), ("we", 0, 36), ("noea", 90, 0),
            ("nowe", 0, 0), ("soea", 90, 70), ("sowe", 0, 70),
        ])
    func positions(position: String, x: Int, y: Int) throws {
        let result = try Self.drawn("wm:1:\(position)", mark: Self.red)
        #expect(Self.marked(result) == PixelRect(x: x, y: y, width: 10, height: 10), "\(position)")
        #expect(Self.pixel(result, x + 5, y + 5) == (255, 0, 0, 255))
    }

    @Test("offsets move the mark away from its edges, times dpr; fractions are of the result; it may hang off")
    func offsets() throws {
        #expect(
            Self.marked(try Self.drawn("wm:1:soea:5:3", mark: Self.red))
                == PixelRect(x: 85, y: 67, width: 10, height: 10))
        #expect(
            Self.marked(try Self.drawn("wm:1:soea:5:3", mark: Self.red, dpr: 2))
                == PixelRect(x: 80, y: 64, width: 10, height: 10))
        #expect(
            Self.marked(try Self.drawn("wm:1:nowe:0.1:0.25", mark: Self.red))
                == PixelRect(x: 10, y: 20, width: 10, height: 10))
        #expect(
            Self.marked(try Self.drawn("wm:1:nowe:-4:-30", mark: Self.red))
                == PixelRect(x: 0, y: 0, width: 6, height: 1), "at least one row stays on the result")
        #expect(
            Self.marked(try Self.drawn("wm:1:ce:-1000:0", mark: Self.red))
                == PixelRect(x: 0, y: 36, width: 1, height: 10))
    }

    @Test("scale fits the mark into the result's sides times scale, enlarging it; 0 keeps its own size")
    func scale() throws {
        // 100×80 × 0.5 is a 50×40 box: the square mark becomes 40×40.
        let half = try Self.drawn("wm:1:soea:0:0:0.5", mark: Self.red)
        #expect(Self.marked(half) == PixelRect(x: 60, y: 40, width: 40, height: 40))
        #expect(
            Self.marked(try Self.drawn("wm:1:soea:0:0:0", mark: Self.red))
                == PixelRect(x: 90, y: 70, width: 10, height: 10))
        // Far past the result: only the part on it is resampled, so the layout's window is the result's size.
        let layout = try #require(
            WatermarkLayout.make(
                option: try Self.options("wm:1:ce:0:0:100").watermark, mark: PixelSize(width: 10, height: 10),
                result: PixelSize(width: 100, height: 80), dprScale: 1))
        #expect(layout.size == PixelSize(width: 8000, height: 8000))
        #expect(layout.window.width == 100 && layout.window.height == 80)
        let covered = try Self.drawn("wm:1:ce:0:0:100", mark: Self.red)
        #expect(Self.marked(covered) == PixelRect(x: 0, y: 0, width: 100, height: 80))
    }

    @Test("re tiles the mark over the whole result, the middle tile centred, offsets as the spacing")
    func tiles() throws {
        // A 10×10 mark with a blue top left pixel shows where each tile starts.
        var mark = Self.red
        mark.frames[0].pixels.replaceSubrange(0..<4, with: [0, 0, 255, 255])
        // No spacing: 11 × 9 tiles (odd counts) of 10, centred: tiles start at -5, 5, 15, … on both axes.
        let packed = try Self.drawn("wm:1:re", mark: mark)
        #expect(Self.marked(packed) == PixelRect(x: 0, y: 0, width: 100, height: 80))
        for y in 0..<80 {
            for x in 0..<100 {
                let expected: Colour = (x % 10 == 5 && y % 10 == 5) ? (0, 0, 255, 255) : (255, 0, 0, 255)
                #expect(Self.pixel(packed, x, y) == expected, "(\(x), \(y))")
            }
        }
        // A spacing of 10: tiles of 20, half the spacing before the mark; 5 across (starting at 0), 5 down
        // (4 made odd, starting at -10).
        let spaced = try Self.drawn("wm:1:re:10:10", mark: mark)
        for (x, y, colour) in [
            (5, 15, (0, 0, 255, 255)), (14, 24, (255, 0, 0, 255)), (15, 15, (255, 255, 255, 255)),
            (4, 15, (255, 255, 255, 255)), (85, 75, (0, 0, 255, 255)), (94, 79, (255, 0, 0, 255)),
            (95, 75, (255, 255, 255, 255)), (5, 4, (255, 0, 0, 255)), (5, 5, (255, 255, 255, 255)),
        ] as [(Int, Int, Colour)] {
            #expect(Self.pixel(spaced, x, y) == colour, "(\(x), \(y))")
        }
    }

    // MARK: Compositing

    @Test("opacity mixes the mark with what is below; the base opacity multiplies it; 0 draws nothing")
    func opacity() throws {
        let half = try Self.drawn("wm:0.5:soea", mark: Self.red)
        #expect(Self.pixel(half, 95, 75) == (255, 128, 128, 255))
        let base = try Self.drawn("wm:1:soea", mark: Self.red, baseOpacity: 0.5)
        #expect(Self.pixel(base, 95, 75) == (255, 128, 128, 255))
        #expect(Self.marked(try Self.drawn("wm:0:soea", mark: Self.red)) == nil)
    }

    @Test("a transparent mark over a transparent result is Porter-Duff over on straight alpha")
    func transparency() throws {
        let watermark = try ProxyWatermark(image: Self.image(10, 10, (255, 0, 0, 128)))
        var clear = Self.image(20, 20, (0, 0, 0, 0))
        try watermark.draw(try Self.options("wm:1:nowe").watermark, on: &clear, dprScale: 1, budget: nil)
        #expect(Self.pixel(clear, 0, 0) == (255, 0, 0, 128), "over nothing, the mark as it is")
        #expect(Self.pixel(clear, 15, 15) == (0, 0, 0, 0))
        #expect(clear.hasAlpha)

        var blue = Self.image(20, 20, (0, 0, 255, 128))
        try watermark.draw(try Self.options("wm:1:nowe").watermark, on: &blue, dprScale: 1, budget: nil)
        // Mark alpha a = 128/255, below b = 128/255: out = a + b(1 - a); each colour weighted by a and b(1 - a).
        let a = 128.0 / 255
        let below = 128.0 / 255 * (1 - a)
        let out = a + below
        let expected = (
            Int((255 * a / out).rounded()), 0, Int((255 * below / out).rounded()), Int((out * 255).rounded())
        )
        let got = Self.pixel(blue, 0, 0)
        #expect(
            abs(got.0 - expected.0) <= 1 && got.1 == 0 && abs(got.2 - expected.2) <= 1 && abs(got.3 - expected.3) <= 1,
            "\(got) vs \(expected)")
    }

    @Test("the transformer's key names the watermark's pixels and base opacity, so a result cache tells them apart")
    func identity() throws {
        let red = try ProxyWatermark(image: Self.red)
        let faint = try ProxyWatermark(image: Self.red, opacity: 0.5)
        let blue = try ProxyWatermark(image: Self.image(10, 10, (0, 0, 255, 255)))
        #expect(red.identity != faint.identity && red.identity != blue.identity)
        let options = try Self.options("wm:1:soea")
        let plain = ProxyTransformer(options: options)
        #expect(ProxyTransformer(options: options, watermark: red).key != plain.key)
        #expect(
            ProxyTransformer(options: options, watermark: red).key
                != ProxyTransformer(options: options, watermark: blue).key)
        #expect(throws: ProxyWatermark.LoadError.self) { try ProxyWatermark(image: Self.red, opacity: 0) }
        #expect(throws: ProxyWatermark.LoadError.self) { try ProxyWatermark(image: Self.red, opacity: 1.5) }
    }

    @Test("a watermark file that is missing or not an image is refused with an error naming it")
    func files() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("wm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("missing.png").path
        let error = #expect(throws: ProxyWatermark.LoadError.self) { try ProxyWatermark(contentsOfFile: missing) }
        #expect(error?.description.contains(missing) == true, "\(String(describing: error))")
        let text = folder.appendingPathComponent("mark.png")
        try Data("not an image".utf8).write(to: text)
        let undecodable = #expect(throws: ProxyWatermark.LoadError.self) {
            try ProxyWatermark(contentsOfFile: text.path)
        }
        #expect(undecodable?.description.contains(text.path) == true, "\(String(describing: undecodable))")
        let png = folder.appendingPathComponent("red.png")
        try PNGEncoder().encode(Self.red).write(to: png)
        let loaded = try ProxyWatermark(contentsOfFile: png.path, opacity: 0.8)
        #expect(loaded.image.width == 10 && loaded.opacity == 0.8)
    }
}
