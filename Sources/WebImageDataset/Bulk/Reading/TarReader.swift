import Foundation

/// Reads the members of a tar archive in order: POSIX ustar, pax (`path` and `size` records) and GNU
/// (long names, base-256 sizes) headers, as GNU tar, Python's `tarfile` and webdataset's `TarWriter` write
/// them.
///
/// Only what a member's header says is read until the caller asks for its bytes: a member not wanted is
/// passed by a seek. Every header's checksum is checked, and a member that would end past the end of the
/// file is an error, so a damaged or truncated archive never reads as a shorter one. The end is two zero
/// blocks, or the end of the file right after a member (as `tarfile` allows). Names are only ever compared,
/// never used as paths.
final class TarReader {
    /// A member's header: its name, size, whether it is a regular file, and where its bytes start.
    struct Member {
        var name: String
        var size: Int
        var isRegularFile: Bool
        var offset: UInt64
    }

    /// The most bytes a pax header or a GNU long name may have: names and a few numbers, never more.
    static let maximumHeaderExtensionBytes = 1 << 20

    let path: String
    private let handle: FileHandle
    private let fileSize: UInt64
    /// Where the next header starts, once the current member's bytes and padding are passed.
    private var nextHeader: UInt64 = 0
    private var ended = false

    /// Opens the archive at `path`.
    init(path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw BulkInputError("cannot read '\(path)'")
        }
        self.path = path
        self.handle = handle
        fileSize = (try? handle.seekToEnd()) ?? 0
    }

    deinit { try? handle.close() }

    /// The next member's header (pax and GNU extension headers applied); nil at the end of the archive.
    func next() throws -> Member? {
        var longName: String?
        var paxPath: String?
        var paxSize: Int?
        while !ended {
            let at = nextHeader
            guard let block = try readHeaderBlock(at: at) else {
                ended = true
                return nil
            }
            let header = try parse(block, at: at)
            let dataStart = at + 512
            guard UInt64(header.size) <= fileSize - min(fileSize, dataStart) else {
                throw damage(
                    at: at,
                    "the member '\(header.name.prefix(200))' declares \(header.size) bytes, past the end of the "
                        + "file: the archive is truncated")
            }
            nextHeader = dataStart + (UInt64(header.size) + 511) / 512 * 512
            switch header.type {
            case UInt8(ascii: "x"):
                let records = try extensionBytes(header, at: dataStart)
                let fields = try Self.paxRecords(records) { self.damage(at: at, $0) }
                if let path = fields["path"] { paxPath = path }
                if let size = fields["size"] {
                    guard let value = Int(size), value >= 0 else {
                        throw damage(at: at, "the pax header's size '\(size.prefix(40))' is not a byte count")
                    }
                    paxSize = value
                }
            case UInt8(ascii: "L"):
                let bytes = try extensionBytes(header, at: dataStart)
                longName = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            case UInt8(ascii: "g"), UInt8(ascii: "K"):
                continue  // global pax records and GNU long link names name nothing a sample uses
            default:
                var member = Member(
                    name: paxPath ?? longName ?? header.name, size: header.size,
                    isRegularFile: [0, UInt8(ascii: "0"), UInt8(ascii: "7")].contains(header.type), offset: dataStart)
                if let paxSize {
                    // The data a pax size describes follows this header instead of the header's own size.
                    guard UInt64(paxSize) <= fileSize - min(fileSize, dataStart) else {
                        throw damage(at: at, "the pax size \(paxSize) runs past the end of the file: truncated")
                    }
                    member.size = paxSize
                    nextHeader = dataStart + (UInt64(paxSize) + 511) / 512 * 512
                }
                return member
            }
        }
        return nil
    }

    /// The bytes of `member`, which ``next()`` returned last.
    func read(_ member: Member) throws -> Data {
        try handle.seek(toOffset: member.offset)
        let data = try handle.read(upToCount: member.size) ?? Data()
        guard data.count == member.size else {
            throw damage(at: member.offset, "the member '\(member.name.prefix(200))' ends early: truncated")
        }
        return data
    }

    // MARK: Headers

    private struct Header {
        var name: String
        var size: Int
        var type: UInt8
    }

    /// The 512 bytes at `offset`; nil at the end (two zero blocks, one zero block then the file's end, or
    /// the file's end where a header would start).
    private func readHeaderBlock(at offset: UInt64) throws -> [UInt8]? {
        guard offset < fileSize else { return nil }
        try handle.seek(toOffset: offset)
        let data = try handle.read(upToCount: 512) ?? Data()
        guard data.count == 512 else { throw damage(at: offset, "the file ends inside a header: truncated") }
        let block = [UInt8](data)
        if block.allSatisfy({ $0 == 0 }) { return nil }
        return block
    }

    private func parse(_ block: [UInt8], at offset: UInt64) throws -> Header {
        let stored = Self.octal(block[148..<156])
        var unsigned = 0
        var signed = 0
        for (index, byte) in block.enumerated() {
            let value = (148..<156).contains(index) ? UInt8(ascii: " ") : byte
            unsigned += Int(value)
            signed += Int(Int8(bitPattern: value))
        }
        guard let stored, stored == unsigned || stored == signed else {
            throw damage(at: offset, "not a tar header (its checksum does not match): not a tar archive, or damaged")
        }
        guard let size = Self.size(block[124..<136]) else {
            throw damage(at: offset, "the header's size field is not a number")
        }
        var name = Self.text(block[0..<100])
        if Array(block[257..<262]) == Array("ustar".utf8) {
            let prefix = Self.text(block[345..<500])
            if !prefix.isEmpty { name = prefix + "/" + name }
        }
        return Header(name: name, size: size, type: block[156])
    }

    /// The bytes of an extension header (pax records, a GNU long name), bounded.
    private func extensionBytes(_ header: Header, at offset: UInt64) throws -> Data {
        guard header.size <= Self.maximumHeaderExtensionBytes else {
            throw damage(
                at: offset - 512,
                "an extension header of \(header.size) bytes (at most \(Self.maximumHeaderExtensionBytes))")
        }
        return try read(Member(name: "extension header", size: header.size, isRegularFile: false, offset: offset))
    }

    /// pax's `LENGTH KEY=VALUE\n` records.
    static func paxRecords(_ data: Data, damage: (String) -> BulkInputError) throws -> [String: String] {
        var fields: [String: String] = [:]
        let bytes = [UInt8](data)
        var start = 0
        while start < bytes.count, bytes[start] != 0 {
            guard let space = bytes[start...].firstIndex(of: UInt8(ascii: " ")),
                let length = Int(String(decoding: bytes[start..<space], as: UTF8.self)), length > space - start + 1,
                start + length <= bytes.count, bytes[start + length - 1] == UInt8(ascii: "\n")
            else { throw damage("a pax header record is malformed") }
            let record = bytes[(space + 1)..<(start + length - 1)]
            guard let equals = record.firstIndex(of: UInt8(ascii: "=")) else {
                throw damage("a pax header record has no '='")
            }
            fields[String(decoding: record[..<equals], as: UTF8.self)] = String(
                decoding: record[(equals + 1)...], as: UTF8.self)
            start += length
        }
        return fields
    }

    /// A NUL- or space-terminated octal field; nil when it holds anything else.
    static func octal(_ field: ArraySlice<UInt8>) -> Int? {
        let digits = field.drop { $0 == UInt8(ascii: " ") }.prefix { $0 != 0 && $0 != UInt8(ascii: " ") }
        guard digits.count <= 21, digits.allSatisfy({ (0x30...0x37).contains($0) }) else { return nil }
        return digits.reduce(0) { $0 * 8 + Int($1 - 0x30) }
    }

    /// A size: octal, or GNU's base-256 (the first byte's high bit set) for 8 GiB and more.
    static func size(_ field: ArraySlice<UInt8>) -> Int? {
        guard let first = field.first, first & 0x80 != 0 else { return octal(field) }
        guard first == 0x80 else { return nil }  // negative, or wider than 7 bytes of value
        var value = 0
        for byte in field.dropFirst() {
            guard value < (Int.max >> 8) else { return nil }
            value = value << 8 | Int(byte)
        }
        return value
    }

    private static func text(_ field: ArraySlice<UInt8>) -> String {
        String(decoding: field.prefix { $0 != 0 }, as: UTF8.self)
    }

    private func damage(at offset: UInt64, _ reason: String) -> BulkInputError {
        BulkInputError("'\(path)', the header at byte \(offset): \(reason)")
    }
}
