import Foundation

/// A file's EXIF block, found without decoding pixels, and the two forms a result is written with: the
/// whole block with its orientation set to 1 (the pixels are upright by then), or a new block holding only
/// the copyright and artist. The block is the TIFF structure (byte-order mark, IFD0, …) that JPEG's APP1
/// carries after `Exif\0\0`, PNG's `eXIf` chunk and WebP's `EXIF` chunk hold.
public enum EXIFMetadata {
    /// The most bytes a block may have: what JPEG's APP1 holds beside its `Exif\0\0` header. A larger one
    /// (possible in PNG and WebP) is not kept, so every format can write what was kept.
    public static let maximumBytes = 65_527

    /// The EXIF block of JPEG (APP1 `Exif\0\0`), PNG (`eXIf`) or WebP (`EXIF`) `data`; nil for other
    /// formats, and when there is none, it is larger than `maximumBytes`, or it does not start as TIFF does.
    public static func block(in data: Data, format: ImageFormat) -> Data? {
        let bytes = ByteReader(data)
        let found: Range<Int>? =
            switch format {
            case .jpeg: jpegBlock(bytes)
            case .png: chunk(bytes, from: 8, sizeFirst: true, named: "eXIf")
            case .webp: chunk(bytes, from: 12, sizeFirst: false, named: "EXIF")
            default: nil
            }
        guard var range = found else { return nil }
        // Some writers keep JPEG's `Exif\0\0` in PNG's and WebP's chunks too.
        if bytes.matches(Array("Exif\0\0".utf8), at: range.lowerBound) {
            range = (range.lowerBound + 6)..<range.upperBound
        }
        guard range.count >= 8, range.count <= maximumBytes, tiffByteOrder(bytes, at: range.lowerBound) != nil
        else { return nil }
        return Data(bytes.data[bytes.range(range.lowerBound, range.upperBound)])
    }

    /// `exif` with IFD0's orientation (0x0112), when it has a readable one, set to 1 (top-left).
    public static func upright(_ exif: Data) -> Data {
        var result = Data(exif)
        let bytes = ByteReader(exif)
        guard let bigEndian = tiffByteOrder(bytes, at: 0) else { return result }
        for entry in ifd0Entries(bytes, bigEndian: bigEndian)
        where bytes.uint16(at: entry, bigEndian: bigEndian) == 0x0112
            && bytes.uint16(at: entry + 2, bigEndian: bigEndian) == 3
        {
            result[result.startIndex + entry + 8] = bigEndian ? 0 : 1
            result[result.startIndex + entry + 9] = bigEndian ? 1 : 0
        }
        return result
    }

    /// A new block (little-endian) holding only `exif`'s IFD0 artist (0x013B) and copyright (0x8298), as
    /// imgproxy's `keep_copyright` keeps them through a metadata strip; nil when it has neither.
    public static func copyright(_ exif: Data) -> Data? {
        let bytes = ByteReader(exif)
        guard let bigEndian = tiffByteOrder(bytes, at: 0) else { return nil }
        var kept: [(tag: Int, value: [UInt8])] = []
        for entry in ifd0Entries(bytes, bigEndian: bigEndian) {
            let tag = bytes.uint16(at: entry, bigEndian: bigEndian)
            guard tag == 0x013B || tag == 0x8298, bytes.uint16(at: entry + 2, bigEndian: bigEndian) == 2 else {
                continue
            }
            let count = bytes.uint32(at: entry + 4, bigEndian: bigEndian)
            let start = count <= 4 ? entry + 8 : bytes.uint32(at: entry + 8, bigEndian: bigEndian)
            guard count > 0, count <= maximumBytes, start + count <= bytes.count else { continue }
            kept.append((tag, (0..<count).map { bytes[start + $0] }))
        }
        guard !kept.isEmpty else { return nil }
        kept.sort { $0.tag < $1.tag }
        func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
        func le32(_ value: Int) -> [UInt8] { le16(value & 0xFFFF) + le16(value >> 16 & 0xFFFF) }
        var result: [UInt8] = Array("II".utf8) + le16(42) + le32(8) + le16(kept.count)
        var data: [UInt8] = []
        let dataStart = 8 + 2 + kept.count * 12 + 4
        for (tag, value) in kept {
            result += le16(tag) + le16(2) + le32(value.count)
            if value.count <= 4 {
                result += value + [UInt8](repeating: 0, count: 4 - value.count)
            } else {
                result += le32(dataStart + data.count)
                data += value + (value.count % 2 == 1 ? [0] : [])
            }
        }
        return Data(result + le32(0) + data)
    }

    /// Whether the TIFF header at `offset` is big-endian (`MM`), little-endian (`II`), or not a header.
    private static func tiffByteOrder(_ bytes: ByteReader, at offset: Int) -> Bool? {
        switch (bytes[offset], bytes[offset + 1]) {
        case (0x4D, 0x4D) where bytes.uint16(at: offset + 2, bigEndian: true) == 42: true
        case (0x49, 0x49) where bytes.uint16(at: offset + 2, bigEndian: false) == 42: false
        default: nil
        }
    }

    /// The offsets of IFD0's twelve-byte entries that lie wholly inside a block starting at 0.
    private static func ifd0Entries(_ bytes: ByteReader, bigEndian: Bool) -> [Int] {
        let ifd = bytes.uint32(at: 4, bigEndian: bigEndian)
        guard ifd >= 8, ifd + 2 <= bytes.count else { return [] }
        let count = bytes.uint16(at: ifd, bigEndian: bigEndian)
        return (0..<count).map { ifd + 2 + $0 * 12 }.filter { $0 + 12 <= bytes.count }
    }

    /// The payload of JPEG's first APP1 `Exif\0\0` segment before the scan.
    private static func jpegBlock(_ bytes: ByteReader) -> Range<Int>? {
        var offset = 2
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF {
            let marker = bytes[offset + 1]
            if marker == 0xFF {
                offset += 1  // fill byte
                continue
            }
            if marker == 0xD9 || marker == 0xDA { return nil }
            if marker == 0x01 || (0xD0...0xD7).contains(marker) {
                offset += 2
                continue
            }
            let length = bytes.uint16(at: offset + 2, bigEndian: true)
            guard length >= 2, offset + 2 + length <= bytes.count else { return nil }
            if marker == 0xE1, bytes.matches(Array("Exif\0\0".utf8), at: offset + 4) {
                return (offset + 4)..<(offset + 2 + length)
            }
            offset += 2 + length
        }
        return nil
    }

    /// The payload of the first chunk named `name` (PNG: big-endian size, then name; RIFF: name, then
    /// little-endian size, payloads padded to even) from `start`.
    private static func chunk(_ bytes: ByteReader, from start: Int, sizeFirst: Bool, named name: String) -> Range<Int>?
    {
        let wanted = Array(name.utf8)
        var offset = start
        while offset + 8 <= bytes.count {
            let size =
                sizeFirst ? bytes.uint32(at: offset, bigEndian: true) : bytes.uint32(at: offset + 4, bigEndian: false)
            let type = sizeFirst ? offset + 4 : offset
            let payload = offset + 8
            guard size >= 0, payload + size <= bytes.count else { return nil }
            if bytes.matches(wanted, at: type) { return payload..<(payload + size) }
            offset = payload + size + (sizeFirst ? 4 : size % 2)
        }
        return nil
    }
}
