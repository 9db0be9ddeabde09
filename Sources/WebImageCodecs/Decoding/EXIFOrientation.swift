import Foundation

/// Reads the EXIF orientation tag (0x0112) without decoding pixels.
enum EXIFOrientation {
    /// The orientation in a JPEG's APP1 "Exif" segment; 1 when absent or unreadable.
    static func fromJPEG(_ data: Data) -> Int {
        let bytes = ByteReader(data)
        var offset = 2
        while offset + 4 <= bytes.count {
            guard bytes[offset] == 0xFF else { return 1 }
            let marker = bytes[offset + 1]
            if marker == 0xFF {
                offset += 1  // fill byte
                continue
            }
            if marker == 0xD9 || marker == 0xDA { return 1 }  // end of image, start of scan: no EXIF before
            if marker == 0x01 || (0xD0...0xD7).contains(marker) {
                offset += 2
                continue
            }
            let length = bytes.uint16(at: offset + 2, bigEndian: true)
            guard length >= 2 else { return 1 }
            let payload = offset + 4
            if marker == 0xE1, payload + 6 <= bytes.count, bytes.matches(Array("Exif\0\0".utf8), at: payload) {
                let end = min(bytes.count, offset + 2 + length)
                return fromTIFF(bytes, start: payload + 6, end: end)
            }
            offset += 2 + length
        }
        return 1
    }

    /// The orientation in a TIFF structure (an EXIF block without the "Exif\0\0" prefix); 1 when absent.
    static func fromTIFF(_ data: Data) -> Int {
        let bytes = ByteReader(data)
        var start = 0
        if bytes.matches(Array("Exif\0\0".utf8), at: 0) { start = 6 }
        return fromTIFF(bytes, start: start, end: bytes.count)
    }

    private static func fromTIFF(_ bytes: ByteReader, start: Int, end: Int) -> Int {
        guard start + 8 <= end else { return 1 }
        let bigEndian: Bool
        switch (bytes[start], bytes[start + 1]) {
        case (0x4D, 0x4D): bigEndian = true
        case (0x49, 0x49): bigEndian = false
        default: return 1
        }
        let ifd = start + bytes.uint32(at: start + 4, bigEndian: bigEndian)
        guard ifd >= start, ifd + 2 <= end else { return 1 }
        let entries = bytes.uint16(at: ifd, bigEndian: bigEndian)
        for index in 0..<entries {
            let entry = ifd + 2 + index * 12
            guard entry + 12 <= end else { return 1 }
            guard bytes.uint16(at: entry, bigEndian: bigEndian) == 0x0112 else { continue }
            let value = bytes.uint16(at: entry + 8, bigEndian: bigEndian)
            return (1...8).contains(value) ? value : 1
        }
        return 1
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
