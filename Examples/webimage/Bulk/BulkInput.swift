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
/// Text: one URL per line (blank lines and `#` comments skipped). CSV (RFC 4180: quoted fields, doubled
/// quotes, line breaks inside quotes) and TSV (tab-separated, no quoting): a header row names the
/// columns. JSON Lines: one object per line, values of any JSON type turned into text. A row without a
/// URL is kept (its download fails with a clear error), so every input row gets one output row.
final class BulkRowReader: Sequence, IteratorProtocol {
    private let bytes: ByteSource
    private let format: BulkInputFormat
    private let columns: BulkColumns
    private var header: [String]?
    private var urlIndex = 0
    private var captionIndex: Int?
    private var savedIndexes: [Int?] = []
    /// Line number of the record being read, for messages.
    private(set) var line = 0
    /// Rows returned so far.
    private(set) var rowsRead = 0

    /// Opens `path`. Throws `BulkInputError` for a file that cannot be read, an unknown format, or a
    /// header without the URL column.
    init(path: String, columns: BulkColumns) throws {
        guard let format = BulkInputFormat(fileName: path) else {
            throw BulkInputError("'\(path)' is not .txt, .csv, .tsv or .jsonl (optionally .gz)")
        }
        self.format = format
        self.columns = columns
        bytes = try ByteSource(path: path, gzip: path.lowercased().hasSuffix(".gz"))
        if format == .csv || format == .tsv {
            guard let names = nextRecord() else { throw BulkInputError("'\(path)' is empty: no header row") }
            header = names
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

    func next() -> BulkRow? {
        let row = nextRow()
        if row != nil { rowsRead += 1 }
        return row
    }

    private func nextRow() -> BulkRow? {
        switch format {
        case .txt:
            while let text = bytes.readLine() {
                line += 1
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                return BulkRow(url: trimmed, caption: nil, saved: [])
            }
            return nil
        case .csv, .tsv:
            guard let fields = nextRecord() else { return nil }
            func field(_ index: Int?) -> String? { index.flatMap { $0 < fields.count ? fields[$0] : nil } }
            return BulkRow(
                url: field(urlIndex)?.trimmingCharacters(in: .whitespaces) ?? "", caption: field(captionIndex),
                saved: zip(columns.saved, savedIndexes).map { ($0, field($1) ?? "") })
        case .jsonl:
            while let text = bytes.readLine() {
                line += 1
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
    private func nextRecord() -> [String]? {
        if format == .tsv {
            while let text = bytes.readLine() {
                line += 1
                if text.isEmpty { continue }
                return text.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            }
            return nil
        }
        // CSV: a small state machine over bytes, so quoted fields may hold commas and line breaks.
        var fields: [String] = []
        var field: [UInt8] = []
        var inQuotes = false
        var sawAnything = false
        while let byte = bytes.readByte() {
            sawAnything = true
            if inQuotes {
                if byte == UInt8(ascii: "\"") {
                    if bytes.peekByte() == UInt8(ascii: "\"") {
                        _ = bytes.readByte()
                        field.append(byte)
                    } else {
                        inQuotes = false
                    }
                } else {
                    if byte == UInt8(ascii: "\n") { line += 1 }
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inQuotes = true
            case UInt8(ascii: ","):
                fields.append(String(decoding: field, as: UTF8.self))
                field.removeAll(keepingCapacity: true)
            case UInt8(ascii: "\r"):
                continue
            case UInt8(ascii: "\n"):
                line += 1
                if fields.isEmpty && field.isEmpty { continue }  // a blank line
                fields.append(String(decoding: field, as: UTF8.self))
                return fields
            default:
                field.append(byte)
            }
        }
        guard sawAnything, !(fields.isEmpty && field.isEmpty) else { return nil }
        line += 1
        fields.append(String(decoding: field, as: UTF8.self))
        return fields
    }
}

/// A problem with the input file that no retry fixes (the command exits with 2).
struct BulkInputError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Bytes of a file, read in 256 KiB blocks, inflated on the fly for gzip (concatenated members too).
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
    }

    deinit {
        if gzip { inflateEnd(&stream) }
        compressed.deallocate()
        inflated.deallocate()
        try? handle.close()
    }

    private func refill() -> Bool {
        guard !finished else { return false }
        buffer.removeAll(keepingCapacity: true)
        position = 0
        while buffer.isEmpty {
            if !gzip {
                let data = handle.readData(ofLength: Self.blockSize)
                guard !data.isEmpty else {
                    finished = true
                    return false
                }
                buffer = [UInt8](data)
                return true
            }
            if stream.avail_in == 0 {
                let data = handle.readData(ofLength: Self.blockSize)
                guard !data.isEmpty else {
                    finished = true
                    return false
                }
                data.copyBytes(to: compressed, count: data.count)
                stream.next_in = compressed
                stream.avail_in = UInt32(data.count)
            }
            stream.next_out = inflated
            stream.avail_out = UInt32(Self.blockSize)
            let status = inflate(&stream, Z_NO_FLUSH)
            buffer = Array(UnsafeBufferPointer(start: inflated, count: Self.blockSize - Int(stream.avail_out)))
            if status == Z_STREAM_END {
                inflateReset(&stream)  // keeps next_in: another gzip member may follow
            } else if status != Z_OK && status != Z_BUF_ERROR {
                finished = true  // damaged data: what was inflated so far is all there is
                return !buffer.isEmpty
            }
        }
        return true
    }

    func readByte() -> UInt8? {
        if position >= buffer.count, !refill() { return nil }
        defer { position += 1 }
        return buffer[position]
    }

    func peekByte() -> UInt8? {
        if position >= buffer.count, !refill() { return nil }
        return buffer[position]
    }

    /// The next line without its line break (CR LF or LF); nil at the end.
    func readLine() -> String? {
        var line: [UInt8] = []
        var sawAnything = false
        while true {
            if position >= buffer.count, !refill() { break }
            sawAnything = true
            if let newline = buffer[position...].firstIndex(of: UInt8(ascii: "\n")) {
                line += buffer[position..<newline]
                position = newline + 1
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            line += buffer[position...]
            position = buffer.count
        }
        guard sawAnything, !line.isEmpty else { return nil }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return String(decoding: line, as: UTF8.self)
    }
}
