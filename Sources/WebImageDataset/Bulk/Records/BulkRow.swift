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
    /// The image itself, for an input that carries it (webdataset shards, ``BulkInputFormat/webdataset``):
    /// it is decoded instead of `url` being downloaded. nil (every other input) downloads `url`.
    public var image: BulkRowImage?

    /// A row of `url`, `caption`, the kept columns `saved` and the regions to blur `boxes`.
    public init(
        url: String, caption: String? = nil, saved: [BulkColumnValue] = [], boxes: [BlurBox] = [],
        expectedHash: String? = nil, image: BulkRowImage? = nil
    ) {
        self.url = url
        self.caption = caption
        self.saved = saved
        self.boxes = boxes
        self.expectedHash = expectedHash
        self.image = image
    }
}

/// The image an input row carries (``BulkRow/image``).
public enum BulkRowImage: Sendable, Equatable {
    /// The image file's bytes, and the archive member they come from (its name, for messages).
    case file(Data, member: String)
    /// The row's sample has no usable image, for the reason given (no image member, one too large): the
    /// row fails with ``BulkFailure/unusableSample``.
    case unusable(String)
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
