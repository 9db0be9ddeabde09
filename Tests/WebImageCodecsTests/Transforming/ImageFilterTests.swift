import Foundation
import Testing

@testable import WebImageCodecs

/// The pixel filters: libvips' Gaussian mask, the blur's symmetry and total, the unsharp mask's overshoot
/// and limits, pixelation's uniform blocks, premultiplied alpha and flattening.
@Suite(.timeLimit(.minutes(2))) struct ImageFilterTests {
    /// A `width`×`height` image whose pixel at (x, y) is `colour(x, y)` (RGBA).
    static func image(width: Int, height: Int, hasAlpha: Bool = false, _ colour: (Int, Int) -> [UInt8]) -> Image {
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width { pixels += colour(x, y) }
        }
        let frame = ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)
        return Image(format: .png, width: width, height: height, frames: [frame], hasAlpha: hasAlpha)
    }

    static func pixel(_ image: Image, _ x: Int, _ y: Int) -> [Int] {
        let frame = image.frames[0]
        let index = y * frame.bytesPerRow + x * 4
        return frame.pixels[index..<(index + 4)].map(Int.init)
    }

    @Test("the mask is libvips' integer gaussblur mask: out to amplitude 0.2, rint(20·g), normalised")
    func mask() {
        func taps(_ sigma: Double) -> [Int] {
            let weights = GaussianMask(sigma: sigma).weights
            return weights.map { Int(($0 / weights[weights.count / 2] * 20).rounded()) }
        }
        #expect(taps(1) == [12, 20, 12])
        #expect(taps(2) == [6, 12, 18, 20, 18, 12, 6])
        #expect(abs(GaussianMask(sigma: 2).weights.reduce(0, +) - 1) < 1e-5)
        #expect(GaussianMask(sigma: 10).radius == 17)  // exp(-18²/200) < 0.2 ≤ exp(-17²/200)
        #expect(ImageFilter.filters(blur: 0.19, sharpen: 0, pixelate: 1).isIdentity)
        #expect(!ImageFilter.filters(blur: 0.2, sharpen: 0, pixelate: 1).isIdentity)
        #expect(ImageFilter.filters(blur: .nan, sharpen: -1, pixelate: -5).isIdentity)
    }

    @Test("a blurred bright pixel spreads symmetrically and keeps its total within rounding")
    func blurOfOnePixel() throws {
        let size = 21
        let source = Self.image(width: size, height: size) { x, y in
            x == 10 && y == 10 ? [255, 255, 255, 255] : [0, 0, 0, 255]
        }
        let blurred = try ImageFilter.filters(blur: 2, sharpen: 0, pixelate: 1).transform(source)
        var total = 0
        var lit = 0
        for y in 0..<size {
            for x in 0..<size {
                let red = Self.pixel(blurred, x, y)[0]
                total += red
                if red > 0 { lit += 1 }
                #expect(red == Self.pixel(blurred, size - 1 - x, y)[0], "mirror at (\(x), \(y))")
                #expect(red == Self.pixel(blurred, x, size - 1 - y)[0], "flip at (\(x), \(y))")
                #expect(red == Self.pixel(blurred, y, x)[0], "transpose at (\(x), \(y))")
                #expect(Self.pixel(blurred, x, y)[3] == 255)
            }
        }
        #expect(lit == 49, "a 7-tap mask each way lights 7×7 pixels, not \(lit)")
        #expect(abs(total - 255) * 2 <= lit, "total \(total)")
        #expect(Self.pixel(blurred, 10, 10)[0] < 255 / 10)
    }

    @Test("a blur near the border repeats the border pixel: a uniform image stays uniform")
    func blurAtTheBorder() throws {
        let source = Self.image(width: 5, height: 3) { _, _ in [40, 80, 120, 255] }
        let blurred = try ImageFilter.filters(blur: 10, sharpen: 0, pixelate: 1).transform(source)
        #expect(blurred.frames[0].pixels == source.frames[0].pixels)
    }

    @Test("with alpha the filters work premultiplied: the colour of transparent pixels never shows")
    func premultipliedBlur() throws {
        let source = Self.image(width: 20, height: 4, hasAlpha: true) { x, _ in
            x < 10 ? [255, 0, 0, 255] : [0, 255, 0, 0]
        }
        for filter in [
            ImageFilter.filters(blur: 3, sharpen: 0, pixelate: 1), .filters(blur: 0, sharpen: 0, pixelate: 20),
        ] {
            let result = try filter.transform(source)
            for x in 0..<20 {
                let found = Self.pixel(result, x, 1)
                #expect(found[3] == 0 || found[1] == 0, "\(filter.key) at \(x): \(found)")
            }
            // The edge is soft: the red side lost some alpha, the transparent side gained some.
            #expect(Self.pixel(result, 9, 1)[3] < 255 && Self.pixel(result, 10, 1)[3] > 0, "\(filter.key)")
        }
    }

    @Test("sharpen overshoots on both sides of an edge, within libvips' limits, and leaves flat areas")
    func sharpenEdge() throws {
        let source = Self.image(width: 20, height: 5) { x, _ in x < 10 ? [100, 100, 100, 255] : [160, 160, 160, 255] }
        let sharp = try ImageFilter.filters(blur: 0, sharpen: 1, pixelate: 1).transform(source)
        let dark = Self.pixel(sharp, 9, 2)
        let light = Self.pixel(sharp, 10, 2)
        #expect(dark[0] < 100 && dark[0] >= 100 - 51, "\(dark)")
        #expect(light[0] > 160 && light[0] <= 160 + 26, "\(light)")
        #expect(dark[0] == dark[1] && dark[1] == dark[2], "grey stays grey")
        #expect(Self.pixel(sharp, 2, 2) == [100, 100, 100, 255])
        #expect(Self.pixel(sharp, 17, 2) == [160, 160, 160, 255])
        let curve = [0, 1.9, -1.9, 3, 6, -20, -5].map { Int(FilterPixels.sharpenCurve(Float($0)).rounded()) }
        #expect(curve == [0, 0, 0, 3, 10, -20, -9])
    }

    @Test("pixelate: each block is one colour, the rounded mean of its pixels; edge blocks too")
    func pixelate() throws {
        let source = Self.image(width: 10, height: 7) { x, y in [UInt8(x * 20), UInt8(y * 30), 7, 255] }
        let blocks = try ImageFilter.filters(blur: 0, sharpen: 0, pixelate: 4).transform(source)
        for y in 0..<7 {
            for x in 0..<10 {
                let left = x / 4 * 4
                let top = y / 4 * 4
                let columns = left..<min(10, left + 4)
                let rows = top..<min(7, top + 4)
                let count = columns.count * rows.count
                let red = columns.reduce(0) { $0 + $1 * 20 } * rows.count
                let green = rows.reduce(0) { $0 + $1 * 30 } * columns.count
                #expect(
                    Self.pixel(blocks, x, y) == [(red + count / 2) / count, (green + count / 2) / count, 7, 255],
                    "(\(x), \(y))")
            }
        }
        // A block larger than the image is the whole image.
        let one = try ImageFilter.filters(blur: 0, sharpen: 0, pixelate: 1 << 30).transform(source)
        #expect(Set((0..<7).flatMap { y in (0..<10).map { x in Self.pixel(one, x, y) } }).count == 1)
    }

    @Test("flatten composes straight alpha over the colour and the result is opaque")
    func flatten() throws {
        let source = Self.image(width: 3, height: 1, hasAlpha: true) { x, _ in
            [[255, 0, 0, 255], [255, 0, 0, 128], [0, 255, 0, 0]][x]
        }
        let flat = try ImageFilter.flatten(onto: ImageColor(red: 0, green: 0, blue: 255)).transform(source)
        #expect(!flat.hasAlpha)
        #expect(Self.pixel(flat, 0, 0) == [255, 0, 0, 255])
        #expect(Self.pixel(flat, 1, 0) == [128, 0, 127, 255])
        #expect(Self.pixel(flat, 2, 0) == [0, 0, 255, 255])
    }

    @Test("the frames and the float plane are claimed from the budget before they are made")
    func budget() throws {
        let source = Self.image(width: 100, height: 100) { _, _ in [1, 2, 3, 255] }
        // The output frame (40,000 bytes) fits; with the blur's float plane (160,000 more) it does not.
        let budget = DecodeMemoryBudget(limit: 100_000, waitTimeout: 0)
        #expect(throws: (any Error).self) {
            try ImageFilter.filters(blur: 1, sharpen: 0, pixelate: 1).transform(source, budget: budget)
        }
        _ = try ImageFilter.filters(blur: 0, sharpen: 0, pixelate: 3).transform(source, budget: budget)
        #expect(budget.bytesInUse == 0)
    }
}
