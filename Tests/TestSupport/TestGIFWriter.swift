import Foundation

/// Writes small GIFs for tests: a 4-color global palette, one graphics control extension per frame, and
/// LZW data that sends a clear code after every two pixels, so every code stays 3 bits wide.
package struct TestGIFWriter {
    package struct Frame {
        package var left = 0
        package var top = 0
        package var width: Int
        package var height: Int
        /// Palette indices 0…3, row-major, in display order (interlacing is done by the writer).
        package var indices: [UInt8]
        package var disposal = 0
        package var delayCentiseconds = 10
        package var transparentIndex: UInt8?
        package var interlaced = false

        package init(
            left: Int = 0, top: Int = 0, width: Int, height: Int, indices: [UInt8], disposal: Int = 0,
            delayCentiseconds: Int = 10, transparentIndex: UInt8? = nil, interlaced: Bool = false
        ) {
            self.left = left
            self.top = top
            self.width = width
            self.height = height
            self.indices = indices
            self.disposal = disposal
            self.delayCentiseconds = delayCentiseconds
            self.transparentIndex = transparentIndex
            self.interlaced = interlaced
        }
    }

    package var width: Int
    package var height: Int
    /// Four RGB colors.
    package var palette: [UInt8]
    package var loopCount: Int?
    package var frames: [Frame]

    package init(
        width: Int, height: Int, palette: [UInt8] = [255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255],
        loopCount: Int? = 0, frames: [Frame]
    ) {
        self.width = width
        self.height = height
        self.palette = palette
        self.loopCount = loopCount
        self.frames = frames
    }

    package func data() -> Data {
        var out = [UInt8]("GIF89a".utf8)
        out += le16(width) + le16(height) + [0xF1, 0, 0] + palette
        if let loopCount { out += [0x21, 0xFF, 11] + Array("NETSCAPE2.0".utf8) + [3, 1] + le16(loopCount) + [0] }
        for frame in frames {
            let packed = UInt8(frame.disposal << 2) | (frame.transparentIndex == nil ? 0 : 1)
            out += [0x21, 0xF9, 4, packed] + le16(frame.delayCentiseconds) + [frame.transparentIndex ?? 0, 0]
            out += [0x2C] + le16(frame.left) + le16(frame.top) + le16(frame.width) + le16(frame.height)
            out += [frame.interlaced ? 0x40 : 0, 2]
            let rows = frame.interlaced ? interlacedRowOrder(frame.height) : Array(0..<frame.height)
            let pixels = rows.flatMap { frame.indices[$0 * frame.width..<($0 + 1) * frame.width] }
            let lzw = encode(pixels)
            var offset = 0
            while offset < lzw.count {
                let count = min(255, lzw.count - offset)
                out += [UInt8(count)] + lzw[offset..<offset + count]
                offset += count
            }
            out += [0]
        }
        out += [0x3B]
        return Data(out)
    }

    private func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }

    private func interlacedRowOrder(_ height: Int) -> [Int] {
        [(0, 8), (4, 8), (2, 4), (1, 2)].flatMap { start, step in Array(stride(from: start, to: height, by: step)) }
    }

    private func encode(_ pixels: [UInt8]) -> [UInt8] {
        var codes: [Int] = []
        for (index, pixel) in pixels.enumerated() {
            if index % 2 == 0 { codes.append(4) }  // clear
            codes.append(Int(pixel))
        }
        codes.append(5)  // end of information
        var bytes: [UInt8] = []
        var buffer = 0
        var bits = 0
        for code in codes {
            buffer |= code << bits
            bits += 3
            while bits >= 8 {
                bytes.append(UInt8(buffer & 0xFF))
                buffer >>= 8
                bits -= 8
            }
        }
        if bits > 0 { bytes.append(UInt8(buffer & 0xFF)) }
        return bytes
    }
}
