/// `LanczosResampler` for frames that keep 16 bits a channel (`ImageFrame.sixteenBitSamples`): the same
/// geometry (integer boxes first, then separable Lanczos-3 taps from `FilterTaps`, only the output window
/// computed) on premultiplied float values, rounded to 16 bits at the end, so a 16-bit source keeps its
/// 65,536 levels through a resize. Plain Swift loops: this path runs only when a caller asked for 16 bits.
enum SixteenBitResampler {
    /// `window` (already inside `0..<target`) of the RGBA16 `samples` (`width` × `height`) resampled to
    /// `target`.
    static func resize(
        _ samples: [UInt16], width: Int, height: Int, to target: PixelSize, window: PixelRect, duration: Double
    ) -> ImageFrame {
        let (factorX, factorY) = LanczosResampler.boxFactors(
            from: PixelSize(width: width, height: height), to: target)
        let plane = premultiplied(samples, width: width, height: height, boxX: factorX, boxY: factorY)
        let planeWidth = max(1, width / factorX)
        let planeHeight = max(1, height / factorY)
        let columns = FilterTaps.cached(
            input: planeWidth, output: target.width, range: window.x..<(window.x + window.width))
        let rows = FilterTaps.cached(
            input: planeHeight, output: target.height, range: window.y..<(window.y + window.height))
        let rowsRead = rows.inputSpan
        // Horizontal pass: the window's columns of every plane row the vertical taps read.
        var horizontal = [SIMD4<Float>](repeating: .zero, count: window.width * rowsRead.count)
        for (line, sourceRow) in rowsRead.enumerated() {
            for column in 0..<window.width {
                var sum = SIMD4<Float>.zero
                let start = columns.starts[column]
                for (tap, weight) in columns.weights[columns.offsets[column]..<columns.offsets[column + 1]].enumerated()
                {
                    sum += plane[sourceRow * planeWidth + start + tap] * weight
                }
                horizontal[line * window.width + column] = sum
            }
        }
        // Vertical pass, then back to straight alpha and 16 bits.
        var output = [UInt16](repeating: 0, count: window.width * window.height * 4)
        for row in 0..<window.height {
            let start = rows.starts[row] - rowsRead.lowerBound
            let weights = rows.weights[rows.offsets[row]..<rows.offsets[row + 1]]
            for column in 0..<window.width {
                var sum = SIMD4<Float>.zero
                for (tap, weight) in weights.enumerated() {
                    sum += horizontal[(start + tap) * window.width + column] * weight
                }
                let alpha = min(1, max(0, sum.w))
                let colour = alpha > 0 ? SIMD3(sum.x, sum.y, sum.z) / alpha : .zero
                let target = (row * window.width + column) * 4
                output[target] = level(colour.x)
                output[target + 1] = level(colour.y)
                output[target + 2] = level(colour.z)
                output[target + 3] = level(alpha)
            }
        }
        return ImageFrame(width: window.width, height: window.height, deepPixels: output, duration: duration)
    }

    /// A value of 0…1 as the nearest of 65,536 levels.
    private static func level(_ value: Float) -> UInt16 {
        UInt16(min(65535, max(0, (value * 65535).rounded())))
    }

    /// The samples premultiplied, as 0…1, with `boxX` × `boxY` boxes averaged into one value (the last row
    /// and column of boxes take what is left), as `PremultipliedPlane` does at 8 bits.
    private static func premultiplied(
        _ samples: [UInt16], width: Int, height: Int, boxX: Int, boxY: Int
    ) -> [SIMD4<Float>] {
        let outWidth = max(1, width / boxX)
        let outHeight = max(1, height / boxY)
        var values = [SIMD4<Float>](repeating: .zero, count: outWidth * outHeight)
        for oy in 0..<outHeight {
            let y0 = oy * boxY
            let y1 = oy == outHeight - 1 ? height : y0 + boxY
            for ox in 0..<outWidth {
                let x0 = ox * boxX
                let x1 = ox == outWidth - 1 ? width : x0 + boxX
                var sum = SIMD4<Float>.zero
                for y in y0..<y1 {
                    for x in x0..<x1 {
                        let source = (y * width + x) * 4
                        let alpha = Float(samples[source + 3]) / 65535
                        sum += SIMD4(
                            Float(samples[source]) / 65535 * alpha, Float(samples[source + 1]) / 65535 * alpha,
                            Float(samples[source + 2]) / 65535 * alpha, alpha)
                    }
                }
                values[oy * outWidth + ox] = sum / Float((y1 - y0) * (x1 - x0))
            }
        }
        return values
    }
}
