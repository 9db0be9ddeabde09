import Foundation

/// Wolt's BlurHash (blurha.sh): a short Base83 string describing an image's colours as a few cosine
/// components, which a client draws as a blurred placeholder while the image loads.
///
/// The string is: one digit for the component counts, one for the largest AC value, four for the
/// average colour (sRGB), then two for each of the other `x × y − 1` components (each channel's
/// linear-light amplitude, square-root compressed to 19 steps). The format is the reference
/// implementations' (woltapp/blurhash), so any BlurHash decoder reads it.
///
/// The pixels are read as sRGB, straight alpha ignored (as the reference encoders read them). The cost
/// grows with the pixels times the components: give it a small image (the proxy gives a downscale that
/// fits 100×100, `ImagePlaceholders.downscaled(_:toFit:)`; the components hardly change with size).
///
/// ```swift
/// let small = ImagePlaceholders.downscaled(image.frames[0])
/// let hash = try BlurHash.encode(small)  // "LEHV6nWB2yk8pyo0adR*.7kCMdnj"
/// ```
public enum BlurHash {
    /// The component counts the proxy uses, 4 across and 3 down: 28 characters, enough for a landscape
    /// photo's broad shapes (the reference site's default).
    public static let defaultComponents = (x: 4, y: 3)

    /// The hash of `frame` with `xComponents` across and `yComponents` down, each 1…9.
    ///
    /// - Throws: `PlaceholderError.invalidComponents` for counts outside 1…9, `.invalidFrame` for a frame
    ///   with no pixels or fewer bytes than it declares.
    public static func encode(
        _ frame: ImageFrame, xComponents: Int = defaultComponents.x, yComponents: Int = defaultComponents.y
    ) throws(PlaceholderError) -> String {
        guard (1...9).contains(xComponents), (1...9).contains(yComponents) else {
            throw .invalidComponents(x: xComponents, y: yComponents)
        }
        try PlaceholderError.check(frame)
        let factors = self.factors(frame, xComponents: xComponents, yComponents: yComponents)
        var hash = ""
        append((xComponents - 1) + (yComponents - 1) * 9, digits: 1, to: &hash)
        let ac = factors.dropFirst()
        let maximum: Double
        if ac.isEmpty {
            maximum = 1
            append(0, digits: 1, to: &hash)
        } else {
            let actual = ac.lazy.flatMap { [abs($0.0), abs($0.1), abs($0.2)] }.max() ?? 0
            let quantised = Int(max(0, min(82, (actual * 166 - 0.5).rounded(.down))))
            maximum = Double(quantised + 1) / 166
            append(quantised, digits: 1, to: &hash)
        }
        let dc = factors[0]
        append(sRGB(dc.0) << 16 + sRGB(dc.1) << 8 + sRGB(dc.2), digits: 4, to: &hash)
        for factor in ac {
            func quantised(_ value: Double) -> Int {
                let root = (abs(value / maximum)).squareRoot() * (value < 0 ? -1 : 1)
                return Int(max(0, min(18, (root * 9 + 9.5).rounded(.down))))
            }
            append(quantised(factor.0) * 19 * 19 + quantised(factor.1) * 19 + quantised(factor.2), digits: 2, to: &hash)
        }
        return hash
    }

    /// Each component's linear-light (r, g, b) amplitude, row by row, the average first: the sum over
    /// the pixels of the colour times cos(π·cx·x/width)·cos(π·cy·y/height), scaled by 1/pixels (2/pixels
    /// for all but the average).
    private static func factors(_ frame: ImageFrame, xComponents: Int, yComponents: Int) -> [(Double, Double, Double)] {
        let (width, height) = (frame.width, frame.height)
        let cosX = (0..<xComponents).map { cx in
            (0..<width).map { x in cos(Double.pi * Double(cx) * Double(x) / Double(width)) }
        }
        let cosY = (0..<yComponents).map { cy in
            (0..<height).map { y in cos(Double.pi * Double(cy) * Double(y) / Double(height)) }
        }
        var sums = [Double](repeating: 0, count: xComponents * yComponents * 3)
        var rowSums = [Double](repeating: 0, count: xComponents * 3)
        frame.pixels.withUnsafeBufferPointer { pixels in
            for y in 0..<height {
                for index in rowSums.indices { rowSums[index] = 0 }
                let row = y * frame.bytesPerRow
                for x in 0..<width {
                    let r = linear[Int(pixels[row + x * 4])]
                    let g = linear[Int(pixels[row + x * 4 + 1])]
                    let b = linear[Int(pixels[row + x * 4 + 2])]
                    for cx in 0..<xComponents {
                        let basis = cosX[cx][x]
                        rowSums[cx * 3] += basis * r
                        rowSums[cx * 3 + 1] += basis * g
                        rowSums[cx * 3 + 2] += basis * b
                    }
                }
                for cy in 0..<yComponents {
                    let basis = cosY[cy][y]
                    for cx in 0..<xComponents {
                        let base = (cy * xComponents + cx) * 3
                        sums[base] += basis * rowSums[cx * 3]
                        sums[base + 1] += basis * rowSums[cx * 3 + 1]
                        sums[base + 2] += basis * rowSums[cx * 3 + 2]
                    }
                }
            }
        }
        let pixelCount = Double(width * height)
        return (0..<xComponents * yComponents).map { index in
            let scale = (index == 0 ? 1 : 2) / pixelCount
            return (sums[index * 3] * scale, sums[index * 3 + 1] * scale, sums[index * 3 + 2] * scale)
        }
    }

    /// sRGB's transfer function undone, for each 8-bit value.
    private static let linear: [Double] = (0..<256).map { value in
        let v = Double(value) / 255
        return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
    }

    /// A linear-light value in sRGB's 8 bits, rounded half up as the reference does.
    private static func sRGB(_ value: Double) -> Int {
        let v = max(0, min(1, value))
        let encoded = v <= 0.0031308 ? v * 12.92 : 1.055 * pow(v, 1 / 2.4) - 0.055
        return Int(encoded * 255 + 0.5)
    }

    /// BlurHash's 83 digits, in order.
    private static let alphabet = Array(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")

    /// `value` as `digits` Base83 digits, most significant first.
    private static func append(_ value: Int, digits: Int, to hash: inout String) {
        var divisor = 1
        for _ in 1..<max(digits, 1) { divisor *= 83 }
        for _ in 0..<digits {
            hash.append(alphabet[(value / divisor) % 83])
            divisor /= 83
        }
    }
}
