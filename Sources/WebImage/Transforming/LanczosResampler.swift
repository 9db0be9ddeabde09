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
        var plane = PremultipliedPlane(frame)
        let factorX = max(1, frame.width / target.width / 2)
        let factorY = max(1, frame.height / target.height / 2)
        if factorX > 1 || factorY > 1 { plane = plane.boxReduced(factorX: factorX, factorY: factorY) }
        if plane.width != target.width { plane = plane.filteredHorizontally(to: target.width) }
        if plane.height != target.height { plane = plane.filteredVertically(to: target.height) }
        return ImageFrame(
            width: target.width, height: target.height, bytesPerRow: target.width * 4, pixels: plane.straightRGBA(),
            duration: frame.duration)
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

/// RGBA as premultiplied Floats (0…255 scale), row-major.
struct PremultipliedPlane {
    let width: Int
    let height: Int
    var values: [Float]

    init(width: Int, height: Int, values: [Float]) {
        self.width = width
        self.height = height
        self.values = values
    }

    init(_ frame: ImageFrame) {
        width = frame.width
        height = frame.height
        var values = [Float](repeating: 0, count: frame.width * frame.height * 4)
        frame.pixels.withUnsafeBufferPointer { pixels in
            values.withUnsafeMutableBufferPointer { out in
                for y in 0..<frame.height {
                    let row = y * frame.bytesPerRow
                    let outRow = y * frame.width * 4
                    for x in 0..<frame.width {
                        let source = row + x * 4
                        let alpha = Float(pixels[source + 3])
                        let scale = alpha / 255
                        let target = outRow + x * 4
                        out[target] = Float(pixels[source]) * scale
                        out[target + 1] = Float(pixels[source + 1]) * scale
                        out[target + 2] = Float(pixels[source + 2]) * scale
                        out[target + 3] = alpha
                    }
                }
            }
        }
        self.values = values
    }

    /// Averages `factorX` × `factorY` boxes (the last row and column of boxes take what is left).
    func boxReduced(factorX: Int, factorY: Int) -> PremultipliedPlane {
        let outWidth = max(1, width / factorX)
        let outHeight = max(1, height / factorY)
        var out = [Float](repeating: 0, count: outWidth * outHeight * 4)
        values.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                for oy in 0..<outHeight {
                    let y0 = oy * factorY
                    let y1 = oy == outHeight - 1 ? height : y0 + factorY
                    for ox in 0..<outWidth {
                        let x0 = ox * factorX
                        let x1 = ox == outWidth - 1 ? width : x0 + factorX
                        var sums: (Float, Float, Float, Float) = (0, 0, 0, 0)
                        for y in y0..<y1 {
                            var index = (y * width + x0) * 4
                            for _ in x0..<x1 {
                                sums.0 += input[index]
                                sums.1 += input[index + 1]
                                sums.2 += input[index + 2]
                                sums.3 += input[index + 3]
                                index += 4
                            }
                        }
                        let count = Float((y1 - y0) * (x1 - x0))
                        let target = (oy * outWidth + ox) * 4
                        output[target] = sums.0 / count
                        output[target + 1] = sums.1 / count
                        output[target + 2] = sums.2 / count
                        output[target + 3] = sums.3 / count
                    }
                }
            }
        }
        return PremultipliedPlane(width: outWidth, height: outHeight, values: out)
    }

    func filteredHorizontally(to outWidth: Int) -> PremultipliedPlane {
        let contributions = LanczosResampler.Contributions(input: width, output: outWidth)
        var out = [Float](repeating: 0, count: outWidth * height * 4)
        values.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                for y in 0..<height {
                    let row = y * width * 4
                    for ox in 0..<outWidth {
                        let start = contributions.starts[ox]
                        var sums: (Float, Float, Float, Float) = (0, 0, 0, 0)
                        var index = row + start * 4
                        for weight in contributions.weights[ox] {
                            sums.0 += input[index] * weight
                            sums.1 += input[index + 1] * weight
                            sums.2 += input[index + 2] * weight
                            sums.3 += input[index + 3] * weight
                            index += 4
                        }
                        let target = (y * outWidth + ox) * 4
                        output[target] = sums.0
                        output[target + 1] = sums.1
                        output[target + 2] = sums.2
                        output[target + 3] = sums.3
                    }
                }
            }
        }
        return PremultipliedPlane(width: outWidth, height: height, values: out)
    }

    func filteredVertically(to outHeight: Int) -> PremultipliedPlane {
        let contributions = LanczosResampler.Contributions(input: height, output: outHeight)
        let rowLength = width * 4
        var out = [Float](repeating: 0, count: rowLength * outHeight)
        values.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                for oy in 0..<outHeight {
                    let target = oy * rowLength
                    var sourceRow = contributions.starts[oy] * rowLength
                    for weight in contributions.weights[oy] {
                        for index in 0..<rowLength {
                            output[target + index] += input[sourceRow + index] * weight
                        }
                        sourceRow += rowLength
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
                var index = 0
                while index < input.count {
                    let alpha = min(255, max(0, input[index + 3]))
                    let roundedAlpha = UInt8(alpha.rounded())
                    out[index + 3] = roundedAlpha
                    if roundedAlpha > 0 {
                        let scale = 255 / alpha
                        for channel in 0..<3 {
                            out[index + channel] = UInt8(min(255, max(0, input[index + channel] * scale)).rounded())
                        }
                    }
                    index += 4
                }
            }
        }
        return pixels
    }
}
