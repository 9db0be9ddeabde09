import Foundation
import WebImage

/// Blurs boxes of a frame as img2dataset's `BoundingBoxBlurrer` does (after ImageNet's face
/// obfuscation): each box grows by a tenth of its larger side on every side; one Gaussian blur whose
/// kernel is `2 × ⌈0.1 × the largest box's larger side⌉ + 1` pixels wide (at least 3; its sigma from the
/// kernel size, as OpenCV derives it) is applied to the image and to the boxes' mask, and each pixel
/// mixes the sharp and blurred image by the blurred mask. So the blur scales with the box size, and its
/// edge is soft.
///
/// Pixels further than the kernel's radius from every grown box keep their exact value; only the region
/// around the boxes is computed, in bands of rows, so the working memory stays a few bands of that
/// region. Edges reflect (OpenCV's default border). All four channels are blurred.
enum BoundingBoxBlur {
    /// `frame` with `boxes` blurred; `frame` itself when there is nothing to blur.
    static func blur(_ frame: ImageFrame, boxes: [BlurBox]) -> ImageFrame {
        let width = frame.width
        let height = frame.height
        guard !boxes.isEmpty, width > 0, height > 0 else { return frame }
        let (rects, largest) = grownRects(boxes, width: width, height: height)
        guard !rects.isEmpty else { return frame }
        // A box larger than the image blurs as one the image's size (img2dataset's would grow further).
        let kernel = gaussianKernel(side: min(largest, max(width, height)))
        let radius = kernel.count / 2

        // The region the blurred mask reaches (`out`): the mask's extent and one radius around it.
        let out = Rect(
            x0: max(0, rects.map(\.x0).min()! - radius), y0: max(0, rects.map(\.y0).min()! - radius),
            x1: min(width, rects.map(\.x1).max()! + radius), y1: min(height, rects.map(\.y1).max()! + radius)
        )
        var result = frame
        // Bands of output rows, each reading its rows one radius above and below (reflected at the
        // edges): the working memory is (band + 2 radius) rows of `out`, five floats a pixel, whatever the
        // image's height; a band at least twice the radius keeps the recomputed rows under half the work.
        let band = max(64, 2 * radius)
        var maskRow = [Float](repeating: 0, count: width)
        var horizontal: [Float] = []
        for bandStart in stride(from: out.y0, to: out.y1, by: band) {
            let bandEnd = min(out.y1, bandStart + band)
            let first = max(0, bandStart - radius)
            let last = min(height, bandEnd + radius)
            blurRows(
                first..<last, of: frame, rects: rects, kernel: kernel, columns: out.x0..<out.x1, maskRow: &maskRow,
                into: &horizontal)
            mixRows(
                bandStart..<bandEnd, of: frame, into: &result, kernel: kernel, columns: out.x0..<out.x1,
                horizontal: horizontal, firstRow: first)
        }
        return result
    }

    /// A rectangle in pixels, `x1` and `y1` excluded.
    private typealias Rect = (x0: Int, y0: Int, x1: Int, y1: Int)

    /// The boxes in pixels, each grown by a tenth of its larger side and held inside the image (empty ones
    /// dropped), and the largest box's larger side before growing.
    private static func grownRects(_ boxes: [BlurBox], width: Int, height: Int) -> (rects: [Rect], largest: Int) {
        var rects: [Rect] = []
        var largest = 0
        for box in boxes {
            // Python's int() truncates toward zero; the same here. Fractions far outside the image are
            // held to -1…2 first, so that no product overflows an Int.
            func scaled(_ fraction: Double, _ side: Int) -> Int { Int(min(max(fraction, -1), 2) * Double(side)) }
            var x0 = scaled(box.x0, width)
            var y0 = scaled(box.y0, height)
            var x1 = scaled(box.x1, width)
            var y1 = scaled(box.y1, height)
            let side = max(x1 - x0, y1 - y0)
            largest = max(largest, side)
            let grow = 0.1 * Double(side)
            x0 = min(max(Int(Double(x0) - grow), 0), width - 1)
            y0 = min(max(Int(Double(y0) - grow), 0), height - 1)
            x1 = min(max(Int(Double(x1) + grow), 0), width - 1)
            y1 = min(max(Int(Double(y1) + grow), 0), height - 1)
            if x1 > x0 && y1 > y0 { rects.append((x0, y0, x1, y1)) }
        }
        return (rects, largest)
    }

    /// The horizontal pass over `rows`: for each pixel of `columns`, the kernel's sums of the mask and of
    /// the four channels, five floats a pixel, row after row, replacing what `horizontal` held (its
    /// capacity is kept from band to band). `maskRow` is scratch space of the image's width.
    private static func blurRows(
        _ rows: Range<Int>, of frame: ImageFrame, rects: [Rect], kernel: [Float], columns: Range<Int>,
        maskRow: inout [Float], into horizontal: inout [Float]
    ) {
        let width = frame.width
        let radius = kernel.count / 2
        horizontal.removeAll(keepingCapacity: true)
        horizontal.reserveCapacity(rows.count * columns.count * 5)
        for y in rows {
            for x in 0..<width { maskRow[x] = 0 }
            for rect in rects where (rect.y0..<rect.y1).contains(y) {
                for x in rect.x0..<rect.x1 { maskRow[x] = 1 }
            }
            let row = y * frame.bytesPerRow
            for x in columns {
                var sums: (Float, Float, Float, Float, Float) = (0, 0, 0, 0, 0)
                for (offset, weight) in kernel.enumerated() {
                    let sx = reflect(x + offset - radius, width)
                    let pixel = row + sx * 4
                    sums.0 += weight * maskRow[sx]
                    sums.1 += weight * Float(frame.pixels[pixel])
                    sums.2 += weight * Float(frame.pixels[pixel + 1])
                    sums.3 += weight * Float(frame.pixels[pixel + 2])
                    sums.4 += weight * Float(frame.pixels[pixel + 3])
                }
                horizontal.append(sums.0)
                horizontal.append(sums.1)
                horizontal.append(sums.2)
                horizontal.append(sums.3)
                horizontal.append(sums.4)
            }
        }
    }

    /// The vertical pass over `rows` of the band whose horizontal sums (`blurRows`) start at `firstRow`:
    /// each pixel of `columns` under the blurred mask mixes `frame`'s sharp value with the blurred one into
    /// `result`; pixels the mask does not reach are left as they are.
    private static func mixRows(
        _ rows: Range<Int>, of frame: ImageFrame, into result: inout ImageFrame, kernel: [Float],
        columns: Range<Int>, horizontal: [Float], firstRow first: Int
    ) {
        let radius = kernel.count / 2
        for y in rows {
            for x in columns {
                var sums: (Float, Float, Float, Float, Float) = (0, 0, 0, 0, 0)
                for (offset, weight) in kernel.enumerated() {
                    // Reflected rows stay within the band's rows and one radius around them.
                    let sy = reflect(y + offset - radius, frame.height)
                    let index = ((sy - first) * columns.count + x - columns.lowerBound) * 5
                    sums.0 += weight * horizontal[index]
                    sums.1 += weight * horizontal[index + 1]
                    sums.2 += weight * horizontal[index + 2]
                    sums.3 += weight * horizontal[index + 3]
                    sums.4 += weight * horizontal[index + 4]
                }
                let amount = min(1, max(0, sums.0))
                guard amount > 0 else { continue }
                let pixel = y * frame.bytesPerRow + x * 4
                func mix(_ channel: Int, _ blurred: Float) {
                    let mixed = Float(frame.pixels[pixel + channel]) * (1 - amount) + blurred * amount
                    result.pixels[pixel + channel] = UInt8(min(255, max(0, mixed.rounded())))
                }
                mix(0, sums.1)
                mix(1, sums.2)
                mix(2, sums.3)
                mix(3, sums.4)
            }
        }
    }

    /// The normalised Gaussian kernel for boxes whose largest side is `side` pixels: `2⌈0.1 side⌉ + 1`
    /// taps (at least 3), sigma `0.3 ((taps − 1) / 2 − 1) + 0.8` (OpenCV's for a kernel size alone).
    static func gaussianKernel(side: Int) -> [Float] {
        let radius = max(1, Int((0.1 * Double(side)).rounded(.up)))
        let sigma = 0.3 * (Double(radius) - 1) + 0.8
        let weights = (-radius...radius).map { exp(-Double($0 * $0) / (2 * sigma * sigma)) }
        let total = weights.reduce(0, +)
        return weights.map { Float($0 / total) }
    }

    /// `position` reflected into `0..<count` without repeating the edge pixel (OpenCV's
    /// `BORDER_REFLECT_101`: -1 is 1, `count` is `count − 2`), reflecting again while it is out.
    static func reflect(_ position: Int, _ count: Int) -> Int {
        guard count > 1 else { return 0 }
        var value = position
        while value < 0 || value >= count {
            value = value < 0 ? -value : 2 * (count - 1) - value
        }
        return value
    }
}
