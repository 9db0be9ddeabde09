import Foundation
import Testing
import WebImage

@testable import WebImageProxy

/// `trim` and smart gravity (`g:sm`) without a server: the parser, the cache key, where the trim cuts and
/// which window the attention score keeps, on pictures whose interesting part is off-centre.
@Suite("serve: trim and smart gravity")
struct TrimAndSmartGravityTests {
    typealias Colour = (Int, Int, Int, Int)

    /// A `width`×`height` still whose pixel at (x, y) is `colour(x, y)`.
    static func picture(_ width: Int, _ height: Int, _ colour: (Int, Int) -> Colour) -> Image {
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
        return Image(format: .png, width: width, height: height, frames: [frame], hasAlpha: true)
    }

    static func options(_ segments: String) throws -> ProcessingOptions {
        try ProxyURL(path: "/s/\(segments)/plain/http://h/a.png").options
    }

    static func pixel(_ image: Image, _ x: Int, _ y: Int) -> Colour {
        let frame = image.frames[0]
        let index = y * frame.bytesPerRow + x * 4
        return (
            Int(frame.pixels[index]), Int(frame.pixels[index + 1]), Int(frame.pixels[index + 2]),
            Int(frame.pixels[index + 3])
        )
    }

    // MARK: Parser and key

    @Test("trim's arguments: threshold, hex colour (3 or 6 digits), equal_hor, equal_ver; empty threshold is off")
    func trimArguments() throws {
        #expect(try Self.options("t:10").trim == TrimOption(threshold: 10))
        let magenta = ImageColor(red: 255, green: 0, blue: 255)
        #expect(
            try Self.options("trim:2.5:FF00ff:1:t").trim
                == TrimOption(threshold: 2.5, color: magenta, equalHorizontal: true, equalVertical: true))
        #expect(try Self.options("t:0:f0f").trim == TrimOption(threshold: 0, color: magenta))
        #expect(try Self.options("t:5::0:1").trim == TrimOption(threshold: 5, equalVertical: true))
        #expect(try !Self.options("t:10/t::ff0000").trim.isEnabled)
    }

    @Test(
        "a bad trim or smart gravity is 400 naming the option",
        arguments: [
            ("t:256", "option t: the threshold"), ("t:-1", "option t: the threshold"), ("trim:x", "option trim"),
            ("t:10:ggg", "hexadecimal"), ("t:10:ff00f", "hexadecimal"), ("t:10:ff00ff00", "hexadecimal"),
            ("t:10:ff0000:maybe", "equal_hor"), ("t:10:ff0000:1:2", "equal_ver"), ("t:1:f00:1:1:1", "option t takes"),
            ("g:sm:1", "takes no offsets"), ("g:sm:0:0", "takes no offsets"), ("c:10:10:sm:1", "takes no offsets"),
            ("ex:1:sm", "only for crops"), ("exar:1:sm", "only for crops"), ("rs:fill:1:1:0:1:sm", "only for crops"),
            ("g:smart", "fp or sm"),
        ])
    func refusals(options: String, named: String) {
        let error = #expect(throws: ProxyError.self) { try Self.options(options) }
        #expect(error?.status == 400)
        #expect(error?.message.contains(named) == true, "\(options): \(String(describing: error))")
    }

    @Test("smart gravity is taken by g and by crop's own gravity")
    func smartGravityParses() throws {
        #expect(try Self.options("g:sm").gravity == Gravity(.smart))
        #expect(try Self.options("c:10:10:sm").crop?.gravity == Gravity(.smart))
    }

    @Test("the cache key tells trims and smart gravity apart")
    func canonical() throws {
        let spellings = [
            "w:10", "w:10/t:10", "w:10/t:10:ff0000", "w:10/t:10::1", "w:10/t:10::0:1", "w:10/t:11", "w:10/g:sm",
            "w:10/c:5:5", "w:10/c:5:5:sm",
        ]
        let keys = try spellings.map { try Self.options($0).canonical }
        #expect(Set(keys).count == spellings.count, "\(keys)")
        #expect(try Self.options("t:10:F00").canonical == Self.options("trim:10.0:ff0000:0:f").canonical)
    }

    // MARK: Trim

    /// White 200×100 with a black 50×20 block at (120, 30): margins 120 left, 30 right, 30 top, 50 bottom.
    static let block = picture(200, 100) { x, y in
        (120..<170).contains(x) && (30..<50).contains(y) ? (0, 0, 0, 255) : (255, 255, 255, 255)
    }

    @Test("trim keeps the block; the plan then follows the trimmed size; equal_hor/ver cut the smaller margin")
    func trimsThroughTheTransformer() throws {
        let cases: [(String, (Int, Int))] = [
            ("t:10", (50, 20)), ("t:10/w:25", (25, 10)), ("t:10:fff", (50, 20)),
            ("t:10::1", (140, 20)), ("t:10::0:1", (50, 40)), ("t:10::1:1", (140, 40)),
            ("t:10/rs:fill:10:10", (10, 10)), ("t:10/c:10:10:nowe", (10, 10)),
            // Black is not the background: nothing is trimmed.
            ("t:10:000", (200, 100)),
        ]
        for (segments, size) in cases {
            let result = try ProxyTransformer(options: Self.options(segments)).transform(Self.block)
            #expect(result.width == size.0 && result.height == size.1, "\(segments): \(result.width)×\(result.height)")
        }
        let kept = try ProxyTransformer(options: Self.options("t:10")).transform(Self.block)
        #expect(Self.pixel(kept, 0, 0) == (0, 0, 0, 255) && Self.pixel(kept, 49, 19) == (0, 0, 0, 255))
        // equal_hor keeps 30 pixels either side: the block ends 30 from the right.
        let equal = try ProxyTransformer(options: Self.options("t:10::1")).transform(Self.block)
        #expect(Self.pixel(equal, 89, 5) == (255, 255, 255, 255) && Self.pixel(equal, 90, 5) == (0, 0, 0, 255))
    }

    @Test("the threshold is the allowed difference; a pixel of noise is smoothed away; all background is kept whole")
    func trimThresholdAndNoise() throws {
        // Grey 120 with a 180 band (a difference of 60) and one black pixel at (5, 5).
        let banded = Self.picture(100, 60) { x, y in
            if x == 5 && y == 5 { return (0, 0, 0, 255) }
            return (40..<60).contains(x) ? (180, 180, 180, 255) : (120, 120, 120, 255)
        }
        let loose = try ProxyTransformer(options: Self.options("t:59.5")).transform(banded)
        #expect(loose.width == 20 && loose.height == 60, "\(loose.width)×\(loose.height)")
        let strict = try ProxyTransformer(options: Self.options("t:60")).transform(banded)
        #expect(strict.width == 100 && strict.height == 60, "all within 60: kept whole")
        let flat = Self.picture(30, 20) { _, _ in (9, 9, 9, 255) }
        let whole = try ProxyTransformer(options: Self.options("t:0/w:15")).transform(flat)
        #expect(whole.width == 15 && whole.height == 10)
    }

    @Test("transparent margins are magenta to trim, as imgproxy's transparency key; animations are not trimmed")
    func trimAlphaAndAnimation() throws {
        let sticker = Self.picture(80, 60) { x, y in
            (10..<30).contains(x) && (20..<50).contains(y) ? (0, 200, 0, 255) : (0, 0, 0, 0)
        }
        for segments in ["t:10:ff00ff", "t:10"] {
            let result = try ProxyTransformer(options: Self.options(segments)).transform(sticker)
            #expect(result.width == 20 && result.height == 30, "\(segments): \(result.width)×\(result.height)")
        }
        var animation = Self.block
        animation.frames.append(animation.frames[0])
        animation.frameCount = 2
        let result = try ProxyTransformer(options: Self.options("t:10")).transform(animation)
        #expect(result.width == 200 && result.height == 100 && result.frames.count == 2)
    }

    @Test("trim decodes at full size: no shrink-on-load")
    func trimDecodesWhole() throws {
        #expect(ProxyTransformer(options: try Self.options("w:10")).minimumDecodeSize != nil)
        #expect(ProxyTransformer(options: try Self.options("w:10/t:10")).minimumDecodeSize == nil)
    }

    // MARK: Smart gravity

    static let grey = (128, 128, 128, 255)

    /// Flat grey 600×200 with a black-and-white 10-pixel checkerboard over x 480..<580.
    static let patchRight = picture(600, 200) { x, y in
        guard (480..<580).contains(x) else { return grey }
        return (x / 10 + y / 10) % 2 == 0 ? (0, 0, 0, 255) : (255, 255, 255, 255)
    }

    static func isChecker(_ colour: Colour) -> Bool {
        (colour.0 < 40 || colour.0 > 215) && colour.0 == colour.1 && colour.1 == colour.2
    }

    @Test("g:sm keeps a busy patch at the right where g:ce keeps flat grey")
    func smartKeepsTheBusyPatch() throws {
        let smart = try ProxyTransformer(options: Self.options("rs:fill:100:100/g:sm")).transform(Self.patchRight)
        #expect(smart.width == 100 && smart.height == 100)
        // Scaled to 300×100, the patch is x 240..<290: the window is at 190 or beyond.
        let checkered = (0..<100).filter { Self.isChecker(Self.pixel(smart, $0, 50)) }.count
        #expect(checkered >= 20, "\(checkered) checker pixels on the middle row")
        let centre = try ProxyTransformer(options: Self.options("rs:fill:100:100/g:ce")).transform(Self.patchRight)
        #expect((0..<100).allSatisfy { !Self.isChecker(Self.pixel(centre, $0, 50)) }, "the middle is flat")
        // crop's own smart gravity, before the scale.
        let cropped = try ProxyTransformer(options: Self.options("c:150:200:sm")).transform(Self.patchRight)
        #expect(cropped.width == 150 && (0..<150).filter { Self.isChecker(Self.pixel(cropped, $0, 100)) }.count >= 95)
        // A gravity of g:sm is the crop's too when it has none.
        let inherited = try ProxyTransformer(options: Self.options("c:150:200/g:sm")).transform(Self.patchRight)
        #expect((0..<150).filter { Self.isChecker(Self.pixel(inherited, $0, 100)) }.count >= 95)
    }

    @Test("the window follows the patch to each corner; a flat image is cut in the middle")
    func smartWindowPosition() {
        for (left, top) in [(0, 0), (500, 0), (0, 300), (500, 300), (250, 150)] {
            let image = Self.picture(600, 400) { x, y in
                guard (left..<left + 100).contains(x), (top..<top + 100).contains(y) else { return Self.grey }
                return (x / 8 + y / 8) % 2 == 0 ? (0, 0, 0, 255) : (255, 255, 255, 255)
            }
            let corner = AttentionCrop.window(PixelSize(width: 200, height: 200), in: image.frames[0])
            let holds =
                corner.x <= left && left + 100 <= corner.x + 200 && corner.y <= top && top + 100 <= corner.y + 200
            #expect(holds, "patch at (\(left), \(top)): window at \(corner)")
        }
        let flat = Self.picture(600, 400) { _, _ in Self.grey }
        let middle = AttentionCrop.window(PixelSize(width: 200, height: 200), in: flat.frames[0])
        #expect(abs(middle.x - 200) <= 3 && abs(middle.y - 100) <= 3, "\(middle)")
    }

    /// Grey 175 800×300 with two discs of radius 50: skin (224, 172, 140) at x 100 and the same channels the
    /// other way round (140, 172, 224), as saturated and as far from the grey in luma, at x 700.
    static let twoDiscs = picture(800, 300) { x, y in
        func inside(_ centreX: Int) -> Bool { (x - centreX) * (x - centreX) + (y - 150) * (y - 150) < 2500 }
        if inside(100) { return (224, 172, 140, 255) }
        if inside(700) { return (140, 172, 224, 255) }
        return (175, 175, 175, 255)
    }

    /// How many pixels of the middle row are within 8 of `colour` in each channel.
    static func count(_ image: Image, near colour: (Int, Int, Int)) -> Int {
        (0..<image.width).filter { x in
            let (r, g, b, _) = pixel(image, x, image.height / 2)
            return abs(r - colour.0) <= 8 && abs(g - colour.1) <= 8 && abs(b - colour.2) <= 8
        }.count
    }

    @Test("g:sm keeps a skin-toned disc over an equally colourful blue one")
    func smartPrefersSkin() throws {
        let result = try ProxyTransformer(options: Self.options("rs:fill:150:150/g:sm")).transform(Self.twoDiscs)
        #expect(result.width == 150 && result.height == 150)
        // 800×300 scaled to 400×150: each disc is 50 across; the window of 150 holds one at most.
        #expect(Self.count(result, near: (224, 172, 140)) >= 40 && Self.count(result, near: (140, 172, 224)) == 0)
        let mirrored = Self.picture(800, 300) { x, y in Self.pixel(Self.twoDiscs, 799 - x, y) }
        let other = try ProxyTransformer(options: Self.options("rs:fill:150:150/g:sm")).transform(mirrored)
        #expect(Self.count(other, near: (224, 172, 140)) >= 40 && Self.count(other, near: (140, 172, 224)) == 0)
    }
}
