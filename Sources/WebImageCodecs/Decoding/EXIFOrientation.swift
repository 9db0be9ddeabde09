import Foundation

/// Reads the orientation a file declares without decoding pixels: the EXIF orientation tag (0x0112), or,
/// when there is no EXIF block or it has no such tag, XMP's `tiff:Orientation`, as Apple's ImageIO and
/// Pillow read it.
enum EXIFOrientation {
    /// The orientation in a JPEG's APP1 "Exif" segment, else in its APP1 XMP packet; 1 when absent.
    static func fromJPEG(_ data: Data) -> Int {
        let bytes = ByteReader(data)
        let xmpSignature = Array("http://ns.adobe.com/xap/1.0/\0".utf8)
        var xmp: Int?
        var offset = 2
        while offset + 4 <= bytes.count {
            guard bytes[offset] == 0xFF else { break }
            let marker = bytes[offset + 1]
            if marker == 0xFF {
                offset += 1  // fill byte
                continue
            }
            if marker == 0xD9 || marker == 0xDA { break }  // end of image, start of scan: no metadata after
            if marker == 0x01 || (0xD0...0xD7).contains(marker) {
                offset += 2
                continue
            }
            let length = bytes.uint16(at: offset + 2, bigEndian: true)
            guard length >= 2 else { break }
            let payload = offset + 4
            let end = min(bytes.count, offset + 2 + length)
            if marker == 0xE1, payload + 6 <= bytes.count, bytes.matches(Array("Exif\0\0".utf8), at: payload),
                let value = fromTIFF(bytes, start: payload + 6, end: end)
            {
                return value
            }
            if marker == 0xE1, xmp == nil, bytes.matches(xmpSignature, at: payload) {
                xmp = fromXMP(bytes.data.subdata(in: bytes.range(payload + xmpSignature.count, end)))
            }
            offset += 2 + length
        }
        return xmp ?? 1
    }

    /// The orientation in a PNG's `eXIf` chunk, else in its `iTXt` XMP packet (`XML:com.adobe.xmp`, stored
    /// as is or, with compression flag 1, zlib-compressed as `exiftool -z` writes it); 1 when absent.
    static func fromPNG(_ data: Data) -> Int {
        let bytes = ByteReader(data)
        var xmp: Int?
        var offset = 8
        while offset + 8 <= bytes.count {
            let length = bytes.uint32(at: offset, bigEndian: true)
            let start = offset + 8
            let end = min(bytes.count, start + length)
            if bytes.matches(Array("eXIf".utf8), at: offset + 4), let value = fromTIFF(bytes, start: start, end: end) {
                return value
            }
            let keyword = Array("XML:com.adobe.xmp\0".utf8)
            if xmp == nil, bytes.matches(Array("iTXt".utf8), at: offset + 4), bytes.matches(keyword, at: start) {
                xmp = fromITXt(bytes, start: start + keyword.count, end: end)
            }
            if bytes.matches(Array("IEND".utf8), at: offset + 4) { break }
            offset = start + length + 4
        }
        return xmp ?? 1
    }

    /// The most an XMP packet of a PNG may inflate to; a larger one is ignored.
    static let maximumXMPBytes = 4 << 20

    /// The XMP orientation in an `iTXt` chunk's bytes `start..<end` after its keyword: compression flag,
    /// method, language tag NUL, translated keyword NUL, then the text (a zlib stream when the flag is 1).
    private static func fromITXt(_ bytes: ByteReader, start: Int, end: Int) -> Int? {
        let compressed = bytes[start]
        let method = bytes[start + 1]
        var text = start + 2
        for _ in 0..<2 {
            while text < end, bytes[text] != 0 { text += 1 }
            text += 1
        }
        guard text <= end else { return nil }
        let packet = bytes.data.subdata(in: bytes.range(text, end))
        switch (compressed, method) {
        case (0, _): return fromXMP(packet)
        case (1, 0): return ZlibInflate.inflated(packet, limit: maximumXMPBytes).flatMap(fromXMP)
        default: return nil
        }
    }

    /// The orientation in a TIFF structure (an EXIF block, with or without the "Exif\0\0" prefix); 1 when
    /// absent.
    static func fromTIFF(_ data: Data) -> Int {
        tiffOrientation(data) ?? 1
    }

    /// The orientation in a TIFF structure; nil when it has no orientation tag (or is unreadable).
    static func tiffOrientation(_ data: Data) -> Int? {
        let bytes = ByteReader(data)
        var start = 0
        if bytes.matches(Array("Exif\0\0".utf8), at: 0) { start = 6 }
        return fromTIFF(bytes, start: start, end: bytes.count)
    }

    /// XMP's `tiff:Orientation`, as an attribute (`tiff:Orientation="6"`) or an element
    /// (`<tiff:Orientation>6</tiff:Orientation>`); nil when absent or not 1…8.
    static func fromXMP(_ data: Data) -> Int? {
        let bytes = ByteReader(data)
        let name = Array("tiff:Orientation".utf8)
        var offset = 0
        while offset + name.count + 2 <= bytes.count {
            if bytes.matches(name, at: offset) {
                let next = offset + name.count
                let digit: UInt8
                if bytes[next] == UInt8(ascii: "="),
                    bytes[next + 1] == UInt8(ascii: "\"") || bytes[next + 1] == UInt8(ascii: "'")
                {
                    digit = bytes[next + 2]
                } else if bytes[next] == UInt8(ascii: ">") {
                    digit = bytes[next + 1]
                } else {
                    offset = next
                    continue
                }
                let value = Int(digit) - Int(UInt8(ascii: "0"))
                return (1...8).contains(value) ? value : nil
            }
            offset += 1
        }
        return nil
    }

    private static func fromTIFF(_ bytes: ByteReader, start: Int, end: Int) -> Int? {
        guard start + 8 <= end else { return nil }
        let bigEndian: Bool
        switch (bytes[start], bytes[start + 1]) {
        case (0x4D, 0x4D): bigEndian = true
        case (0x49, 0x49): bigEndian = false
        default: return nil
        }
        let ifd = start + bytes.uint32(at: start + 4, bigEndian: bigEndian)
        guard ifd >= start, ifd + 2 <= end else { return nil }
        let entries = bytes.uint16(at: ifd, bigEndian: bigEndian)
        for index in 0..<entries {
            let entry = ifd + 2 + index * 12
            guard entry + 12 <= end else { return nil }
            guard bytes.uint16(at: entry, bigEndian: bigEndian) == 0x0112 else { continue }
            let value = bytes.uint16(at: entry + 8, bigEndian: bigEndian)
            return (1...8).contains(value) ? value : nil
        }
        return nil
    }
}

/// Bounds-checked big/little-endian reads from `Data` (any start index); out of range reads give 0.
struct ByteReader {
    let data: Data
    var count: Int { data.count }

    init(_ data: Data) { self.data = data }

    subscript(offset: Int) -> UInt8 {
        offset >= 0 && offset < data.count ? data[data.startIndex + offset] : 0
    }

    /// The absolute indices of `data` for offsets `start..<end`, clamped to the data.
    func range(_ start: Int, _ end: Int) -> Range<Data.Index> {
        let lower = min(max(0, start), count)
        return (data.startIndex + lower)..<(data.startIndex + max(lower, min(end, count)))
    }

    func matches(_ bytes: [UInt8], at offset: Int) -> Bool {
        offset + bytes.count <= count && bytes.indices.allSatisfy { self[offset + $0] == bytes[$0] }
    }

    func uint16(at offset: Int, bigEndian: Bool) -> Int {
        let a = Int(self[offset])
        let b = Int(self[offset + 1])
        return bigEndian ? a << 8 | b : b << 8 | a
    }

    func uint32(at offset: Int, bigEndian: Bool) -> Int {
        let high = uint16(at: bigEndian ? offset : offset + 2, bigEndian: bigEndian)
        let low = uint16(at: bigEndian ? offset + 2 : offset, bigEndian: bigEndian)
        return high << 16 | low
    }
}
