import Foundation

/// Shrinks RGBA8 bitmaps by area averaging (each output pixel is the mean of the source pixels it covers).
enum PixelResampler {
    /// `pixels` (tightly packed, `size`) resampled to `target`. Enlarging repeats pixels.
    static func resample(_ pixels: [UInt8], from size: PixelSize, to target: PixelSize) -> [UInt8] {
        guard size != target else { return pixels }
        let (sw, sh, dw, dh) = (size.width, size.height, target.width, target.height)
        // Source column span of every output column, computed once.
        var columnStart = [Int](repeating: 0, count: dw + 1)
        for x in 0...dw { columnStart[x] = x * sw / dw }
        var output = [UInt8](repeating: 0, count: dw * dh * 4)
        var sums = [Int](repeating: 0, count: dw * 4)
        for y in 0..<dh {
            let y0 = y * sh / dh
            let y1 = max(y0 + 1, (y + 1) * sh / dh)
            for index in sums.indices { sums[index] = 0 }
            for sy in y0..<y1 {
                let row = sy * sw * 4
                for x in 0..<dw {
                    let x0 = columnStart[x]
                    let x1 = max(x0 + 1, columnStart[x + 1])
                    var r = 0
                    var g = 0
                    var b = 0
                    var a = 0
                    var p = row + x0 * 4
                    for _ in x0..<x1 {
                        r += Int(pixels[p])
                        g += Int(pixels[p + 1])
                        b += Int(pixels[p + 2])
                        a += Int(pixels[p + 3])
                        p += 4
                    }
                    sums[x * 4] += r
                    sums[x * 4 + 1] += g
                    sums[x * 4 + 2] += b
                    sums[x * 4 + 3] += a
                }
            }
            let rows = y1 - y0
            for x in 0..<dw {
                let count = (max(columnStart[x] + 1, columnStart[x + 1]) - columnStart[x]) * rows
                let out = (y * dw + x) * 4
                for channel in 0..<4 {
                    output[out + channel] = UInt8((sums[x * 4 + channel] + count / 2) / count)
                }
            }
        }
        return output
    }

    /// `frame` resampled to `target` (no-op when it already has that size).
    static func resample(_ frame: ImageFrame, to target: PixelSize) -> ImageFrame {
        let size = PixelSize(width: frame.width, height: frame.height)
        guard size != target else { return frame }
        let packed = frame.bytesPerRow == frame.width * 4 ? frame.pixels : pack(frame)
        return ImageFrame(
            width: target.width, height: target.height, bytesPerRow: target.width * 4,
            pixels: resample(packed, from: size, to: target), duration: frame.duration)
    }

    private static func pack(_ frame: ImageFrame) -> [UInt8] {
        var packed = [UInt8]()
        packed.reserveCapacity(frame.width * frame.height * 4)
        for y in 0..<frame.height {
            let start = y * frame.bytesPerRow
            packed.append(contentsOf: frame.pixels[start..<start + frame.width * 4])
        }
        return packed
    }
}
