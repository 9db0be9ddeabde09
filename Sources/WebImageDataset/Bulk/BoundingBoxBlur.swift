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
/// around the boxes is computed. Edges reflect (OpenCV's default border). All four channels are blurred.
enum BoundingBoxBlur {
    /// `frame` with `boxes` blurred; `frame` itself when there is nothing to blur.
    static func blur(_ frame: ImageFrame, boxes: [BlurBox]) -> ImageFrame {
        let width = frame.width
        let height = frame.height
        guard !boxes.isEmpty, width > 0, height > 0 else { return frame }
        var rects: [(x0: Int, y0: Int, x1: Int, y1: Int)] = []
        var largest = 0
        for box in boxes {
            // Python's int() truncates toward zero; the same here.
            var x0 = Int(box.x0 * Double(width))
            var y0 = Int(box.y0 * Double(height))
            var x1 = Int(box.x1 * Double(width))
            var y1 = Int(box.y1 * Double(height))
            let side = max(x1 - x0, y1 - y0)
            largest = max(largest, side)
            let grow = 0.1 * Double(side)
            x0 = min(max(Int(Double(x0) - grow), 0), width - 1)
            y0 = min(max(Int(Double(y0) - grow), 0), height - 1)
            x1 = min(max(Int(Double(x1) + grow), 0), width - 1)
            y1 = min(max(Int(Double(y1) + grow), 0), height - 1)
            if x1 > x0 && y1 > y0 { rects.append((x0, y0, x1, y1)) }
        }
        guard !rects.isEmpty else { return frame }
        let kernel = gaussianKernel(side: largest)
        let radius = kernel.count / 2

        // The mask's extent, the region the blurred mask reaches (`out`), and the pixels that region's
        // blur reads (`work`, one more radius out).
        let mask = (
            x0: rects.map(\.x0).min()!, y0: rects.map(\.y0).min()!, x1: rects.map(\.x1).max()!,
            y1: rects.map(\.y1).max()!
        )
        let out = (
            x0: max(0, mask.x0 - radius), y0: max(0, mask.y0 - radius), x1: min(width, mask.x1 + radius),
            y1: min(height, mask.y1 + radius)
        )
        let work = (
            x0: max(0, out.x0 - radius), y0: max(0, out.y0 - radius), x1: min(width, out.x1 + radius),
            y1: min(height, out.y1 + radius)
        )
        let workWidth = work.x1 - work.x0
        let workHeight = work.y1 - work.y0
        let outWidth = out.x1 - out.x0

        // Five planes: the mask, then R, G, B, A; each as wide as `out`, as tall as `work` after the
        // horizontal pass.
        var maskPlane = [Float](repeating: 0, count: workWidth * workHeight)
        for rect in rects {
            for y in rect.y0..<rect.y1 {
                let row = (y - work.y0) * workWidth
                for x in rect.x0..<rect.x1 { maskPlane[row + x - work.x0] = 1 }
            }
        }
        var horizontal = [Float](repeating: 0, count: outWidth * workHeight * 5)
        for y in work.y0..<work.y1 {
            let wy = y - work.y0
            for x in out.x0..<out.x1 {
                var sums: (Float, Float, Float, Float, Float) = (0, 0, 0, 0, 0)
                for (offset, weight) in kernel.enumerated() {
                    let sx = reflect(x + offset - radius, width)
                    let pixel = y * frame.bytesPerRow + sx * 4
                    sums.0 += weight * maskPlane[wy * workWidth + sx - work.x0]
                    sums.1 += weight * Float(frame.pixels[pixel])
                    sums.2 += weight * Float(frame.pixels[pixel + 1])
                    sums.3 += weight * Float(frame.pixels[pixel + 2])
                    sums.4 += weight * Float(frame.pixels[pixel + 3])
                }
                let index = (wy * outWidth + x - out.x0) * 5
                horizontal[index] = sums.0
                horizontal[index + 1] = sums.1
                horizontal[index + 2] = sums.2
                horizontal[index + 3] = sums.3
                horizontal[index + 4] = sums.4
            }
        }
        var result = frame
        for y in out.y0..<out.y1 {
            for x in out.x0..<out.x1 {
                var sums: (Float, Float, Float, Float, Float) = (0, 0, 0, 0, 0)
                for (offset, weight) in kernel.enumerated() {
                    let sy = reflect(y + offset - radius, height)
                    let index = ((sy - work.y0) * outWidth + x - out.x0) * 5
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
        return result
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
