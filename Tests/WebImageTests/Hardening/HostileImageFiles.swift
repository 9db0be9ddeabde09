import Foundation

/// Small files built to hurt a decoder: headers that declare enormous images over a few bytes of data,
/// and GIFs whose frame rectangles dwarf their logical screen.
enum HostileImageFiles {
    /// About 100 bytes of `format` that declare a `side`×`side` image and end a few bytes into its pixel
    /// data. WebP uses the lossless (VP8L) header, whose 14-bit fields reach 16384.
    static func tinyDeclaringHuge(_ format: String, side: Int = 16384) -> Data {
        switch format {
        case "jpeg": jpeg(side: side)
        case "png": png(side: side)
        case "gif": gif(side: side)
        default: webp(side: side)
        }
    }

    /// A grayscale baseline JPEG header (one quantisation table, one-code Huffman tables in which every
    /// block is "DC difference 0, end of block") and 16 bytes of scan data.
    static func jpeg(side: Int) -> Data {
        var out: [UInt8] = [0xFF, 0xD8]
        out += [0xFF, 0xDB, 0x00, 0x43, 0x00] + [UInt8](repeating: 1, count: 64)
        out += [0xFF, 0xC0, 0x00, 0x0B, 0x08] + be16(side) + be16(side) + [0x01, 0x01, 0x11, 0x00]
        // DC table 0 and AC table 0: one code of length 1, for symbol 0.
        out += [0xFF, 0xC4, 0x00, 0x14, 0x00, 0x01] + [UInt8](repeating: 0, count: 15) + [0x00]
        out += [0xFF, 0xC4, 0x00, 0x14, 0x10, 0x01] + [UInt8](repeating: 0, count: 15) + [0x00]
        out += [0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3F, 0x00]
        out += [UInt8](repeating: 0, count: 16)
        return Data(out)
    }

    /// An 8-bit RGBA PNG header and an IDAT whose zlib stream stops after a few bytes of its first row.
    static func png(side: Int) -> Data {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        out += chunk("IHDR", be32(side) + be32(side) + [8, 6, 0, 0, 0])
        // zlib header, then a stored block of 32 bytes (filter 0 and 31 bytes of the first row).
        let stored: [UInt8] = [0x00] + [UInt8](repeating: 0x7F, count: 31)
        out += chunk("IDAT", [0x78, 0x01, 0x00, 32, 0, 0xDF, 0xFF] + stored)
        return Data(out)
    }

    /// A GIF whose screen and single frame are `side`×`side`, with a few codes of pixel data.
    static func gif(side: Int) -> Data {
        var out = [UInt8]("GIF89a".utf8) + le16(side) + le16(side) + [0x80, 0, 0] + [255, 0, 0, 0, 0, 255]
        out += [0x2C] + le16(0) + le16(0) + le16(side) + le16(side) + [0x00, 0x02]
        let lzw = uniformRunLZW(pixels: 200, index: 1)
        out += [UInt8(lzw.count)] + lzw
        return Data(out)
    }

    /// A VP8L (lossless) WebP header declaring `side`×`side` with alpha, and a few bytes of bitstream.
    static func webp(side: Int) -> Data {
        let bits = UInt32(side - 1) | UInt32(side - 1) << 14 | 1 << 28
        let payload: [UInt8] = [0x2F] + le32(bits) + [UInt8](repeating: 0x55, count: 24)
        var out = [UInt8]("RIFF".utf8) + le32(UInt32(4 + 8 + payload.count)) + [UInt8]("WEBP".utf8)
        out += [UInt8]("VP8L".utf8) + le32(UInt32(payload.count)) + payload
        return Data(out)
    }

    /// A GIF with a `screen`×`screen` logical screen and one frame at (0, 0) of `frameWidth`×`frameHeight`
    /// filled with palette index 1, whose LZW data is as compressed as GIF allows and covers `pixels`
    /// pixels (then ends): about `pixels / 1400` bytes.
    static func hugeRectangleGIF(
        screen: Int, frameWidth: Int = 65535, frameHeight: Int = 65535, pixels: Int, interlaced: Bool = false
    ) -> Data {
        var out = [UInt8]("GIF89a".utf8) + le16(screen) + le16(screen) + [0x80, 0, 0] + [255, 0, 0, 0, 0, 255]
        out += [0x2C] + le16(0) + le16(0) + le16(frameWidth) + le16(frameHeight) + [interlaced ? 0x40 : 0x00, 0x02]
        let lzw = uniformRunLZW(pixels: pixels, index: 1)
        var offset = 0
        while offset < lzw.count {
            let count = min(255, lzw.count - offset)
            out += [UInt8(count)] + lzw[offset..<offset + count]
            offset += count
        }
        out += [0x00, 0x3B]
        return Data(out)
    }

    /// GIF LZW (minimum code size 2) for `pixels` copies of `index`: every code is the longest run the
    /// table holds, the table grows by one run length per code, and a clear code restarts it when full.
    static func uniformRunLZW(pixels: Int, index: UInt8) -> [UInt8] {
        let clear = 4
        let end = 5
        var writer = BitWriter()
        var width = 3
        var hi = end
        var overflow = 8
        writer.write(clear, width: width)
        var remaining = pixels
        while remaining > 0 {
            // Codes 6… hold runs of 2, 3, …: the longest the table has is `hi - 4` (1 right after a clear).
            let run = min(max(1, hi - 4), remaining)
            writer.write(run == 1 ? Int(index) : run + 4, width: width)
            remaining -= run
            hi += 1
            if hi == overflow, width < 12 {
                width += 1
                overflow <<= 1
            }
            if hi == 4095 {
                writer.write(clear, width: width)
                width = 3
                hi = end
                overflow = 8
            }
        }
        writer.write(end, width: width)
        return writer.bytes()
    }

    private struct BitWriter {
        private var out: [UInt8] = []
        private var buffer = 0
        private var bits = 0

        mutating func write(_ code: Int, width: Int) {
            buffer |= code << bits
            bits += width
            while bits >= 8 {
                out.append(UInt8(buffer & 0xFF))
                buffer >>= 8
                bits -= 8
            }
        }

        func bytes() -> [UInt8] { bits > 0 ? out + [UInt8(buffer & 0xFF)] : out }
    }

    private static func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
        let typed = [UInt8](type.utf8) + body
        return be32(body.count) + typed + be32(Int(crc32(typed)))
    }

    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    private static func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    private static func be32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
    private static func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
    private static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(value >> (8 * $0) & 0xFF) } }
}
