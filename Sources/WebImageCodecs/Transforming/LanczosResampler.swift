import Foundation

/// High-quality resampling for the transformers: separable Lanczos-3 on premultiplied alpha.
///
/// Shrinking by more than 2× first averages whole boxes of pixels (an integer factor that leaves between
/// 1× and 2× for the filter), which is what the filter would compute over its wide support anyway, at a
/// fraction of the cost. Every step works on premultiplied values, so fully transparent pixels (whose
/// colour is often black) never bleed into their neighbours: no dark fringes along transparent edges.
/// Enlarging uses the same filter at its natural width.
enum LanczosResampler {
    /// `frame` resampled to `size` (at least 1×1); the frame itself when the size already matches.
    static func resize(_ frame: ImageFrame, to size: PixelSize) -> ImageFrame {
        let target = PixelSize(width: max(1, size.width), height: max(1, size.height))
        guard target.width != frame.width || target.height != frame.height else { return frame }
        let (factorX, factorY) = boxFactors(from: PixelSize(width: frame.width, height: frame.height), to: target)
        // Box reduction straight from the 8-bit pixels: the full-size float plane (16 bytes a pixel) is
        // never made.
        var plane = PremultipliedPlane(frame, boxX: factorX, boxY: factorY)
        if plane.width != target.width { plane = plane.filteredHorizontally(to: target.width) }
        if plane.height != target.height { plane = plane.filteredVertically(to: target.height) }
        return ImageFrame(
            width: target.width, height: target.height, bytesPerRow: target.width * 4, pixels: plane.straightRGBA(),
            duration: frame.duration)
    }

    /// The integer box factors taken before filtering: whatever leaves between 1× and 2× for the filter.
    static func boxFactors(from source: PixelSize, to target: PixelSize) -> (x: Int, y: Int) {
        (max(1, source.width / max(1, target.width) / 2), max(1, source.height / max(1, target.height) / 2))
    }

    /// The most bytes of float planes `resize` holds at once from `source` to `target` (the box-reduced
    /// plane and the two filtered ones, counted together), beside the input and output frames.
    static func workingBytes(from source: PixelSize, to target: PixelSize) -> Int {
        guard source != target else { return 0 }
        let (factorX, factorY) = boxFactors(from: source, to: target)
        let reduced = PixelSize(width: max(1, source.width / factorX), height: max(1, source.height / factorY))
        let plane = PixelMemory.bytes(reduced, count: 4)
        let horizontal =
            reduced.width == target.width
            ? 0 : PixelMemory.bytes(PixelSize(width: target.width, height: reduced.height), count: 4)
        let vertical = reduced.height == target.height ? 0 : PixelMemory.bytes(target, count: 4)
        return PixelMemory.sum(plane, horizontal, vertical)
    }

    /// Lanczos-3: sinc(x)·sinc(x/3) for |x| < 3.
    static func lanczos3(_ x: Double) -> Double {
        let x = abs(x)
        if x < 1e-9 { return 1 }
        if x >= 3 { return 0 }
        let pix = Double.pi * x
        return 3 * sin(pix) * sin(pix / 3) / (pix * pix)
    }

    /// For each output position along one axis, the first input index and its normalised weights.
    struct Contributions {
        let starts: [Int]
        let weights: [[Float]]

        init(input: Int, output: Int) {
            let scale = Double(input) / Double(output)
            let support = 3 * max(1, scale)
            let filterScale = max(1, scale)
            var starts: [Int] = []
            var weights: [[Float]] = []
            starts.reserveCapacity(output)
            weights.reserveCapacity(output)
            for index in 0..<output {
                let center = (Double(index) + 0.5) * scale
                let first = max(0, Int((center - support).rounded(.down)))
                let last = min(input - 1, Int((center + support).rounded(.up)))
                var row: [Double] = []
                var total = 0.0
                if first <= last {
                    for source in first...last {
                        let weight = LanczosResampler.lanczos3((Double(source) + 0.5 - center) / filterScale)
                        row.append(weight)
                        total += weight
                    }
                }
                if total == 0 {
                    starts.append(min(max(0, Int(center)), input - 1))
                    weights.append([1])
                } else {
                    starts.append(first)
                    weights.append(row.map { Float($0 / total) })
                }
            }
            self.starts = starts
            self.weights = weights
        }
    }
}

/// RGBA as premultiplied Floats (0…255 scale), one SIMD4 per pixel, row-major.
struct PremultipliedPlane {
    let width: Int
    let height: Int
    var values: [SIMD4<Float>]

    init(width: Int, height: Int, values: [SIMD4<Float>]) {
        self.width = width
        self.height = height
        self.values = values
    }

    /// The frame premultiplied, with `boxX` × `boxY` boxes of it averaged into one value (the last row
    /// and column of boxes take what is left); 1 × 1 keeps every pixel.
    init(_ frame: ImageFrame, boxX factorX: Int = 1, boxY factorY: Int = 1) {
        let sourceWidth = frame.width
        let sourceHeight = frame.height
        width = max(1, sourceWidth / max(1, factorX))
        height = max(1, sourceHeight / max(1, factorY))
        let (outWidth, outHeight) = (width, height)
        var values = [SIMD4<Float>](repeating: .zero, count: outWidth * outHeight)
        frame.pixels.withUnsafeBufferPointer { pixels in
            values.withUnsafeMutableBufferPointer { out in
                for oy in 0..<outHeight {
                    let y0 = oy * factorY
                    let y1 = oy == outHeight - 1 ? sourceHeight : y0 + factorY
                    for ox in 0..<outWidth {
                        let x0 = ox * factorX
                        let x1 = ox == outWidth - 1 ? sourceWidth : x0 + factorX
                        var sum = SIMD4<Float>.zero
                        for y in y0..<y1 {
                            let row = y * frame.bytesPerRow
                            for x in x0..<x1 {
                                let source = row + x * 4
                                let pixel = SIMD4<Float>(
                                    Float(pixels[source]), Float(pixels[source + 1]), Float(pixels[source + 2]),
                                    Float(pixels[source + 3]))
                                let scale = pixel.w / 255
                                sum += SIMD4(pixel.x * scale, pixel.y * scale, pixel.z * scale, pixel.w)
                            }
                        }
                        let count = (y1 - y0) * (x1 - x0)
                        out[oy * outWidth + ox] = count == 1 ? sum : sum / Float(count)
                    }
                }
            }
        }
        self.values = values
    }

    func filteredHorizontally(to outWidth: Int) -> PremultipliedPlane {
        let contributions = LanczosResampler.Contributions(input: width, output: outWidth)
        // The weights flattened, with each output's offset into them, so the inner loop reads one array.
        var offsets = [Int](repeating: 0, count: outWidth + 1)
        var flat: [Float] = []
        for ox in 0..<outWidth {
            flat += contributions.weights[ox]
            offsets[ox + 1] = flat.count
        }
        var out = [SIMD4<Float>](repeating: .zero, count: outWidth * height)
        values.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                flat.withUnsafeBufferPointer { weights in
                    for y in 0..<height {
                        let row = y * width
                        let outRow = y * outWidth
                        for ox in 0..<outWidth {
                            var sum = SIMD4<Float>.zero
                            var index = row + contributions.starts[ox]
                            for k in offsets[ox]..<offsets[ox + 1] {
                                sum += input[index] * weights[k]
                                index += 1
                            }
                            output[outRow + ox] = sum
                        }
                    }
                }
            }
        }
        return PremultipliedPlane(width: outWidth, height: height, values: out)
    }

    func filteredVertically(to outHeight: Int) -> PremultipliedPlane {
        let contributions = LanczosResampler.Contributions(input: height, output: outHeight)
        var out = [SIMD4<Float>](repeating: .zero, count: width * outHeight)
        values.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                for oy in 0..<outHeight {
                    let target = oy * width
                    var sourceRow = contributions.starts[oy] * width
                    for weight in contributions.weights[oy] {
                        for x in 0..<width { output[target + x] += input[sourceRow + x] * weight }
                        sourceRow += width
                    }
                }
            }
        }
        return PremultipliedPlane(width: width, height: outHeight, values: out)
    }

    /// Back to straight-alpha RGBA8, rounded and clamped (Lanczos overshoots near edges).
    func straightRGBA() -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        values.withUnsafeBufferPointer { input in
            pixels.withUnsafeMutableBufferPointer { out in
                for index in 0..<input.count {
                    let value = input[index]
                    let alpha = Swift.min(255, value.w)
                    guard alpha >= 0.5 else { continue }
                    let scale = 255 / alpha
                    let target = index * 4
                    // Adding 0.5 and truncating rounds the clamped, non-negative values.
                    out[target] = UInt8(Swift.min(255, Swift.max(0, value.x * scale)) + 0.5)
                    out[target + 1] = UInt8(Swift.min(255, Swift.max(0, value.y * scale)) + 0.5)
                    out[target + 2] = UInt8(Swift.min(255, Swift.max(0, value.z * scale)) + 0.5)
                    out[target + 3] = UInt8(alpha + 0.5)
                }
            }
        }
        return pixels
    }
}
