import Foundation

/// The rotation (`irot`) and mirror (`imir`) properties of a HEIF file's primary item, read from the file's
/// own boxes, because libheif 1.15 applies them without reporting them.
///
/// The walk follows ISO/IEC 14496-12 and 23008-12: the top-level `meta` box, its `pitm` (the primary
/// item's ID) and `iprp`, whose `ipco` lists the properties and whose `ipma` boxes associate them with
/// items by a 1-based index. A box that runs past its parent, or a table that does not fit, ends the walk
/// with what was found so far: the orientation is then 1, and libheif reports the damage when it decodes.
enum HEIFItemProperties {
    /// The EXIF orientation (1…8) equal to the primary item's `irot` then `imir`, or 1 when it has neither
    /// (or the boxes cannot be read).
    static func primaryOrientation(_ data: Data) -> Int {
        data.withUnsafeBytes { primaryOrientation(in: $0) }
    }

    private static func primaryOrientation(in bytes: UnsafeRawBufferPointer) -> Int {
        guard let meta = children(of: bytes, in: 0..<bytes.count).first(where: { $0.type == "meta" }),
            meta.payload.count >= 4
        else { return 1 }
        // `meta` is a full box: version and flags come first.
        let boxes = children(of: bytes, in: (meta.payload.lowerBound + 4)..<meta.payload.upperBound)
        guard let pitm = boxes.first(where: { $0.type == "pitm" }), let primary = primaryID(bytes, pitm.payload),
            let iprp = boxes.first(where: { $0.type == "iprp" })
        else { return 1 }
        let parts = children(of: bytes, in: iprp.payload)
        guard let ipco = parts.first(where: { $0.type == "ipco" }) else { return 1 }
        let properties = children(of: bytes, in: ipco.payload)
        var angle = 0
        var mirror = -1
        for ipma in parts where ipma.type == "ipma" {
            for index in associations(bytes, ipma.payload, item: primary) where index >= 1 && index <= properties.count
            {
                let property = properties[index - 1]
                guard !property.payload.isEmpty else { continue }
                let first = bytes[property.payload.lowerBound]
                if property.type == "irot" {
                    angle = Int(first & 3)
                } else if property.type == "imir" {
                    mirror = Int(first & 1)
                }
            }
        }
        return exifOrientation(angle: angle, mirror: mirror)
    }

    /// The EXIF orientation equal to turning an image `angle` × 90° anti-clockwise (`irot`), then
    /// mirroring it (`imir`): mode 0 swaps top and bottom, mode 1 left and right, -1 none.
    static func exifOrientation(angle: Int, mirror: Int) -> Int {
        // Rows: angle 0, 90° anti-clockwise, 180°, 270° anti-clockwise. Columns: no mirror, mode 0, mode 1.
        let table = [[1, 4, 2], [8, 5, 7], [3, 2, 4], [6, 7, 5]]
        return table[angle & 3][mirror < 0 ? 0 : (mirror == 0 ? 1 : 2)]
    }

    /// A box: its four-character type and the range of its payload (after the size and type).
    struct Box {
        let type: String
        let payload: Range<Int>
    }

    /// The boxes laid end to end in `range` of `bytes`, stopping at the first one that does not fit (at
    /// most 4,096, so a file of empty boxes cannot make the walk long).
    static func children(of bytes: UnsafeRawBufferPointer, in range: Range<Int>) -> [Box] {
        var boxes: [Box] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound, boxes.count < 4096 {
            var size = Int(uint32(bytes, offset))
            var header = 8
            if size == 1 {
                guard offset + 16 <= range.upperBound else { break }
                let large = UInt64(uint32(bytes, offset + 8)) << 32 | UInt64(uint32(bytes, offset + 12))
                guard large <= UInt64(range.upperBound - offset) else { break }
                size = Int(large)
                header = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= header, size <= range.upperBound - offset else { break }
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            boxes.append(Box(type: type, payload: (offset + header)..<(offset + size)))
            offset += size
        }
        return boxes
    }

    /// The item ID in a `pitm` payload (16 bits in version 0, 32 after).
    private static func primaryID(_ bytes: UnsafeRawBufferPointer, _ payload: Range<Int>) -> Int? {
        guard payload.count >= 6 else { return nil }
        let version = bytes[payload.lowerBound]
        if version == 0 { return Int(uint16(bytes, payload.lowerBound + 4)) }
        guard payload.count >= 8 else { return nil }
        return Int(uint32(bytes, payload.lowerBound + 4))
    }

    /// The 1-based property indexes an `ipma` payload associates with `item`, in the box's order.
    private static func associations(_ bytes: UnsafeRawBufferPointer, _ payload: Range<Int>, item: Int) -> [Int] {
        guard payload.count >= 8 else { return [] }
        let version = bytes[payload.lowerBound]
        let wideIndexes = bytes[payload.lowerBound + 3] & 1 != 0
        let count = Int(uint32(bytes, payload.lowerBound + 4))
        var offset = payload.lowerBound + 8
        for _ in 0..<min(count, payload.count) {
            let idSize = version < 1 ? 2 : 4
            guard offset + idSize + 1 <= payload.upperBound else { return [] }
            let id = idSize == 2 ? Int(uint16(bytes, offset)) : Int(uint32(bytes, offset))
            let associationCount = Int(bytes[offset + idSize])
            offset += idSize + 1
            let entrySize = wideIndexes ? 2 : 1
            guard offset + associationCount * entrySize <= payload.upperBound else { return [] }
            if id == item {
                return (0..<associationCount).map { index in
                    let at = offset + index * entrySize
                    // The top bit says "essential"; the rest is the index.
                    return wideIndexes ? Int(uint16(bytes, at) & 0x7FFF) : Int(bytes[at] & 0x7F)
                }
            }
            offset += associationCount * entrySize
        }
        return []
    }

    private static func uint16(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    private static func uint32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }
}
