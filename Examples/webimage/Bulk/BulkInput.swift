import CZlib
import Foundation

/// One input row: the URL, its caption, and the other columns `--save-cols` keeps (in that order).
struct BulkRow: Sendable {
    var url: String
    var caption: String?
    var saved: [(name: String, value: String)]
}

/// The formats `webimage bulk` reads, each optionally gzip-compressed (`.gz`).
enum BulkInputFormat: String, Sendable {
    case txt, csv, tsv, jsonl

    /// The format a file name names (`urls.csv.gz` is CSV); nil for anything else.
    init?(fileName: String) {
        var name = fileName.lowercased()
        if name.hasSuffix(".gz") { name.removeLast(3) }
        guard let format = BulkInputFormat(rawValue: (name as NSString).pathExtension) else { return nil }
        self = format
    }
}

/// What makes a row out of a record: the URL column, the caption column, the columns to keep.
struct BulkColumns: Sendable {
    var url = "url"
    var caption: String?
    var saved: [String] = []
}

/// Reads an input file as a stream of rows, never holding more than one buffer and one record.
///
/// Text: one URL per line (blank lines and `#` comments skipped). CSV, as Python's `csv` module reads
/// it (RFC 4180): a quote opens a quoted field only at the start of a field, and is a plain character
/// anywhere else (`a 5" screen`); inside quotes, commas and line breaks are text and `""` is a quote; a
/// quote never closed is an error naming its line. TSV: tab-separated, no quoting. CSV and TSV start
/// with a header row naming the columns. JSON Lines: one object per line, values of any JSON type
/// turned into text. A UTF-8 byte order mark before the first line is dropped. A line (a CSV record,
/// the line breaks inside its quotes included) longer than `maxLineBytes` is an error naming it, so a
/// damaged file cannot make one giant row. A row without a URL is kept (its download fails with a clear
/// error), so every input row gets one output row.
final class BulkRowReader {
    /// `--max-line-bytes`'s default: 1 MB.
    static let defaultMaxLineBytes = 1 << 20

    private let path: String
    private let bytes: ByteSource
    private let format: BulkInputFormat
    private let columns: BulkColumns
    private let maxLineBytes: Int
    private var urlIndex = 0
    private var captionIndex: Int?
    private var savedIndexes: [Int?] = []
    /// Lines read so far; the record being read starts on line `recordLine`.
    private var line = 0
    private var recordLine = 0
    /// Rows returned so far.
    private(set) var rowsRead = 0

    /// Opens `path`. Throws `BulkInputError` for a file that cannot be read, an unknown format, or a
    /// header without the URL column.
    init(path: String, columns: BulkColumns, maxLineBytes: Int = defaultMaxLineBytes) throws {
        guard let format = BulkInputFormat(fileName: path) else {
            throw BulkInputError("'\(path)' is not .txt, .csv, .tsv or .jsonl (optionally .gz)")
        }
        self.path = path
        self.format = format
        self.columns = columns
        self.maxLineBytes = maxLineBytes
        do {
            bytes = try ByteSource(path: path, gzip: path.lowercased().hasSuffix(".gz"))
        } catch let error as ByteSourceError {
            throw BulkInputError("'\(path)' line 1: \(error.description)")
        }
        if format == .csv || format == .tsv {
            guard let names = try located({ try nextRecord() }) else {
                throw BulkInputError("'\(path)' is empty: no header row")
            }
            guard let url = names.firstIndex(of: columns.url) else {
                throw BulkInputError(
                    "'\(path)' has no column '\(columns.url)' (its columns: \(names.joined(separator: ", ")))")
            }
            urlIndex = url
            if let caption = columns.caption {
                guard let index = names.firstIndex(of: caption) else {
                    throw BulkInputError("'\(path)' has no caption column '\(caption)'")
                }
                captionIndex = index
            }
            savedIndexes = columns.saved.map { names.firstIndex(of: $0) }
        }
    }

    /// The next row; nil at the end. Throws `BulkInputError` naming the line (and the rows read before
    /// it) for an over-long line, an unclosed quote or damaged gzip data.
    func next() throws -> BulkRow? {
        let row = try located { try nextRow() }
        if row != nil { rowsRead += 1 }
        return row
    }

    /// Runs `body`, turning a problem of the bytes into an error that says where it is.
    private func located<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ByteSourceError {
            throw BulkInputError("'\(path)' line \(recordLine) (after row \(rowsRead)): \(error.description)")
        }
    }

    /// The next line, at most `maxLineBytes` long; nil at the end.
    private func nextLine() throws -> String? {
        recordLine = line + 1
        guard let text = try bytes.readLine(limit: maxLineBytes) else { return nil }
        line += 1
        return text
    }

    private func nextRow() throws -> BulkRow? {
        switch format {
        case .txt:
            while let text = try nextLine() {
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                return BulkRow(url: trimmed, caption: nil, saved: [])
            }
            return nil
        case .csv, .tsv:
            guard let fields = try nextRecord() else { return nil }
            func field(_ index: Int?) -> String? { index.flatMap { $0 < fields.count ? fields[$0] : nil } }
            return BulkRow(
                url: field(urlIndex)?.trimmingCharacters(in: .whitespaces) ?? "", caption: field(captionIndex),
                saved: zip(columns.saved, savedIndexes).map { ($0, field($1) ?? "") })
        case .jsonl:
            while let text = try nextLine() {
                guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
                let object =
                    (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]))
                    as? [String: Any] ?? [:]
                func value(_ name: String?) -> String? {
                    guard let name, let value = object[name], !(value is NSNull) else { return nil }
                    if let text = value as? String { return text }
                    if let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]) {
                        return String(decoding: data, as: UTF8.self)
                    }
                    return "\(value)"
                }
                return BulkRow(
                    url: value(columns.url) ?? "", caption: value(columns.caption),
                    saved: columns.saved.map { ($0, value($0) ?? "") })
            }
            return nil
        }
    }

    /// The next CSV or TSV record's fields; nil at the end. Blank lines are skipped.
    private func nextRecord() throws -> [String]? {
        if format == .tsv {
            while let text = try nextLine() {
                if text.isEmpty { continue }
                return text.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            }
            return nil
        }
        var parser = CSVRecordParser()
        recordLine = line + 1
        var size = 0
        while let byte = try bytes.readByte() {
            if byte == UInt8(ascii: "\n") { line += 1 }
            switch parser.consume(byte) {
            case .more:
                // The record's bytes, without the line break that ends it (CR LF or LF).
                if byte != UInt8(ascii: "\r") { size += 1 }
                if size > maxLineBytes { throw ByteSourceError.lineTooLong(limit: maxLineBytes) }
            case .blankLine:
                recordLine = line + 1
                size = 0
            case .record(let fields):
                return fields
            }
        }
        switch parser.end() {
        case .record(let fields):
            line += 1
            return fields
        case .unclosedQuote:
            throw ByteSourceError.unclosedQuote
        case .nothing:
            return nil
        }
    }
}

/// One CSV record, a byte at a time, as Python's `csv` reader (excel dialect) splits it.
struct CSVRecordParser {
    enum Step: Equatable {
        case more
        case blankLine
        case record([String])
    }

    enum End: Equatable {
        case nothing
        case record([String])
        case unclosedQuote
    }

    private enum State {
        /// At the start of a field: a quote here opens a quoted field.
        case fieldStart
        /// In a field that did not start with a quote: a quote is a plain character.
        case unquoted
        case quoted
        /// A quote inside a quoted field: a second one is a literal quote, a delimiter or a line break ends
        /// the field, anything else is kept (as Python does when not `strict`).
        case quoteInQuoted
    }

    private var state = State.fieldStart
    private var fields: [String] = []
    private var field: [UInt8] = []
    private var sawByte = false

    mutating func consume(_ byte: UInt8) -> Step {
        let quote = UInt8(ascii: "\"")
        let comma = UInt8(ascii: ",")
        let newline = UInt8(ascii: "\n")
        // A carriage return outside quotes belongs to a CR LF line break.
        if byte == UInt8(ascii: "\r"), state != .quoted { return .more }
        switch state {
        case .quoted:
            if byte == quote {
                state = .quoteInQuoted
            } else {
                field.append(byte)
            }
            sawByte = true
            return .more
        case .quoteInQuoted where byte == quote:
            field.append(quote)
            state = .quoted
            return .more
        case .fieldStart, .unquoted, .quoteInQuoted:
            if byte == comma {
                endField()
                sawByte = true
                return .more
            }
            if byte == newline {
                guard sawByte else { return .blankLine }
                return .record(endRecord())
            }
            if byte == quote && state == .fieldStart {
                state = .quoted
            } else {
                field.append(byte)
                state = .unquoted
            }
            sawByte = true
            return .more
        }
    }

    /// The end of the data: the last record when it had no line break, or an error inside quotes.
    mutating func end() -> End {
        if state == .quoted { return .unclosedQuote }
        return sawByte ? .record(endRecord()) : .nothing
    }

    private mutating func endField() {
        fields.append(String(decoding: field, as: UTF8.self))
        field.removeAll(keepingCapacity: true)
        state = .fieldStart
    }

    private mutating func endRecord() -> [String] {
        endField()
        defer {
            fields = []
            sawByte = false
        }
        return fields
    }
}

/// A problem with the input file that no retry fixes (the command exits with 2).
struct BulkInputError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

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
