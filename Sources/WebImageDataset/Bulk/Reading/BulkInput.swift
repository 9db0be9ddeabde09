import Foundation

/// The formats `webimage bulk` reads: text and JSON formats optionally gzip-compressed (`.gz`), and Parquet.
public enum BulkInputFormat: String, Sendable, CaseIterable {
    /// One URL per line.
    case txt
    /// Comma-separated values with a header row.
    case csv
    /// Tab-separated values with a header row.
    case tsv
    /// One JSON object per line.
    case jsonl
    /// A JSON array of objects, one per row (pandas' `records` orientation), as img2dataset reads `json`.
    case json
    /// An Apache Parquet file (not gzip-compressed: its pages carry their own compression).
    case parquet

    /// The format a file name names (`urls.csv.gz` is CSV); nil for anything else.
    public init?(fileName: String) {
        var name = fileName.lowercased()
        let gzip = name.hasSuffix(".gz")
        if gzip { name.removeLast(3) }
        guard let format = BulkInputFormat(rawValue: (name as NSString).pathExtension) else { return nil }
        if gzip && format == .parquet { return nil }
        self = format
    }
}

/// A stream of input rows, read one at a time: one type per input format.
public protocol BulkRowReading: AnyObject {
    /// The next row; nil at the end. Throws ``BulkInputError`` for damaged input, naming where.
    func next() throws -> BulkRow?

    /// Reads past up to `count` rows, checking them as ``next()`` does; how many there were (fewer at the
    /// end of the input). The planning pass counts the rows with it, and a run reads past the shards it
    /// does not make.
    func skip(_ count: Int) throws -> Int
}

extension BulkRowReading {
    /// Reads past up to `count` rows with ``next()``.
    public func skip(_ count: Int) throws -> Int {
        var skipped = 0
        while skipped < count, try next() != nil { skipped += 1 }
        return skipped
    }
}

/// Opens input files as row streams.
public enum BulkInput {
    /// The reader for `path`, chosen by its name (see ``BulkInputFormat``).
    ///
    /// ```swift
    /// let reader = try BulkInput.open(path: "urls.csv.gz", columns: BulkColumns(caption: "caption"))
    /// while let row = try reader.next() { print(row.url) }
    /// ```
    public static func open(
        path: String, columns: BulkColumns, maxLineBytes: Int = TextRowReader.defaultMaxLineBytes
    ) throws -> any BulkRowReading {
        guard let format = BulkInputFormat(fileName: path) else {
            throw BulkInputError("'\(path)' is not .txt, .csv, .tsv, .json or .jsonl (optionally .gz), or .parquet")
        }
        switch format {
        case .parquet: return try ParquetRowReader(path: path, columns: columns)
        case .json: return try JSONArrayRowReader(path: path, columns: columns, maxLineBytes: maxLineBytes)
        case .txt, .csv, .tsv, .jsonl:
            return try TextRowReader(path: path, format: format, columns: columns, maxLineBytes: maxLineBytes)
        }
    }
}
