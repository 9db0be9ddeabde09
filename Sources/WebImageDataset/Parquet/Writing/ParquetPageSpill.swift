#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A column chunk's pages kept in a file of their own as they are cut, rather than in memory, until the
/// row group is written: a column of image bytes, which Snappy leaves at about their size, would otherwise
/// hold a whole shard's images in memory until its file is written.
final class ParquetPageSpill {
    /// The spill file's path; ``copy(to:)`` and ``remove()`` delete it.
    let path: String
    private let file: ParquetOutputFile

    /// The bytes spilled so far.
    var size: Int { file.offset }

    /// Creates (or truncates) the spill file at `path`.
    init(path: String) throws {
        self.path = path
        file = try ParquetOutputFile(path: path)
    }

    deinit { remove() }

    /// Adds one page's bytes.
    func append(_ bytes: [UInt8]) throws {
        try file.write(bytes)
    }

    /// Writes the spilled bytes to `output`, a block at a time, then deletes the spill file.
    func copy(to output: ParquetOutputFile) throws {
        try file.close()
        let input = try ParquetFileHandle(path: path)
        var offset = 0
        while offset < input.size {
            let count = min(Self.blockSize, input.size - offset)
            try output.write(input.read(offset: offset, count: count))
            offset += count
        }
        remove()
    }

    /// Closes and deletes the spill file.
    func remove() {
        try? file.close()
        unlink(path)
    }

    private static let blockSize = 1 << 20
}
