import Foundation
import WebImage

/// A 64-bit perceptual hash of an image (`--dedup phash`), built as the `imagehash` library's `phash`: the
/// image's luma at 32×32, its two-dimensional DCT-II, the 8×8 lowest frequencies, each bit set where the
/// coefficient is above their median. It averages boxes where imagehash resamples with Lanczos, so its bits
/// can differ from imagehash's for the same image. Re-encoding, resizing and small edits change few bits;
/// different images differ in about half of them. ``distance(_:_:)`` counts them.
enum PerceptualHash {
    /// The side the image is averaged down to.
    static let side = 32

    /// The hash of `frame` (its alpha ignored), bit 63 the lowest frequency.
    static func hash(_ frame: ImageFrame) -> UInt64 {
        let luma = downsampledLuma(frame)
        let coefficients = dctLowFrequencies(luma)
        let median = coefficients.sorted()[31...32].reduce(0, +) / 2
        return coefficients.reduce(UInt64(0)) { $0 << 1 | ($1 > median ? 1 : 0) }
    }

    /// The number of bits two hashes differ in.
    static func distance(_ a: UInt64, _ b: UInt64) -> Int { (a ^ b).nonzeroBitCount }

    /// The hash as 16 lowercase hex digits, as the record writes it.
    static func hex(_ hash: UInt64) -> String {
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Rec. 601 luma of each pixel, averaged over the 32×32 boxes that cover the frame (a box gets the
    /// pixels whose centres fall in it, at least one).
    private static func downsampledLuma(_ frame: ImageFrame) -> [Double] {
        var sums = [Double](repeating: 0, count: side * side)
        var counts = [Double](repeating: 0, count: side * side)
        let (width, height) = (max(1, frame.width), max(1, frame.height))
        frame.pixels.withUnsafeBufferPointer { pixels in
            for y in 0..<frame.height {
                let row = y * side / height * side
                let base = y * frame.bytesPerRow
                for x in 0..<frame.width {
                    let at = base + 4 * x
                    guard at + 2 < pixels.count else { continue }
                    let luma =
                        0.299 * Double(pixels[at]) + 0.587 * Double(pixels[at + 1]) + 0.114 * Double(pixels[at + 2])
                    let cell = row + x * side / width
                    sums[cell] += luma
                    counts[cell] += 1
                }
            }
        }
        // A frame smaller than 32 on a side leaves boxes empty: each takes its nearest source pixel's box.
        return (0..<side * side).map { cell in
            if counts[cell] > 0 { return sums[cell] / counts[cell] }
            let y = min(cell / side * height / side, height - 1) * side / height
            let x = min(cell % side * width / side, width - 1) * side / width
            let source = y * side + x
            return counts[source] > 0 ? sums[source] / counts[source] : 0
        }
    }

    /// The 8×8 lowest-frequency coefficients of the 32×32 DCT-II of `values`, row by row.
    private static func dctLowFrequencies(_ values: [Double]) -> [Double] {
        let basis = (0..<8).map { k in
            (0..<side).map { n in cos(Double.pi / Double(side) * (Double(n) + 0.5) * Double(k)) }
        }
        // Rows first (32 rows × 8 frequencies), then columns of that (8 × 8).
        var rows = [Double](repeating: 0, count: side * 8)
        for y in 0..<side {
            for k in 0..<8 {
                var sum = 0.0
                for n in 0..<side { sum += values[y * side + n] * basis[k][n] }
                rows[y * 8 + k] = sum
            }
        }
        var out = [Double](repeating: 0, count: 64)
        for k in 0..<8 {
            for column in 0..<8 {
                var sum = 0.0
                for n in 0..<side { sum += rows[n * 8 + column] * basis[k][n] }
                out[k * 8 + column] = sum
            }
        }
        return out
    }
}
