import CGIF
import Locking

/// One frame in at most 256 colours: its palette (RGB triples), one palette index per pixel, and the
/// index that stands for transparent pixels when the frame has any.
///
/// A frame of at most 256 distinct colours (255 when it has transparent pixels) keeps them exactly.
/// Past that, giflib's `GifQuantizeBuffer` picks the palette: Heckbert's median cut over a histogram of
/// 5 bits per channel, each colour mapped to the mean of its box, so a channel can move by up to about 8
/// levels and smooth gradients show bands (there is no dithering). Pixels with alpha below 128 become
/// the transparent index; the others are written opaque, their alpha dropped. Only the opaque pixels
/// are quantized, so transparent ones cost no palette entry.
struct GIFPalette {
    /// RGB triples, `colors.count / 3` entries (1…256).
    var colors: [UInt8]
    /// One palette index per pixel, rows top to bottom.
    var indices: [UInt8]
    /// The palette index of transparent pixels, or nil when every pixel is opaque.
    var transparentIndex: Int?

    /// `GifQuantizeBuffer` sorts with `qsort` and keeps the axis it sorts on in a file-static variable of
    /// giflib's, so two calls at once (the proxy encodes several results in parallel) would sort with each
    /// other's axis. Calls are made one at a time under this lock, which counts them (a lock's value is never
    /// zero-sized, see `Lock`).
    private static let quantizerCalls = Lock(0)

    /// The palette of `frame`, which `EncodingCheck.check` has accepted.
    init(_ frame: ImageFrame) throws {
        var opaqueCount = 0
        Self.forEachPixel(of: frame) { _, _, opaque in if opaque { opaqueCount += 1 } }
        let count = frame.width * frame.height
        let hasTransparency = opaqueCount < count
        let limit = hasTransparency ? 255 : 256
        // With transparency, the transparent index follows the last colour; it is patched in below.
        var indices = [UInt8](repeating: 0, count: count)
        let colors =
            try Self.exact(frame, limit: limit, into: &indices)
            ?? Self.quantized(frame, opaqueCount: opaqueCount, limit: limit, into: &indices)
        // Never an empty palette: a frame with no opaque pixel still needs one colour before its transparent one.
        self.colors = colors.isEmpty ? [0, 0, 0] : colors
        self.transparentIndex = hasTransparency ? self.colors.count / 3 : nil
        if let transparent = transparentIndex {
            let index = UInt8(transparent)
            Self.forEachPixel(of: frame) { pixel, _, opaque in if !opaque { indices[pixel] = index } }
        }
        self.indices = indices
    }

    /// Calls `body` with every pixel's number (row-major), its offset in `frame.pixels`, and whether it is
    /// opaque enough to be written (alpha 128 or more).
    private static func forEachPixel(of frame: ImageFrame, _ body: (Int, Int, Bool) -> Void) {
        frame.pixels.withUnsafeBufferPointer { pixels in
            for y in 0..<frame.height {
                var offset = y * frame.bytesPerRow
                for x in 0..<frame.width {
                    body(y * frame.width + x, offset, pixels[offset + 3] >= 128)
                    offset += 4
                }
            }
        }
    }

    /// The opaque pixels' own colours, their indices written into `indices`, when there are at most
    /// `limit` of them; nil otherwise.
    private static func exact(_ frame: ImageFrame, limit: Int, into indices: inout [UInt8]) -> [UInt8]? {
        var palette: [UInt32: UInt8] = [:]
        var colors: [UInt8] = []
        var tooMany = false
        frame.pixels.withUnsafeBufferPointer { pixels in
            forEachPixel(of: frame) { pixel, offset, opaque in
                guard opaque, !tooMany else { return }
                let key = UInt32(pixels[offset]) << 16 | UInt32(pixels[offset + 1]) << 8 | UInt32(pixels[offset + 2])
                if let index = palette[key] {
                    indices[pixel] = index
                } else if palette.count < limit {
                    let index = UInt8(palette.count)
                    palette[key] = index
                    colors += [pixels[offset], pixels[offset + 1], pixels[offset + 2]]
                    indices[pixel] = index
                } else {
                    tooMany = true
                }
            }
        }
        return tooMany ? nil : colors
    }

    /// The opaque pixels through giflib's median cut into at most `limit` colours, their indices written
    /// into `indices`.
    private static func quantized(
        _ frame: ImageFrame, opaqueCount: Int, limit: Int, into indices: inout [UInt8]
    ) throws -> [UInt8] {
        // giflib counts pixels in a C int.
        guard opaqueCount <= Int(Int32.max) else {
            throw ImageCodecError(.encodingFailed, "GIF: a frame of \(opaqueCount) pixels is too large to quantize")
        }
        var red = [UInt8](repeating: 0, count: opaqueCount)
        var green = red
        var blue = red
        var position = 0
        frame.pixels.withUnsafeBufferPointer { pixels in
            forEachPixel(of: frame) { _, offset, opaque in
                guard opaque else { return }
                (red[position], green[position], blue[position]) =
                    (pixels[offset], pixels[offset + 1], pixels[offset + 2])
                position += 1
            }
        }
        var mapped = [UInt8](repeating: 0, count: opaqueCount)
        var map = [GifColorType](repeating: GifColorType(), count: 256)
        var size = Int32(limit)
        let status = Self.quantizerCalls.withLock { calls in
            calls += 1
            return GifQuantizeBuffer(UInt32(opaqueCount), 1, &size, &red, &green, &blue, &mapped, &map)
        }
        guard status == GIF_OK, (1...limit).contains(Int(size)) else {
            throw ImageCodecError(.encodingFailed, "GIF: giflib could not quantize the frame (out of memory)")
        }
        position = 0
        forEachPixel(of: frame) { pixel, _, opaque in
            guard opaque else { return }
            indices[pixel] = mapped[position]
            position += 1
        }
        return map.prefix(Int(size)).flatMap { [$0.Red, $0.Green, $0.Blue] }
    }
}
