import Foundation

/// One input row: the URL, its caption, and the other columns ``BulkColumns/saved`` keeps (in that order).
public struct BulkRow: Sendable, Equatable {
    /// The image's URL, as the input spells it.
    public var url: String
    /// The caption, written as `{key}.txt` beside the image; nil when the row has none.
    public var caption: String?
    /// The kept columns and their values, in the order ``BulkColumns/saved`` names them.
    public var saved: [BulkColumnValue]
    /// The regions to blur (``BulkColumns/boxes``); none by default.
    public var boxes: [BlurBox]
    /// The digest the downloaded file must have (``BulkColumns/verifyHash``); nil when the row has none.
    public var expectedHash: String?

    /// A row of `url`, `caption`, the kept columns `saved` and the regions to blur `boxes`.
    public init(
        url: String, caption: String? = nil, saved: [BulkColumnValue] = [], boxes: [BlurBox] = [],
        expectedHash: String? = nil
    ) {
        self.url = url
        self.caption = caption
        self.saved = saved
        self.boxes = boxes
        self.expectedHash = expectedHash
    }
}

/// A kept column of a row: its name and value.
public struct BulkColumnValue: Sendable, Equatable {
    /// The column's name.
    public var name: String
    /// The column's value.
    public var value: BulkValue

    /// The column `name` holding `value`.
    public init(name: String, value: BulkValue) {
        self.name = name
        self.value = value
    }
}

/// A kept column's value, with the type its input gives it: text from CSV, TSV and JSON Lines (as
/// before), typed from Parquet. Encodes as the JSON value of that type.
public enum BulkValue: Sendable, Hashable, Codable {
    /// Text.
    case string(String)
    /// A whole number.
    case int(Int64)
    /// A 64-bit floating-point number.
    case double(Double)
    /// A 32-bit floating-point number: a Parquet FLOAT column's (LAION's `punsafe`, `pwatermark`), kept as
    /// float so the shard's Parquet file has it as float, as img2dataset's does. JSON has it as the shortest
    /// decimal that reads back to the same float (0.1, not 0.10000000149011612). A JSON number read back is a
    /// ``double(_:)`` or an ``int(_:)``, as JSON numbers carry no width: `--retry-failed`, reading a jsonl,
    /// gives a Parquet input's kept columns their types back from its schema.
    case float(Float)
    /// A truth value.
    case bool(Bool)
    /// No value.
    case null

    /// Decodes a JSON value (an array or object is refused).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    /// Encodes the value as the JSON value of its type (a float as its shortest decimal, ``float(_:)``).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .float(let value): try container.encode(Double(value.description) ?? Double(value))
        case .bool(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }

    /// The value as text (nil for `null`): how a caption or URL column of another type is read.
    public var text: String? {
        switch self {
        case .string(let value): value
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .float(let value): String(value)
        case .bool(let value): String(value)
        case .null: nil
        }
    }
}

/// What makes a row out of a record: the URL column, the caption column, the columns to keep.
public struct BulkColumns: Sendable, Equatable {
    /// The column that holds the URL; `url` by default.
    public var url: String
    /// The column that holds the caption; none by default.
    public var caption: String?
    /// Other columns each sample's record keeps; none by default.
    public var saved: [String]
    /// The column of regions to blur, a list of normalised `[x0, y0, x1, y1]` boxes per row (``BlurBox``);
    /// none by default.
    public var boxes: String?

    /// The column of the digest each downloaded file must have (`--verify-hash`, hex, in
    /// ``BulkSettings/hashAlgorithm``); none by default.
    public var verifyHash: String?

    /// The columns `url`, `caption`, `saved`, `boxes` and `verifyHash`.
    public init(
        url: String = "url", caption: String? = nil, saved: [String] = [], boxes: String? = nil,
        verifyHash: String? = nil
    ) {
        self.url = url
        self.caption = caption
        self.saved = saved
        self.boxes = boxes
        self.verifyHash = verifyHash
    }

    /// Every column a row is made of, each once: what a columnar reader reads.
    var used: [String] {
        var names: [String] = []
        for name in [url] + (caption.map { [$0] } ?? []) + saved + (boxes.map { [$0] } ?? [])
            + (verifyHash.map { [$0] } ?? [])
        where !names.contains(name) {
            names.append(name)
        }
        return names
    }
}

/// The formats `webimage bulk` reads: text formats optionally gzip-compressed (`.gz`), and Parquet.
public enum BulkInputFormat: String, Sendable, CaseIterable {
    /// One URL per line.
    case txt
    /// Comma-separated values with a header row.
    case csv
    /// Tab-separated values with a header row.
    case tsv
    /// One JSON object per line.
    case jsonl
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
            throw BulkInputError("'\(path)' is not .txt, .csv, .tsv or .jsonl (optionally .gz), or .parquet")
        }
        switch format {
        case .parquet: return try ParquetRowReader(path: path, columns: columns)
        case .txt, .csv, .tsv, .jsonl:
            return try TextRowReader(path: path, format: format, columns: columns, maxLineBytes: maxLineBytes)
        }
    }
}
