import Foundation

/// EXIF blocks (TIFF structures) written byte by byte for the metadata tests: IFD0 with the given
/// entries, in either byte order, so no EXIF library is involved.
package enum EXIFBlocks {
    /// One IFD0 entry: ASCII text (type 2, NUL added) or a SHORT (type 3).
    package enum Value {
        case text(String)
        case short(Int)
    }

    /// A camera's block: make `Camera`, orientation `orientation`, artist `Ann Artist`, copyright
    /// `(c) 2026 Studio`.
    package static func camera(orientation: Int = 6, bigEndian: Bool = true) -> Data {
        block(
            [
                (0x010F, .text("Camera")), (0x0112, .short(orientation)), (0x013B, .text("Ann Artist")),
                (0x8298, .text("(c) 2026 Studio")),
            ], bigEndian: bigEndian)
    }

    /// IFD0 holding `entries` (in tag order), values longer than four bytes after it, each padded to an even
    /// length as TIFF asks.
    package static func block(_ entries: [(tag: Int, value: Value)], bigEndian: Bool) -> Data {
        func u16(_ value: Int) -> [UInt8] {
            let bytes = [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
            return bigEndian ? bytes : bytes.reversed()
        }
        func u32(_ value: Int) -> [UInt8] {
            bigEndian
                ? u16(value >> 16 & 0xFFFF) + u16(value & 0xFFFF) : u16(value & 0xFFFF) + u16(value >> 16 & 0xFFFF)
        }
        var head: [UInt8] = Array((bigEndian ? "MM" : "II").utf8) + u16(42) + u32(8) + u16(entries.count)
        var tail: [UInt8] = []
        let tailStart = 8 + 2 + entries.count * 12 + 4
        for (tag, value) in entries {
            switch value {
            case .short(let number):
                head += u16(tag) + u16(3) + u32(1) + u16(number) + [0, 0]
            case .text(let text):
                let bytes = Array(text.utf8) + [0]
                head += u16(tag) + u16(2) + u32(bytes.count)
                if bytes.count <= 4 {
                    head += bytes + [UInt8](repeating: 0, count: 4 - bytes.count)
                } else {
                    head += u32(tailStart + tail.count)
                    tail += bytes + (bytes.count % 2 == 1 ? [0] : [])  // values start on a word boundary
                }
            }
        }
        return Data(head + u32(0) + tail)
    }
}
