import Foundation

/// Evan Wallace's ThumbHash (evanw.github.io/thumbhash): about 25 bytes describing a small image's
/// luminance, colour, alpha and aspect ratio, which a client turns back into a blurred placeholder.
///
/// The bytes are the reference format (evanw/thumbhash), so any ThumbHash decoder reads them: a 24-bit
/// header (average luminance and colour, luminance scale, whether there is alpha), a 16-bit one (the
/// luminance component count along the shorter side, the colour scales, landscape or not), an alpha byte
/// when there is alpha, then the cosine components as 4-bit values, two a byte. Colour is averaged in
/// the LPQ space the format defines (luminance, yellow−blue, red−green) over the pixels composited on
/// their own average colour, so transparent pixels' stored colour does not count.
///
/// The input must fit in 100×100, as the format's reference requires (more pixels change nothing but
/// the cost): downscale first with `ImagePlaceholders.downscaled(_:toFit:)`.
///
/// ```swift
/// let bytes = try ThumbHash.encode(ImagePlaceholders.downscaled(image.frames[0]))
/// let text = Data(bytes).base64EncodedString()  // what the reference's JavaScript decoder takes
/// ```
public enum ThumbHash {
    /// The largest width and height `encode` takes: 100.
    public static let maximumSide = 100

    /// The hash of `frame` (straight-alpha RGBA, at most 100×100).
    ///
    /// - Throws: `PlaceholderError.tooLarge` for a frame wider or taller than 100, `.invalidFrame` for one
    ///   with no pixels or fewer bytes than it declares.
    public static func encode(_ frame: ImageFrame) throws(PlaceholderError) -> [UInt8] {
        try PlaceholderError.check(frame)
        guard frame.width <= maximumSide, frame.height <= maximumSide else {
            throw .tooLarge(width: frame.width, height: frame.height)
        }
        let (width, height) = (frame.width, frame.height)
        let channels = LPQA(frame)
        let hasAlpha = channels.alphaSum < Double(width * height)
        let limit = hasAlpha ? 5.0 : 7.0  // fewer luminance components leave room for the alpha ones
        let longest = Double(max(width, height))
        let lx = max(1, Int(round(limit * Double(width) / longest)))
        let ly = max(1, Int(round(limit * Double(height) / longest)))
        let l = Channel(channels.l, width: width, height: height, nx: max(3, lx), ny: max(3, ly))
        let p = Channel(channels.p, width: width, height: height, nx: 3, ny: 3)
        let q = Channel(channels.q, width: width, height: height, nx: 3, ny: 3)
        let isLandscape = width > height
        let header24 =
            round(63 * l.dc) | round(31.5 + 31.5 * p.dc) << 6 | round(31.5 + 31.5 * q.dc) << 12
            | round(31 * l.scale) << 18 | (hasAlpha ? 1 : 0) << 23
        let header16 =
            (isLandscape ? ly : lx) | round(63 * p.scale) << 3 | round(63 * q.scale) << 9 | (isLandscape ? 1 : 0) << 15
        var hash: [UInt8] = [
            byte(header24), byte(header24 >> 8), byte(header24 >> 16), byte(header16), byte(header16 >> 8),
        ]
        var acs = [l.ac, p.ac, q.ac]
        if hasAlpha {
            let a = Channel(channels.a, width: width, height: height, nx: 5, ny: 5)
            hash.append(byte(round(15 * a.dc) | round(15 * a.scale) << 4))
            acs.append(a.ac)
        }
        let start = hash.count
        for (index, value) in acs.joined().enumerated() {
            if start + index / 2 == hash.count { hash.append(0) }
            hash[start + index / 2] |= byte(round(15 * value) << ((index & 1) * 4))
        }
        return hash
    }

    /// The low 8 bits of `value`: every field is in range by construction (averages and scales of 0…1
    /// planes), and a stray bit must not trap.
    private static func byte(_ value: Int) -> UInt8 { UInt8(truncatingIfNeeded: value) }

    /// `value` rounded half up (JavaScript's `Math.round`, which the reference uses), as an integer; every
    /// value rounded here is 0…63 by construction.
    private static func round(_ value: Double) -> Int { Int((value + 0.5).rounded(.down)) }

    /// The frame's pixels as luminance, yellow−blue, red−green and alpha planes, each colour composited on
    /// the alpha-weighted average colour.
    private struct LPQA {
        var l: [Double] = []
        var p: [Double] = []
        var q: [Double] = []
        var a: [Double] = []
        var alphaSum = 0.0

        init(_ frame: ImageFrame) {
            var (averageR, averageG, averageB) = (0.0, 0.0, 0.0)
            func pixel(_ index: Int) -> (Double, Double, Double, Double) {
                let offset = index / frame.width * frame.bytesPerRow + index % frame.width * 4
                let alpha = Double(frame.pixels[offset + 3]) / 255
                return (
                    alpha / 255 * Double(frame.pixels[offset]), alpha / 255 * Double(frame.pixels[offset + 1]),
                    alpha / 255 * Double(frame.pixels[offset + 2]), alpha
                )
            }
            let count = frame.width * frame.height
            for index in 0..<count {
                let (r, g, b, alpha) = pixel(index)
                averageR += r
                averageG += g
                averageB += b
                alphaSum += alpha
            }
            if alphaSum > 0 {
                averageR /= alphaSum
                averageG /= alphaSum
                averageB /= alphaSum
            }
            l.reserveCapacity(count)
            for index in 0..<count {
                let (r0, g0, b0, alpha) = pixel(index)
                let r = averageR * (1 - alpha) + r0
                let g = averageG * (1 - alpha) + g0
                let b = averageB * (1 - alpha) + b0
                l.append((r + g + b) / 3)
                p.append((r + g) / 2 - b)
                q.append(r - g)
                a.append(alpha)
            }
        }
    }

    /// One plane's cosine transform: its average (`dc`), the other components in the format's order
    /// (rows of decreasing length, a triangle of the nx × ny grid) mapped to 0…1 by `scale`, the largest
    /// of their magnitudes.
    private struct Channel {
        var dc = 0.0
        var ac: [Double] = []
        var scale = 0.0

        init(_ plane: [Double], width: Int, height: Int, nx: Int, ny: Int) {
            var fx = [Double](repeating: 0, count: width)
            for cy in 0..<ny {
                var cx = 0
                while cx * ny < nx * (ny - cy) {
                    for x in 0..<width { fx[x] = cos(Double.pi / Double(width) * Double(cx) * (Double(x) + 0.5)) }
                    var f = 0.0
                    for y in 0..<height {
                        let fy = cos(Double.pi / Double(height) * Double(cy) * (Double(y) + 0.5))
                        for x in 0..<width { f += plane[x + y * width] * fx[x] * fy }
                    }
                    f /= Double(width * height)
                    if cx > 0 || cy > 0 {
                        ac.append(f)
                        scale = max(scale, abs(f))
                    } else {
                        dc = f
                    }
                    cx += 1
                }
            }
            if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
        }
    }
}
