import Foundation

/// Reads a Parquet URL list (LAION's metadata files, a Hugging Face dataset's shards) as a stream of rows,
/// one row group at a time, reading only the URL, caption and kept columns.
///
/// The URL and caption columns may hold any scalar type (read as text); kept columns keep their type
/// (int, float, double, bool, text; `null` stays `null`). A column the file lacks, or one of a type or feature the
/// reader does not support, is a ``BulkInputError`` naming the column and the feature.
public final class ParquetRowReader: BulkRowReading {
    private let path: String
    private let reader: ParquetReader
    private let columns: BulkColumns
    private let used: [String]
    private var group: ParquetRowGroup?
    private var nextGroup = 0
    private var position = 0

    /// Opens `path` and checks that it has the columns of `columns`.
    public init(path: String, columns: BulkColumns) throws {
        self.path = path
        self.columns = columns
        used = columns.used
        do {
            reader = try ParquetReader(path: path)
        } catch let error as ParquetError {
            throw BulkInputError("'\(path)': \(error.description)")
        }
        for name in used {
            guard let column = reader.schema.column(named: name) else {
                let role =
                    name == columns.url
                    ? ""
                    : name == columns.caption
                        ? "caption " : name == columns.boxes ? "box " : name == columns.verifyHash ? "hash " : "kept "
                throw BulkInputError(
                    "'\(path)' has no \(role)column '\(name)' (its columns: "
                        + reader.schema.columns.map(\.name).joined(separator: ", ") + ")")
            }
            if name == columns.boxes, name != columns.url, name != columns.caption,
                !columns.saved.contains(name)
            {
                continue  // any type: each cell is checked as it is read
            }
            switch column.type {
            case .bool, .int32, .int64, .float, .double, .string: break
            case .bytes, .list, .unsupported:
                throw BulkInputError(
                    "'\(path)' column '\(name)': type \(column.type) is not supported as a bulk column "
                        + "(a scalar: text, integer, floating point or boolean)")
            }
        }
    }

    /// The total row count the file's footer gives.
    public var rowCount: Int { Int(reader.rowCount) }

    /// The next row; nil at the end. Reads the next row group when the current one is used up.
    public func next() throws -> BulkRow? {
        while group.map({ position >= $0.rowCount }) ?? true {
            guard nextGroup < reader.rowGroupCount else { return nil }
            do {
                group = try reader.readRowGroup(nextGroup, columns: used)
            } catch let error as ParquetError {
                throw BulkInputError("'\(path)' row group \(nextGroup): \(error.description)")
            }
            nextGroup += 1
            position = 0
        }
        guard let group else { return nil }
        defer { position += 1 }
        func value(_ name: String) -> BulkValue {
            guard let index = used.firstIndex(of: name) else { return .null }
            return Self.value(group.value(row: position, column: index))
        }
        var boxes: [BlurBox] = []
        if let name = columns.boxes, let index = used.firstIndex(of: name) {
            do {
                boxes = try BlurBox.boxes(in: .parquet(group.value(row: position, column: index)))
            } catch let error as BlurBox.BoxParseError {
                throw BulkInputError(
                    "'\(path)' row group \(nextGroup - 1) row \(position) box column '\(name)': \(error.message)")
            }
        }
        return BulkRow(
            url: value(columns.url).text?.trimmingCharacters(in: .whitespaces) ?? "",
            caption: columns.caption.flatMap { value($0).text },
            saved: columns.saved.map { BulkColumnValue(name: $0, value: value($0)) }, boxes: boxes,
            expectedHash: columns.verifyHash.flatMap { value($0).text })
    }

    /// The type of each kept column (``BulkColumns/saved``), by name.
    public var savedTypes: [String: ParquetColumnType] {
        Dictionary(
            columns.saved.compactMap { name in reader.schema.column(named: name).map { (name, $0.type) } },
            uniquingKeysWith: { first, _ in first })
    }

    /// A kept value read back from a jsonl (`--retry-failed`) given its column's `type` again: JSON numbers
    /// carry no width, so a FLOAT column's 0.1 reads back as a double and a DOUBLE column's 1.0 as an int.
    /// A float gets the float its shortest decimal names (what ``BulkValue/float(_:)`` printed); any other
    /// value stays as it is.
    static func value(_ value: BulkValue, as type: ParquetColumnType) -> BulkValue {
        switch (value, type) {
        case (.double(let number), .float): .float(Float(String(number)) ?? Float(number))
        case (.int(let number), .float): .float(Float(number))
        case (.int(let number), .double): .double(Double(number))
        default: value
        }
    }

    /// A scalar cell as a kept value (the initializer refused the other types).
    static func value(_ cell: ParquetValue) -> BulkValue {
        switch cell {
        case .null: .null
        case .bool(let value): .bool(value)
        case .int32(let value): .int(Int64(value))
        case .int64(let value): .int(value)
        case .float(let value): .float(value)
        case .double(let value): .double(value)
        case .string(let value): .string(value)
        case .bytes, .list: .null
        }
    }
}
