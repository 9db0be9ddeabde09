import Foundation

/// Pixel filters on every frame: a Gaussian blur, an unsharp mask and pixelation (imgproxy's `blur`,
/// `sharpen` and `pixelate`, run in that order as one step), and flattening onto a colour (`background`).
///
/// ```swift
/// let soft = ImageFilter.filters(blur: 2, sharpen: 0, pixelate: 1)
/// let opaque = ImageFilter.flatten(onto: ImageColor(red: 255, green: 0, blue: 0))
/// context.transformer = ImageTransformer.pipeline([.resize(to: box), soft, opaque])
/// ```
///
/// Choices, with libvips' numbers where imgproxy leaves the work to libvips:
/// - The blur's mask is libvips' `gaussblur` mask: taps out to where `exp(-x²/2σ²)` falls below 0.2, each
///   weighted `rint(20·exp(-x²/2σ²))` (its integer precision), normalised; edges repeat the border pixel.
///   A sigma below 0.2 changes nothing, as in libvips.
/// - The sharpen is an unsharp mask of our own with the tone curve of libvips' `sharpen` (its defaults:
///   below 2 units of difference nothing, beyond it 3 times the difference, at most 10 units brighter and
///   20 darker). libvips sharpens L\* of CIELAB; this one sharpens 8-bit luma (BT.601 weights) and adds
///   the same change to red, green and blue, one L\* unit counted as 2.55 levels: the colours' hue is kept
///   as libvips keeps a and b, without a trip through Lab for every pixel.
/// - Pixelation averages square blocks anchored at the top left corner; a block cut by the right or bottom
///   edge averages the pixels it has (libvips averages a mirrored extension there).
/// - With alpha, the filters work on premultiplied colour (imgproxy premultiplies for blur and sharpen;
///   here pixelation too, so the colour of invisible pixels never shows).
/// - `flatten` composes straight alpha over the colour; the result is opaque.
///
/// Memory: like `ImageTransformer`, it claims from the budget it is given the frames it makes and its
/// largest working buffer (a blur's 16-byte-per-pixel float plane) before it makes them.
public struct ImageFilter: ImageTransforming {
    enum Kind: Sendable, Hashable {
        case filters(blur: Double, sharpen: Double, pixelate: Int)
        case flatten(ImageColor)
    }

    let kind: Kind

    /// The largest blur or sharpen sigma: libvips' `gaussblur` refuses more than 1000.
    public static let largestSigma = 1000.0

    /// Blur with Gaussian `blur` sigma, then sharpen with `sharpen` sigma, then pixelate in `pixelate`-pixel
    /// blocks; a sigma of 0 and a block of 1 or less leave that filter out. Sigmas are clamped to
    /// 0…`largestSigma` (NaN counts as 0); a block larger than the frame's longer side is that side.
    public static func filters(blur: Double, sharpen: Double, pixelate: Int) -> ImageFilter {
        func clamped(_ sigma: Double) -> Double { sigma > 0 ? min(sigma, largestSigma) : 0 }
        return ImageFilter(kind: .filters(blur: clamped(blur), sharpen: clamped(sharpen), pixelate: max(1, pixelate)))
    }

    /// Composes the frames over `color` (its alpha ignored): the result is opaque.
    public static func flatten(onto color: ImageColor) -> ImageFilter {
        ImageFilter(kind: .flatten(ImageColor(red: color.red, green: color.green, blue: color.blue)))
    }

    /// `filters(blur,sharpen,pixelate)` or `flatten(#rrggbbff)`, with the clamped values.
    public var key: String {
        switch kind {
        case .filters(let blur, let sharpen, let pixelate): "filters(\(blur),\(sharpen),\(pixelate))"
        case .flatten(let color): "flatten(\(color))"
        }
    }

    /// Whether the step changes nothing (every filter off), so it can be left out.
    public var isIdentity: Bool {
        if case .filters(let blur, let sharpen, let pixelate) = kind {
            return blur < GaussianMask.smallestSigma && sharpen < GaussianMask.smallestSigma && pixelate <= 1
        }
        return false
    }

    /// The filtered image, claiming nothing.
    public func transform(_ image: Image) throws -> Image {
        try transform(image, budget: nil)
    }

    /// The filtered image, its frames and working buffer claimed from `budget` first (`badImageData` when
    /// the budget refuses).
    public func transform(_ image: Image, budget: DecodeMemoryBudget?) throws -> Image {
        if isIdentity { return image }
        let claim = try budget?.claim(
            memoryNeeded(for: image), for: "the filter \(key) on \(image.width)×\(image.height)", waits: true)
        defer { claim?.release() }
        var result = image
        switch kind {
        case .filters(let blur, let sharpen, let pixelate):
            let premultiplies = image.hasAlpha
            result.frames = image.frames.map { frame in
                guard frame.width > 0, frame.height > 0 else { return frame }
                var pixels = FilterPixels(frame)
                if premultiplies { pixels.premultiply() }
                if blur >= GaussianMask.smallestSigma { pixels.blur(GaussianMask(sigma: blur)) }
                if sharpen >= GaussianMask.smallestSigma { pixels.sharpen(GaussianMask(sigma: sharpen)) }
                if pixelate > 1 { pixels.pixelate(min(pixelate, max(frame.width, frame.height))) }
                if premultiplies { pixels.unpremultiply() }
                return pixels.frame(duration: frame.duration)
            }
        case .flatten(let color):
            guard image.hasAlpha else { return image }
            result.frames = image.frames.map { frame in
                var pixels = FilterPixels(frame)
                pixels.flatten(onto: color)
                return pixels.frame(duration: frame.duration)
            }
            result.hasAlpha = false
        }
        return result
    }

    /// The frames this makes and the largest working buffer of one frame.
    func memoryNeeded(for image: Image) -> Int {
        let frames = max(1, image.frames.count)
        let size = PixelSize(width: image.width, height: image.height)
        let pixels = PixelMemory.bytes(size)
        var working = 0
        if case .filters(let blur, let sharpen, _) = kind {
            // A blur's float plane is four floats a pixel (4 × the RGBA8 bytes); a sharpen's two luma planes
            // are two floats a pixel.
            if blur > 0 { working = pixels > Int.max / 4 ? Int.max : pixels * 4 }
            if sharpen > 0 { working = max(working, pixels > Int.max / 2 ? Int.max : pixels * 2) }
        }
        return PixelMemory.sum(PixelMemory.frameBytes(size, count: frames), working)
    }
}

/// The taps of libvips' separable Gaussian mask for one sigma (see `ImageFilter`).
struct GaussianMask {
    /// Below this sigma libvips' `gaussblur` copies the image.
    static let smallestSigma = 0.2

    /// The normalised weights, from `-radius` to `radius`.
    let weights: [Float]

    var radius: Int { weights.count / 2 }

    init(sigma: Double) {
        let twiceVariance = 2 * sigma * sigma
        // The first distance whose amplitude is below 0.2, searched no further than 8σ; the mask ends one
        // before it. libvips stops at 5000; sigma is at most 1000, so 8σ is reached first only for tiny sigma.
        let limit = max(1, Int(8 * sigma))
        var end = 1
        while end < limit, exp(-Double(end * end) / twiceVariance) >= 0.2 { end += 1 }
        let raw = (-(end - 1)...(end - 1)).map { x in (20 * exp(-Double(x * x) / twiceVariance)).rounded() }
        let sum = raw.reduce(0, +)
        weights = raw.map { Float($0 / sum) }
    }
}

/// One frame's RGBA8 pixels, tightly packed, and the filters' passes over them.
struct FilterPixels {
    let width: Int
    let height: Int
    var pixels: [UInt8]

    init(_ frame: ImageFrame) {
        width = frame.width
        height = frame.height
        if frame.bytesPerRow == frame.width * 4 {
            pixels = frame.pixels
        } else {
            var packed = [UInt8]()
            packed.reserveCapacity(frame.width * frame.height * 4)
            for row in 0..<frame.height {
                let start = row * frame.bytesPerRow
                packed += frame.pixels[start..<(start + frame.width * 4)]
            }
            pixels = packed
        }
    }

    func frame(duration: TimeInterval) -> ImageFrame {
        ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels, duration: duration)
    }

    mutating func premultiply() {
        pixels.withUnsafeMutableBufferPointer { p in
            for index in stride(from: 0, to: p.count, by: 4) {
                let alpha = UInt32(p[index + 3])
                guard alpha != 255 else { continue }
                for channel in 0..<3 {
                    p[index + channel] = UInt8((UInt32(p[index + channel]) * alpha + 127) / 255)
                }
            }
        }
    }

    mutating func unpremultiply() {
        pixels.withUnsafeMutableBufferPointer { p in
            for index in stride(from: 0, to: p.count, by: 4) {
                let alpha = UInt32(p[index + 3])
                guard alpha != 255 else { continue }
                for channel in 0..<3 {
                    let value = alpha == 0 ? 0 : min(255, (UInt32(p[index + channel]) * 255 + alpha / 2) / alpha)
                    p[index + channel] = UInt8(value)
                }
            }
        }
    }

    /// Composes straight alpha over `color`.
    mutating func flatten(onto color: ImageColor) {
        let background = [UInt32(color.red), UInt32(color.green), UInt32(color.blue)]
        pixels.withUnsafeMutableBufferPointer { p in
            for index in stride(from: 0, to: p.count, by: 4) {
                let alpha = UInt32(p[index + 3])
                for channel in 0..<3 {
                    let mixed = UInt32(p[index + channel]) * alpha + background[channel] * (255 - alpha)
                    p[index + channel] = UInt8((mixed + 127) / 255)
                }
                p[index + 3] = 255
            }
        }
    }

    /// The separable blur of all four channels.
    mutating func blur(_ mask: GaussianMask) {
        var plane = [Float](repeating: 0, count: pixels.count)
        pixels.withUnsafeBufferPointer { source in
            plane.withUnsafeMutableBufferPointer { target in
                guard let input = source.baseAddress, let output = target.baseAddress else { return }
                for row in 0..<height {
                    Self.convolveRow(
                        input + row * width * 4, into: output + row * width * 4, count: width, channels: 4,
                        mask.weights)
                }
            }
        }
        plane.withUnsafeBufferPointer { source in
            pixels.withUnsafeMutableBufferPointer { target in
                Self.convolveColumns(source, width: width * 4, height: height, mask.weights) { row, sums in
                    // Sums of non-negative weights that add to 1 stay in 0…255; the clamp keeps a rounding
                    // error from reaching the conversion, which truncates (+ 0.5 rounds).
                    for index in 0..<sums.count {
                        target[row * width * 4 + index] = UInt8(min(255, max(0, sums[index])) + 0.5)
                    }
                }
            }
        }
    }

    /// The unsharp mask: each pixel's luma against its blurred luma, through libvips' sharpen curve, added
    /// to red, green and blue.
    mutating func sharpen(_ mask: GaussianMask) {
        var luma = [Float](repeating: 0, count: width * height)
        pixels.withUnsafeBufferPointer { p in
            for index in 0..<luma.count {
                let red = Float(p[index * 4])
                let green = Float(p[index * 4 + 1])
                let blue = Float(p[index * 4 + 2])
                luma[index] = 0.299 * red + 0.587 * green + 0.114 * blue
            }
        }
        var horizontal = [Float](repeating: 0, count: luma.count)
        luma.withUnsafeBufferPointer { source in
            horizontal.withUnsafeMutableBufferPointer { target in
                guard let input = source.baseAddress, let output = target.baseAddress else { return }
                for row in 0..<height {
                    Self.convolveRow(
                        input + row * width, into: output + row * width, count: width, channels: 1, mask.weights)
                }
            }
        }
        let levelsPerUnit: Float = 2.55
        horizontal.withUnsafeBufferPointer { source in
            pixels.withUnsafeMutableBufferPointer { target in
                Self.convolveColumns(source, width: width, height: height, mask.weights) { row, blurred in
                    for x in 0..<width {
                        let difference = (luma[row * width + x] - blurred[x]) / levelsPerUnit
                        let change = Self.sharpenCurve(difference) * levelsPerUnit
                        let index = (row * width + x) * 4
                        for channel in 0..<3 {
                            let value = (Float(target[index + channel]) + change).rounded()
                            target[index + channel] = UInt8(clamping: Int(value))
                        }
                    }
                }
            }
        }
    }

    /// libvips' sharpen curve at its defaults (x1 2, m1 0, m2 3, y2 10, y3 20), in L\* units.
    static func sharpenCurve(_ difference: Float) -> Float {
        let threshold: Float = 2
        let slope: Float = 3
        let change: Float
        if difference < -threshold {
            change = (difference + threshold) * slope
        } else if difference < threshold {
            change = 0
        } else {
            change = (difference - threshold) * slope
        }
        return min(10, max(-20, change))
    }

    /// Blocks of `size`×`size` pixels, each the rounded mean of its pixels.
    mutating func pixelate(_ size: Int) {
        let columns = (width + size - 1) / size
        var sums = [Int](repeating: 0, count: columns * 4)
        pixels.withUnsafeMutableBufferPointer { p in
            for top in stride(from: 0, to: height, by: size) {
                let bottom = min(height, top + size)
                for index in 0..<sums.count { sums[index] = 0 }
                for row in top..<bottom {
                    for x in 0..<width {
                        for channel in 0..<4 {
                            sums[(x / size) * 4 + channel] += Int(p[(row * width + x) * 4 + channel])
                        }
                    }
                }
                for row in top..<bottom {
                    for x in 0..<width {
                        let block = x / size
                        let count = (min(width, (block + 1) * size) - block * size) * (bottom - top)
                        for channel in 0..<4 {
                            p[(row * width + x) * 4 + channel] = UInt8((sums[block * 4 + channel] + count / 2) / count)
                        }
                    }
                }
            }
        }
    }

    /// One row of `count` pixels of `channels` values convolved with `weights` along the row, the border
    /// pixel repeated past each end.
    static func convolveRow<Value: BinaryInteger>(
        _ input: UnsafePointer<Value>, into output: UnsafeMutablePointer<Float>, count: Int, channels: Int,
        _ weights: [Float]
    ) {
        convolveRowValues(count: count, channels: channels, weights, into: output) { Float(input[$0]) }
    }

    static func convolveRow(
        _ input: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>, count: Int, channels: Int,
        _ weights: [Float]
    ) {
        convolveRowValues(count: count, channels: channels, weights, into: output) { input[$0] }
    }

    /// The row padded by the mask's radius on each side (border repeated), then one multiply-add pass per
    /// tap over contiguous values, which the compiler vectorises.
    @inline(__always)
    static func convolveRowValues(
        count: Int, channels: Int, _ weights: [Float], into output: UnsafeMutablePointer<Float>,
        value: (Int) -> Float
    ) {
        let radius = weights.count / 2
        let values = count * channels
        var padded = [Float](repeating: 0, count: (count + 2 * radius) * channels)
        for position in 0..<(count + 2 * radius) {
            let source = min(count - 1, max(0, position - radius))
            for channel in 0..<channels { padded[position * channels + channel] = value(source * channels + channel) }
        }
        output.update(repeating: 0, count: values)
        padded.withUnsafeBufferPointer { row in
            guard let row = row.baseAddress else { return }
            for (tap, weight) in weights.enumerated() {
                let shifted = row + tap * channels
                for index in 0..<values { output[index] += weight * shifted[index] }
            }
        }
    }

    /// The vertical pass over a plane of `height` rows of `width` values: each output row's sums, the
    /// border row repeated past each end, handed to `body` before the next row is made.
    static func convolveColumns(
        _ plane: UnsafeBufferPointer<Float>, width: Int, height: Int, _ weights: [Float],
        _ body: (Int, UnsafeMutableBufferPointer<Float>) -> Void
    ) {
        guard let base = plane.baseAddress else { return }
        let radius = weights.count / 2
        var sums = [Float](repeating: 0, count: width)
        sums.withUnsafeMutableBufferPointer { sums in
            guard let accumulator = sums.baseAddress else { return }
            for row in 0..<height {
                accumulator.update(repeating: 0, count: width)
                for (tap, weight) in weights.enumerated() {
                    let source = base + min(height - 1, max(0, row + tap - radius)) * width
                    for index in 0..<width { accumulator[index] += weight * source[index] }
                }
                body(row, sums)
            }
        }
    }
}
