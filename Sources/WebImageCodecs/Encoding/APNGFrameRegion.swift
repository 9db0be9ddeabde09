import Foundation

/// The part of an animation frame an APNG `fcTL` draws: the rectangle that differs from the frame before
/// it, and how it is drawn (dispose operation none, so the canvas keeps the previous frame outside it).
///
/// When every changed pixel in the rectangle is opaque, the unchanged ones are made transparent black and
/// the rectangle is drawn with blend operation over (1): they then leave the canvas as it is, and runs of
/// zeros compress better than the picture. Otherwise (a pixel turned translucent or transparent, which
/// "over" would mix with what was there) the rectangle is drawn with blend operation source (0). Both give
/// the frame's pixels exactly: "over" with alpha 255 copies the source and with alpha 0 keeps the target.
struct APNGFrameRegion {
    /// The rectangle's place and size on the canvas.
    var x: Int
    var y: Int
    var width: Int
    var height: Int
    /// The rectangle's RGBA8 rows, tightly packed.
    var pixels: [UInt8]
    /// Whether it is drawn with blend operation over (1); source (0) otherwise.
    var blendsOver: Bool

    /// The whole of `frame`, drawn with blend operation source (the first frame).
    init(whole frame: ImageFrame) {
        x = 0
        y = 0
        width = frame.width
        height = frame.height
        pixels = Self.rows(of: frame, x: 0, y: 0, width: frame.width, height: frame.height)
        blendsOver = false
    }

    /// What turns the canvas showing `previous` into `frame` (both of the canvas's size). A frame equal to
    /// the previous one gives its top-left pixel: `fcTL` needs a rectangle of at least one pixel.
    init(from previous: ImageFrame, to frame: ImageFrame) {
        let rowBytes = frame.width * 4
        var top: Int?
        var bottom = 0
        var left = frame.width
        var right = -1
        previous.pixels.withUnsafeBufferPointer { before in
            frame.pixels.withUnsafeBufferPointer { after in
                guard let before = before.baseAddress, let after = after.baseAddress else { return }
                for row in 0..<frame.height {
                    let a = before + row * previous.bytesPerRow
                    let b = after + row * frame.bytesPerRow
                    if memcmp(a, b, rowBytes) == 0 { continue }
                    var first = 0
                    while memcmp(a + first * 4, b + first * 4, 4) == 0 { first += 1 }
                    var last = frame.width - 1
                    while memcmp(a + last * 4, b + last * 4, 4) == 0 { last -= 1 }
                    if top == nil { top = row }
                    bottom = row
                    left = min(left, first)
                    right = max(right, last)
                }
            }
        }
        guard let top else {
            x = 0
            y = 0
            width = 1
            height = 1
            pixels = Self.rows(of: frame, x: 0, y: 0, width: 1, height: 1)
            blendsOver = false
            return
        }
        x = left
        y = top
        width = right - left + 1
        height = bottom - top + 1
        pixels = Self.rows(of: frame, x: x, y: y, width: width, height: height)
        let old = Self.rows(of: previous, x: x, y: y, width: width, height: height)
        var unchanged: [Int] = []
        var opaque = true
        for offset in stride(from: 0, to: pixels.count, by: 4) {
            if pixels[offset..<(offset + 4)] == old[offset..<(offset + 4)] {
                unchanged.append(offset)
            } else if pixels[offset + 3] != 255 {
                opaque = false
                break
            }
        }
        blendsOver = opaque && !unchanged.isEmpty
        if blendsOver {
            for offset in unchanged { pixels.replaceSubrange(offset..<(offset + 4), with: [0, 0, 0, 0]) }
        }
    }

    /// The frame for libpng to compress: the rectangle as an image of its own.
    var frame: ImageFrame { ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels) }

    /// The RGBA8 rows of `frame`'s rectangle, tightly packed.
    private static func rows(of frame: ImageFrame, x: Int, y: Int, width: Int, height: Int) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(width * height * 4)
        for row in y..<(y + height) {
            let start = row * frame.bytesPerRow + x * 4
            result += frame.pixels[start..<(start + width * 4)]
        }
        return result
    }
}
