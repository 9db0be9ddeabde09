import Foundation
import Testing

@testable import WebImageCodecs

/// The resampler's fast paths against the way it worked before them: the window of a `fill` (only the
/// centre resampled) and the opaque path (no premultiplying, 8-bit rows read directly).
@Suite(.timeLimit(.minutes(2))) struct LanczosFastPathTests {
    /// The resampler before the fast paths: the premultiplied plane filtered horizontally over every column,
    /// then vertically over every row, then back to straight RGBA8. The reference the fast paths are
    /// compared with.
    static func reference(_ frame: ImageFrame, to target: PixelSize) -> ImageFrame {
        let (factorX, factorY) = LanczosResampler.boxFactors(
            from: PixelSize(width: frame.width, height: frame.height), to: target)
        var plane = PremultipliedPlane(frame, boxX: factorX, boxY: factorY)
        func taps(_ input: Int, _ output: Int) -> [(start: Int, weights: [Float])] {
            let scale = Double(input) / Double(output)
            let support = 3 * max(1, scale)
            return (0..<output).map { index in
                let center = (Double(index) + 0.5) * scale
                let first = max(0, Int((center - support).rounded(.down)))
                let last = min(input - 1, Int((center + support).rounded(.up)))
                let row = (first...last).map {
                    LanczosResampler.lanczos3((Double($0) + 0.5 - center) / max(1, scale))
                }
                let total = row.reduce(0, +)
                return (first, row.map { Float($0 / total) })
            }
        }
        if plane.width != target.width {
            let columns = taps(plane.width, target.width)
            var out = [SIMD4<Float>](repeating: .zero, count: target.width * plane.height)
            for y in 0..<plane.height {
                for x in 0..<target.width {
                    var sum = SIMD4<Float>.zero
                    for (k, weight) in columns[x].weights.enumerated() {
                        sum += plane.values[y * plane.width + columns[x].start + k] * weight
                    }
                    out[y * target.width + x] = sum
                }
            }
            plane = PremultipliedPlane(width: target.width, height: plane.height, values: out)
        }
        if plane.height != target.height {
            let rows = taps(plane.height, target.height)
            var out = [SIMD4<Float>](repeating: .zero, count: plane.width * target.height)
            for y in 0..<target.height {
                for (k, weight) in rows[y].weights.enumerated() {
                    for x in 0..<plane.width {
                        out[y * plane.width + x] += plane.values[(rows[y].start + k) * plane.width + x] * weight
                    }
                }
            }
            plane = PremultipliedPlane(width: plane.width, height: target.height, values: out)
        }
        var pixels = [UInt8](repeating: 0, count: plane.width * plane.height * 4)
        for (index, value) in plane.values.enumerated() {
            let alpha = min(255, value.w)
            guard alpha >= 0.5 else { continue }
            let scale = 255 / alpha
            for channel in 0..<3 {
                pixels[index * 4 + channel] = UInt8(min(255, max(0, value[channel] * scale)) + 0.5)
            }
            pixels[index * 4 + 3] = UInt8(alpha + 0.5)
        }
        return ImageFrame(width: plane.width, height: plane.height, bytesPerRow: plane.width * 4, pixels: pixels)
    }

    /// A `width`×`height` frame of smooth gradients, sharp edges and noise; `alpha` gives each pixel's alpha.
    static func frame(_ width: Int, _ height: Int, alpha: (Int, Int) -> UInt8 = { _, _ in 255 }) -> ImageFrame {
        var pixels: [UInt8] = []
        var state: UInt32 = 12_345
        for y in 0..<height {
            for x in 0..<width {
                state = state &* 1_103_515_245 &+ 12_345
                let noise = UInt8(truncatingIfNeeded: state >> 16)
                pixels += [
                    UInt8(x * 255 / max(1, width - 1)), (x / 5 + y / 5) % 2 == 0 ? 250 : 10, noise, alpha(x, y),
                ]
            }
        }
        return ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)
    }

    static func largestDifference(_ a: ImageFrame, _ b: ImageFrame) -> Int {
        zip(a.pixels, b.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
    }

    @Test(arguments: [
        (PixelSize(width: 101, height: 77), PixelSize(width: 40, height: 31)),  // shrink, no boxes
        (PixelSize(width: 408, height: 306), PixelSize(width: 341, height: 256)),  // a 2 MP JPEG's DCT-scaled decode
        (PixelSize(width: 300, height: 90), PixelSize(width: 50, height: 15)),  // boxes first
        (PixelSize(width: 20, height: 30), PixelSize(width: 45, height: 67)),  // enlarge
        (PixelSize(width: 64, height: 64), PixelSize(width: 64, height: 20)),  // one axis only
    ])
    func thePremultipliedPathIsTheOldOneExactly(source: PixelSize, target: PixelSize) {
        let translucent = Self.frame(source.width, source.height) { x, y in UInt8((x * 3 + y * 5) % 256) }
        let resized = LanczosResampler.resize(translucent, to: target, mayBeOpaque: true)
        #expect(resized.pixels == Self.reference(translucent, to: target).pixels)
    }

    /// Both ways the opaque path runs: the Swift passes, and `CPixelKernels` (AVX2 and FMA) where the
    /// processor has them.
    static let kernels = LanczosResampler.vectorKernelsAvailable ? [false, true] : [false]

    @Test(
        arguments: [
            (PixelSize(width: 101, height: 77), PixelSize(width: 40, height: 31)),
            (PixelSize(width: 408, height: 306), PixelSize(width: 341, height: 256)),
            (PixelSize(width: 300, height: 90), PixelSize(width: 50, height: 15)),
            (PixelSize(width: 20, height: 30), PixelSize(width: 45, height: 67)),
            (PixelSize(width: 64, height: 64), PixelSize(width: 64, height: 20)),
            (PixelSize(width: 7, height: 5), PixelSize(width: 3, height: 9)),
        ], kernels)
    func theOpaquePathIsWithinOneLevelOfTheOldOne(sizes: (source: PixelSize, target: PixelSize), kernels: Bool) {
        let (source, target) = sizes
        let opaque = Self.frame(source.width, source.height)
        let window = PixelRect(x: 0, y: 0, width: target.width, height: target.height)
        let fast = LanczosResampler.resize(
            opaque, to: target, window: window, mayBeOpaque: true, vectorKernels: kernels)
        let old = Self.reference(opaque, to: target)
        #expect(fast.width == target.width && fast.height == target.height)
        #expect(Self.largestDifference(fast, old) <= 1)
        #expect(stride(from: 3, to: fast.pixels.count, by: 4).allSatisfy { fast.pixels[$0] == 255 })
        // Most values are the same: the two differ only where a value lands on a rounding boundary.
        let same = zip(fast.pixels, old.pixels).filter { $0 == $1 }.count
        #expect(Double(same) >= 0.99 * Double(fast.pixels.count), "\(same) of \(fast.pixels.count)")
    }

    @Test(arguments: [false, true], kernels)
    func aWindowIsExactlyThatPartOfTheWholeResize(opaque: Bool, kernels: Bool) {
        let source =
            opaque ? Self.frame(408, 306) : Self.frame(408, 306) { x, y in x < 30 && y < 30 ? 0 : UInt8(128 + x % 100) }
        let target = PixelSize(width: 341, height: 256)
        for window in [
            PixelRect(x: 42, y: 0, width: 256, height: 256), PixelRect(x: 0, y: 0, width: 1, height: 1),
            PixelRect(x: 300, y: 200, width: 41, height: 56), PixelRect(x: 10, y: 100, width: 200, height: 3),
        ] {
            let part = LanczosResampler.resize(
                source, to: target, window: window, mayBeOpaque: opaque, vectorKernels: kernels)
            let whole = LanczosResampler.resize(
                source, to: target, window: PixelRect(x: 0, y: 0, width: 341, height: 256), mayBeOpaque: opaque,
                vectorKernels: kernels)
            #expect(part.width == window.width && part.height == window.height)
            #expect(part.pixels == PixelOps.crop(whole, window).pixels, "\(window)")
        }
    }

    @Test(arguments: kernels)
    func transparentPixelsInAnImageWithoutAlphaFallBackToThePremultipliedPath(kernels: Bool) {
        // `hasAlpha` false but transparent pixels where the filter reads: the opaque path gives up. The
        // vector kernels check eight pixels at a time, then the rest one by one: a stray alpha in either.
        for alpha in [
            { (x: Int, y: Int) -> UInt8 in x > 60 ? 0 : 255 }, { x, y in x == 99 && y == 79 ? 254 : 255 },
            { x, y in x == 3 && y == 40 ? 0 : 255 },
        ] {
            let source = Self.frame(100, 80, alpha: alpha)
            let target = PixelSize(width: 37, height: 29)
            let resized = LanczosResampler.resize(
                source, to: target, window: PixelRect(x: 0, y: 0, width: 37, height: 29), mayBeOpaque: true,
                vectorKernels: kernels)
            #expect(resized.pixels == Self.reference(source, to: target).pixels)
        }
    }

    @Test func aFillThumbnailOfAPhotoMatchesTheOldResizeThenCrop() throws {
        let data = try DecodingCorpus.data("coffee-progressive.jpg")
        var options = ImageDecodingOptions()
        let transformer = ImageTransformer.resize(to: PixelSize(width: 256, height: 256), mode: .fill)
        options.minimumDecodeSize = transformer.minimumDecodeSize
        let decoded = try JPEGDecoder().decode(data, options: options)
        #expect(!decoded.hasAlpha)
        let thumbnail = try transformer.transform(decoded)
        let (resized, _) = ImageTransformer.resizeGeometry(
            PixelSize(width: decoded.width, height: decoded.height), to: PixelSize(width: 256, height: 256),
            mode: .fill)
        let old = PixelOps.crop(
            Self.reference(decoded.frames[0], to: resized),
            PixelRect(x: (resized.width - 256) / 2, y: (resized.height - 256) / 2, width: 256, height: 256))
        #expect(thumbnail.width == 256 && thumbnail.height == 256)
        #expect(Self.largestDifference(thumbnail.frames[0], old) <= 1)
    }
}
