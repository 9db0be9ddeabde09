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
    /// webdataset shards (`.tar`, or a folder of them), such as `bulk`'s and img2dataset's own output: each
    /// sample's image is re-resized and re-encoded, nothing is downloaded (``WebDatasetRowReader``).
    case webdataset

    /// The format a file name names (`urls.csv.gz` is CSV, `00000.tar` webdataset); nil for anything else.
    public init?(fileName: String) {
        var name = fileName.lowercased()
        let gzip = name.hasSuffix(".gz")
        if gzip { name.removeLast(3) }
        let pathExtension = (name as NSString).pathExtension
        if pathExtension == "tar" && !gzip {
            self = .webdataset
            return
        }
        guard let format = BulkInputFormat(rawValue: pathExtension), format != .webdataset else { return nil }
        if gzip && format == .parquet { return nil }
        self = format
    }

    /// The format of the input at `path`: its name's (``init(fileName:)``), or webdataset for a folder.
    public init?(path: String) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            self = .webdataset
            return
        }
        self.init(fileName: (path as NSString).lastPathComponent)
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
    /// The reader for `path`, chosen by its name (see ``BulkInputFormat``); a folder is read as webdataset
    /// shards (its `.tar` files).
    ///
    /// ```swift
    /// let reader = try BulkInput.open(path: "urls.csv.gz", columns: BulkColumns(caption: "caption"))
    /// while let row = try reader.next() { print(row.url) }
    /// ```
    public static func open(
        path: String, columns: BulkColumns, maxLineBytes: Int = TextRowReader.defaultMaxLineBytes
    ) throws -> any BulkRowReading {
        guard let format = BulkInputFormat(path: path) else {
            throw BulkInputError(
                "'\(path)' is not .txt, .csv, .tsv, .json or .jsonl (optionally .gz), .parquet, or webdataset shards "
                    + "(.tar, or a folder of them)")
        }
        switch format {
        case .webdataset:
            return WebDatasetRowReader(
                paths: try WebDatasetRowReader.archives(at: path), columns: columns, maxLineBytes: maxLineBytes)
        case .parquet: return try ParquetRowReader(path: path, columns: columns)
        case .json: return try JSONArrayRowReader(path: path, columns: columns, maxLineBytes: maxLineBytes)
        case .txt, .csv, .tsv, .jsonl:
            return try TextRowReader(path: path, format: format, columns: columns, maxLineBytes: maxLineBytes)
        }
    }

    /// The input's size in bytes: the file's, or a folder's archives' together; 0 when it cannot be read.
    public static func size(path: String) -> Int {
        let paths =
            BulkInputFormat(path: path) == .webdataset ? (try? WebDatasetRowReader.archives(at: path)) ?? [] : [path]
        return paths.reduce(0) { total, path in
            total + ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
        }
    }
}
