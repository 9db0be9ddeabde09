import Foundation

/// A downloaded image's EXIF as img2dataset 1.47 writes it in its `exif` column (`--extract_exif`, on by
/// default there): a JSON object text of every tag that exifread 3.0 (img2dataset's reader, called with
/// `details=False`) finds, named `"IFD Tag"` (`"Image Make"`, `"EXIF ExposureTime"`, `"GPS GPSLatitude"`),
/// each value the text exifread prints for it, trimmed: `"Canon"`, `"1/60"`, `"Rotated 90 CW"`,
/// `"[35, 41, 1234/100]"`. It is `"{}"` for an image without EXIF, and nil (a null) where exifread raises.
///
/// It reads what exifread reads, as exifread reads it, so the text is the same byte for byte:
/// - the TIFF header of a TIFF file, the first `Exif` APP1 segment among a JPEG's first segments (within
///   4,000 bytes of the segments it skips, as exifread looks), or a WebP's `EXIF` chunk (extended WebP);
///   any other file (PNG, GIF, AVIF) has none. A HEIC file (brand `heic`) is nil: exifread's HEIC reader
///   raises at the first box of the `meta` box it has no parser for, and a well-formed `meta` starts with
///   its handler (`hdlr`), so img2dataset writes null for every such file.
/// - the chain of IFDs (`Image`, `Thumbnail`, `IFD 2`…), then the `EXIF` IFD, and the `GPS` and
///   `Interoperability` IFDs where a tag points to them; the maker note, user comment and XP tags are
///   skipped, as `details=False` skips them.
/// - the values as exifread decodes them, its quirks included: a byte-sized value (BYTE, SBYTE,
///   UNDEFINED) reads as 0, so `ExifVersion` is `""`; a field of 1,000 values or more is `[]`; more than
///   50 values print the first 20 and `... ]`; offsets count from the TIFF header into the rest of the
///   file.
///
/// Hostile input ends in nil, never a hang or unbounded memory: more than ``maximumWork`` entries and
/// values, more than ``maximumTextBytes`` of ASCII fields, or a text over ``maximumJSONBytes``, is nil too
/// (exifread would go on).
public enum EXIFSummary {
    /// The most IFD entries and values one image's walk reads before it gives up (nil).
    public static let maximumWork = 1_000_000
    /// The most bytes of ASCII fields one image's walk reads (each field counted whole, as it may point
    /// anywhere in the file) before it gives up (nil).
    public static let maximumTextBytes = 64 << 20
    /// The longest text returned; a longer one is nil.
    public static let maximumJSONBytes = 1 << 20

    /// The `exif` text of `data`, an image file's bytes; nil where img2dataset writes null.
    public static func json(of data: Data) -> String? {
        let bytes = [UInt8](data)
        do {
            guard let header = try TIFFLocation.find(in: bytes) else { return "{}" }
            var walk = EXIFWalk(bytes: bytes, base: header.offset, littleEndian: header.littleEndian)
            try walk.run()
            return try walk.tags.json(limit: maximumJSONBytes)
        } catch {
            return nil
        }
    }

    /// Where exifread's reader would have raised: img2dataset's `exif` is then null.
    struct Raised: Error {}
}

/// Where a file's TIFF header is, as exifread finds it: nil for no EXIF (exifread's empty result).
struct TIFFLocation {
    var offset: Int
    var littleEndian: Bool

    static func find(in bytes: [UInt8]) throws(EXIFSummary.Raised) -> TIFFLocation? {
        let head = Array(bytes.prefix(12))
        let found: (offset: Int, endian: UInt8?)?
        if head.count >= 2, head[0] == head[1], head[0] == 0x49 || head[0] == 0x4D {
            found = (0, head[0])
        } else if head.count >= 12, head[4..<12].elementsEqual("ftypheic".utf8) {
            // exifread's HEIC reader raises on the handler box a HEIC file's meta box starts with.
            throw EXIFSummary.Raised()
        } else if head.count >= 12, head[0..<4].elementsEqual("RIFF".utf8), head[8..<12].elementsEqual("WEBP".utf8) {
            found = try webP(bytes)
        } else if head.count >= 2, head[0] == 0xFF, head[1] == 0xD8 {
            found = try jpeg(bytes, head: head)
        } else {
            found = nil
        }
        guard let found else { return nil }
        // exifread takes the byte after the header's position as its byte order: I, M, and two more it
        // names (0x01, d) read big-endian; any other byte, or none, raises.
        guard let endian = found.endian, [0x49, 0x4D, 0x01, 0x64].contains(endian) else {
            throw EXIFSummary.Raised()
        }
        return TIFFLocation(offset: found.offset, littleEndian: endian == 0x49)
    }

    private static func byte(_ bytes: [UInt8], _ index: Int) -> UInt8? {
        index >= 0 && index < bytes.count ? bytes[index] : nil
    }

    /// An extended WebP's `EXIF` chunk, chunks walked without their padding byte, as exifread walks them.
    private static func webP(_ bytes: [UInt8]) throws(EXIFSummary.Raised) -> (offset: Int, endian: UInt8?)? {
        guard bytes.count >= 16, bytes[12..<16].elementsEqual("VP8X".utf8) else { return nil }
        guard let flags = byte(bytes, 16) else { throw EXIFSummary.Raised() }
        guard flags & 8 != 0 else { return nil }
        var position = 30
        while position + 8 <= bytes.count {
            if bytes[position..<position + 4].elementsEqual("EXIF".utf8) {
                return (position + 8, byte(bytes, position + 8))
            }
            let size = bytes[position + 4..<position + 8].reversed().reduce(0) { $0 << 8 | Int($1) }
            position += 8 + size
        }
        return nil
    }

    /// The JPEG walk: APP0 segments named JFIF, JFXX, OLYM or Phot first, then segments within the
    /// first 4,000 bytes past them until an `Exif` APP1 or a quantization table.
    private static func jpeg(_ bytes: [UInt8], head: [UInt8]) throws(EXIFSummary.Raised) -> (Int, UInt8?)? {
        var base = 2
        var window = head
        var position = head.count
        let named: [[UInt8]] = ["JFIF", "JFXX", "OLYM", "Phot"].map { Array($0.utf8) }
        while true {
            guard let marker = byte(window, 2) else { throw EXIFSummary.Raised() }
            guard marker == 0xFF, named.contains(Array(window[min(6, window.count)..<min(10, window.count)])) else {
                break
            }
            guard let high = byte(window, 4), let low = byte(window, 5) else { throw EXIFSummary.Raised() }
            let length = Int(high) * 256 + Int(low)
            position = length - 8 < 0 ? bytes.count : min(bytes.count, position + length - 8)
            let next = Array(bytes[position..<min(bytes.count, position + 10)])
            position += next.count
            window = [0xFF, 0x00] + next
            base = base > 2 ? base + length + 4 - 2 : length + 4
        }
        let data = Array(bytes.prefix(base + 4000))
        func increment(_ at: Int) -> Int? {
            guard let high = byte(data, at + 2), let low = byte(data, at + 3) else { return nil }
            return Int(high) * 256 + Int(low) + 2
        }
        func slice(_ from: Int, _ count: Int) -> [UInt8] {
            from >= data.count ? [] : Array(data[from..<min(data.count, from + count)])
        }
        segments: while true {
            let marker = slice(base, 2)
            switch marker.count == 2 && marker[0] == 0xFF ? marker[1] : nil {
            case 0xE1:
                if slice(base + 4, 4).elementsEqual("Exif".utf8) {
                    base -= 2
                    break segments
                }
                guard let step = increment(base) else { throw EXIFSummary.Raised() }
                base += step
            case 0xE0, 0xE2, 0xEE, 0xD8, 0xEC:
                guard let step = increment(base) else { throw EXIFSummary.Raised() }
                base += step
            case 0xDB:
                break segments
            default:
                // Past the window: exifread finds no EXIF.
                guard let step = increment(base) else { return nil }
                base += step
            }
        }
        guard let marker = byte(data, base + 2) else { throw EXIFSummary.Raised() }
        guard marker == 0xFF,
            slice(base + 6, 4).elementsEqual("Exif".utf8) || slice(base + 6, 5).elementsEqual("Ducky".utf8)
                || slice(base + 6, 5).elementsEqual("Adobe".utf8)
        else { return nil }
        return (base + 12, byte(bytes, base + 12))
    }
}
