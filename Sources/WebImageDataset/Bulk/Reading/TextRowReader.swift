import Foundation

/// Reads a text input file (`.txt`, `.csv`, `.tsv`, `.jsonl`, optionally `.gz`) as a stream of rows, never
/// holding more than one buffer and one record.
///
/// Text: one URL per line (blank lines and `#` comments skipped). CSV, as Python's `csv` module reads
/// it (RFC 4180): a quote opens a quoted field only at the start of a field, and is a plain character
/// anywhere else (`a 5" screen`); inside quotes, commas and line breaks are text and `""` is a quote; a
/// quote never closed is an error naming its line. TSV: tab-separated, no quoting. CSV and TSV start
/// with a header row naming the columns. JSON Lines: one object per line, values of any JSON type
/// turned into text; a line that is not a JSON object is an error naming it. A UTF-8 byte order mark before the first line is dropped. A line (a CSV record,
/// the line breaks inside its quotes included) longer than `maxLineBytes` is an error naming it, so a
/// damaged file cannot make one giant row. A row without a URL is kept (its download fails with a clear
/// error), so every input row gets one output row.
public final class TextRowReader: BulkRowReading {
    /// `--max-line-bytes`'s default: 1 MB.
    public static let defaultMaxLineBytes = 1 << 20

    private let path: String
    private let bytes: ByteSource
    private let format: BulkInputFormat
    private let columns: BulkColumns
    private let maxLineBytes: Int
    private var urlIndex = 0
    private var captionIndex: Int?
    private var boxesIndex: Int?
    private var hashIndex: Int?
    private var savedIndexes: [Int?] = []
    /// Lines read so far; the record being read starts on line `recordLine`.
    private var line = 0
    private var recordLine = 0
    /// Rows returned so far.
    public private(set) var rowsRead = 0

    /// Opens `path` as `format` (its name's, by default). Throws ``BulkInputError`` for a file that cannot
    /// be read, a format that is not text, or a header without the URL column.
    public init(
        path: String, format: BulkInputFormat? = nil, columns: BulkColumns, maxLineBytes: Int = defaultMaxLineBytes
    ) throws {
        guard let format = format ?? BulkInputFormat(fileName: path), [.txt, .csv, .tsv, .jsonl].contains(format) else {
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
            if let boxes = columns.boxes {
                guard let index = names.firstIndex(of: boxes) else {
                    throw BulkInputError("'\(path)' has no box column '\(boxes)'")
                }
                boxesIndex = index
            }
            if let hash = columns.verifyHash {
                guard let index = names.firstIndex(of: hash) else {
                    throw BulkInputError("'\(path)' has no hash column '\(hash)'")
                }
                hashIndex = index
            }
        }
    }

    /// The next row; nil at the end. Throws `BulkInputError` naming the line (and the rows read before
    /// it) for an over-long line, an unclosed quote or damaged gzip data.
    public func next() throws -> BulkRow? {
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
                saved: zip(columns.saved, savedIndexes).map {
                    BulkColumnValue(name: $0, value: .string(field($1) ?? ""))
                }, boxes: try boxes(field(boxesIndex).map { .text($0) } ?? .null), expectedHash: field(hashIndex))
        case .jsonl:
            while let text = try nextLine() {
                guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
                switch JSONObjectRow.object(Data(text.utf8)) {
                case .success(let object): return try JSONObjectRow.row(object, columns: columns, boxes: boxes)
                case .failure(let error):
                    throw BulkInputError("'\(path)' line \(recordLine) (after row \(rowsRead)): \(error.reason)")
                }
            }
            return nil
        case .json, .parquet, .webdataset:
            return nil
        }
    }

    /// The boxes of the row being read; a cell that is not a list of boxes is an error naming the line.
    private func boxes(_ cell: BlurBox.BoxCell) throws -> [BlurBox] {
        do {
            return try BlurBox.boxes(in: cell)
        } catch let error as BlurBox.BoxParseError {
            throw BulkInputError(
                "'\(path)' line \(recordLine) (after row \(rowsRead)) box column '\(columns.boxes ?? "")': "
                    + error.message)
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
