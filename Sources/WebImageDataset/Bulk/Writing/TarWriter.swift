import Foundation

/// Writes a POSIX ustar archive to a file, member by member.
///
/// Every header is deterministic (mode 0644, owner 0, mtime 0, no user or group names), so the same
/// samples always give the same bytes: an interrupted shard redone from scratch equals an uninterrupted
/// one. Names longer than 100 bytes use ustar's 155-byte prefix field; longer ones are refused.
final class TarWriter {
    private let handle: FileHandle

    /// Creates (truncating) the file at `url`.
    init(url: URL) throws {
        handle = try AtomicFile.createEmpty(at: url)
    }

    /// Whether `name` may name a member (or a file of a `--format files` folder): only ASCII letters,
    /// digits, `.`, `_` and `-`, no `..`, not empty, so it can never reach outside the archive's (or the
    /// folder's) own directory when extracted.
    static func isSafeName(_ name: String) -> Bool {
        !name.isEmpty && !name.contains("..")
            && name.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }

    /// Appends a regular file member; a name that is not ``isSafeName(_:)`` is refused.
    func add(name: String, data: Data) throws {
        guard Self.isSafeName(name) else { throw BulkFileError("refusing tar member name '\(name)'") }
        try handle.write(contentsOf: Self.header(name: name, size: data.count))
        try handle.write(contentsOf: data)
        let padding = (512 - data.count % 512) % 512
        if padding > 0 { try handle.write(contentsOf: Data(count: padding)) }
    }

    /// Writes the two zero blocks that end an archive, flushes and closes the file.
    func finish() throws {
        try handle.write(contentsOf: Data(count: 1024))
        try handle.synchronize()
        try handle.close()
    }

    /// Closes the file without finishing the archive (the caller removes it).
    func abandon() {
        try? handle.close()
    }

    /// The 512-byte ustar header of a regular file.
    static func header(name: String, size: Int) throws -> Data {
        var bytes = [UInt8](repeating: 0, count: 512)
        let nameBytes = Array(name.utf8)
        var prefix: [UInt8] = []
        var last = nameBytes
        if nameBytes.count > 100 {
            // Split at a '/' so the prefix is ≤ 155 bytes and the rest ≤ 100.
            guard
                let slash = nameBytes.indices.last(where: {
                    nameBytes[$0] == UInt8(ascii: "/") && $0 <= 155 && nameBytes.count - $0 - 1 <= 100
                })
            else { throw BulkFileError("tar member name too long: \(name)") }
            prefix = Array(nameBytes[..<slash])
            last = Array(nameBytes[(slash + 1)...])
        }
        func put(_ field: [UInt8], at offset: Int) {
            for (index, byte) in field.enumerated() { bytes[offset + index] = byte }
        }
        func octal(_ value: Int, width: Int) -> [UInt8] {
            let digits = String(value, radix: 8)
            return Array((String(repeating: "0", count: max(0, width - 1 - digits.count)) + digits).utf8) + [0]
        }
        put(last, at: 0)
        put(octal(0o644, width: 8), at: 100)  // mode
        put(octal(0, width: 8), at: 108)  // uid
        put(octal(0, width: 8), at: 116)  // gid
        put(octal(size, width: 12), at: 124)  // size
        put(octal(0, width: 12), at: 136)  // mtime
        put(Array(repeating: UInt8(ascii: " "), count: 8), at: 148)  // checksum, blank while summing
        bytes[156] = UInt8(ascii: "0")  // regular file
        put(Array("ustar".utf8) + [0], at: 257)
        put(Array("00".utf8), at: 263)
        put(prefix, at: 345)
        let checksum = bytes.reduce(0) { $0 + Int($1) }
        put(octal(checksum, width: 7) + [UInt8(ascii: " ")], at: 148)
        return Data(bytes)
    }
}
