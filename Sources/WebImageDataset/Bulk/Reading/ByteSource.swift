import CZlib
import Foundation

/// What ``ByteSource`` and the record parsers find wrong with the bytes; ``BulkRowReader`` adds where.
enum ByteSourceError: Error, CustomStringConvertible {
    case unreadable(String)
    case damagedGzip(String)
    case truncatedGzip
    case lineTooLong(limit: Int)
    case unclosedQuote

    var description: String {
        switch self {
        case .unreadable(let reason): "cannot read the file: \(reason)"
        case .damagedGzip(let reason): "damaged gzip data (\(reason))"
        case .truncatedGzip: "the gzip data ends before its end marker: the file is truncated"
        case .lineTooLong(let limit): "the line is longer than --max-line-bytes (\(limit) bytes)"
        case .unclosedQuote: "a quote opened in the record that starts here is never closed"
        }
    }
}

/// Bytes of a file, read in 256 KiB blocks, inflated on the fly for gzip (concatenated members too).
///
/// Damaged gzip data (`Z_DATA_ERROR`, a bad check value) and a file that ends inside a member (before
/// its trailer) are errors: a damaged input never passes for a shorter or a garbled one. Zero bytes
/// after the last member are skipped, as gzip(1) and Python's `gzip` do. A UTF-8 byte order mark at
/// the start of the data is dropped.
final class ByteSource {
    private static let blockSize = 1 << 18
    private let handle: FileHandle
    private let gzip: Bool
    private var stream = z_stream()
    /// zlib keeps pointers into these between calls, so they are allocated, not Swift arrays.
    private let compressed: UnsafeMutablePointer<UInt8>
    private let inflated: UnsafeMutablePointer<UInt8>
    private var buffer = [UInt8]()
    private var position = 0
    private var finished = false
    /// Whether a gzip member has begun and its trailer has not been read yet.
    private var inMember = false
    /// Damage found after some bytes were inflated: thrown once those have been read, so the error names
    /// the line where the good data ends.
    private var damage: ByteSourceError?

    init(path: String, gzip: Bool) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw BulkInputError("cannot read '\(path)'")
        }
        self.handle = handle
        self.gzip = gzip
        compressed = .allocate(capacity: gzip ? Self.blockSize : 1)
        inflated = .allocate(capacity: gzip ? Self.blockSize : 1)
        // 15 + 32: a zlib or gzip header, detected.
        if gzip, inflateInit2_(&stream, 15 + 32, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) != Z_OK {
            throw BulkInputError("cannot start decompressing '\(path)'")
        }
        // The first three bytes may arrive in more than one block (a tiny gzip member each).
        var head: [UInt8] = []
        while head.count < 3, let chunk = try nextChunk() { head += chunk }
        if head.starts(with: [0xEF, 0xBB, 0xBF]) { head.removeFirst(3) }
        buffer = head
    }

    deinit {
        if gzip { inflateEnd(&stream) }
        compressed.deallocate()
        inflated.deallocate()
        try? handle.close()
    }

    /// The next block of the file's bytes (inflated for gzip); nil at the end.
    private func nextChunk() throws -> [UInt8]? {
        if let damage { throw damage }
        guard !finished else { return nil }
        while true {
            if !gzip || stream.avail_in == 0 {
                let data: Data?
                do {
                    data = try handle.read(upToCount: Self.blockSize)
                } catch {
                    throw ByteSourceError.unreadable(error.localizedDescription)
                }
                guard let data, !data.isEmpty else {
                    finished = true
                    if inMember { throw ByteSourceError.truncatedGzip }
                    return nil
                }
                if !gzip { return [UInt8](data) }
                data.copyBytes(to: compressed, count: data.count)
                stream.next_in = compressed
                stream.avail_in = UInt32(data.count)
            }
            if !inMember {
                while stream.avail_in > 0 && stream.next_in.pointee == 0 {
                    stream.next_in = stream.next_in.advanced(by: 1)
                    stream.avail_in -= 1
                }
                if stream.avail_in == 0 { continue }
                inMember = true
            }
            stream.next_out = inflated
            stream.avail_out = UInt32(Self.blockSize)
            let status = inflate(&stream, Z_NO_FLUSH)
            let count = Self.blockSize - Int(stream.avail_out)
            switch status {
            case Z_STREAM_END:
                inMember = false
                inflateReset(&stream)  // keeps next_in: another gzip member may follow
            case Z_OK, Z_BUF_ERROR:  // Z_BUF_ERROR: no progress until more input comes
                break
            default:
                finished = true
                damage = .damagedGzip(stream.msg.map { String(cString: $0) } ?? "zlib status \(status)")
                if count == 0, let damage { throw damage }
            }
            if count > 0 { return Array(UnsafeBufferPointer(start: inflated, count: count)) }
        }
    }

    private func refill() throws -> Bool {
        guard let chunk = try nextChunk() else { return false }
        buffer = chunk
        position = 0
        return true
    }

    func readByte() throws -> UInt8? {
        if position >= buffer.count, !(try refill()) { return nil }
        defer { position += 1 }
        return buffer[position]
    }

    /// The next line without its line break (CR LF or LF); nil at the end. A line longer than `limit`
    /// bytes throws as soon as that many have been read.
    func readLine(limit: Int) throws -> String? {
        var line: [UInt8] = []
        var sawAnything = false
        while true {
            if position >= buffer.count, !(try refill()) { break }
            sawAnything = true
            let newline = buffer[position...].firstIndex(of: UInt8(ascii: "\n"))
            let end = newline ?? buffer.count
            // The line break's CR, when there is one, is not part of the line.
            if line.count + (end - position) > limit + 1 { throw ByteSourceError.lineTooLong(limit: limit) }
            line += buffer[position..<end]
            position = newline.map { $0 + 1 } ?? buffer.count
            if newline != nil { break }
        }
        guard sawAnything else { return nil }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        if line.count > limit { throw ByteSourceError.lineTooLong(limit: limit) }
        return String(decoding: line, as: UTF8.self)
    }
}
