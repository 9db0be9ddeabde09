import Foundation

/// Reads a Parquet URL list (LAION's metadata files, a Hugging Face dataset's shards) as a stream of rows,
/// one row group at a time, reading only the URL, caption and kept columns. At most one row group is in
/// memory: the last one is let go before the next one is read. A row costs a few lookups, no Foundation
/// string work, so a planning pass over 2^25 rows takes seconds.
///
/// The URL and caption columns may hold any scalar type (read as text); kept columns keep their type
/// (int, float, double, bool, text; `null` stays `null`). A column the file lacks, or one of a type or feature the
/// reader does not support, is a ``BulkInputError`` naming the column and the feature.
public final class ParquetRowReader: BulkRowReading {
    private let path: String
    private let reader: ParquetReader
    private let columns: BulkColumns
    private let used: [String]
    /// The positions in ``used`` of the URL, caption, hash, box and kept columns.
    private let urlIndex: Int?
    private let captionIndex: Int?
    private let hashIndex: Int?
    private let boxesIndex: Int?
    private let savedIndices: [(name: String, index: Int?)]
    private var group: ParquetRowGroup?
    private var nextGroup = 0
    private var position = 0

    /// Opens `path` and checks that it has the columns of `columns`.
    public init(path: String, columns: BulkColumns) throws {
        self.path = path
        self.columns = columns
        let used = columns.used
        self.used = used
        urlIndex = used.firstIndex(of: columns.url)
        captionIndex = columns.caption.flatMap { used.firstIndex(of: $0) }
        hashIndex = columns.verifyHash.flatMap { used.firstIndex(of: $0) }
        boxesIndex = columns.boxes.flatMap { used.firstIndex(of: $0) }
        savedIndices = columns.saved.map { ($0, used.firstIndex(of: $0)) }
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
        guard let group = try currentGroup() else { return nil }
        defer { position += 1 }
        func value(_ index: Int?) -> BulkValue {
            guard let index else { return .null }
            return Self.value(group.value(row: position, column: index))
        }
        return BulkRow(
            url: value(urlIndex).text.map(Self.trimmingSpaces) ?? "",
            caption: captionIndex == nil ? nil : value(captionIndex).text,
            saved: savedIndices.map { BulkColumnValue(name: $0.name, value: value($0.index)) },
            boxes: try boxes(group, row: position),
            expectedHash: hashIndex == nil ? nil : value(hashIndex).text)
    }

    /// Reads past up to `count` rows without making them: each row group is read (and so checked) whole,
    /// and a box column's cells are parsed as ``next()`` parses them, so the planning pass finds what a
    /// run would, in time linear in the rows with nothing made per row.
    public func skip(_ count: Int) throws -> Int {
        var skipped = 0
        while skipped < count, let group = try currentGroup() {
            let taken = min(count - skipped, group.rowCount - position)
            if boxesIndex != nil {
                for row in position..<(position + taken) { _ = try boxes(group, row: row) }
            }
            position += taken
            skipped += taken
        }
        return skipped
    }

    /// The row group holding row ``position``, reading the next one when the current one is used up; nil
    /// at the end of the file.
    private func currentGroup() throws -> ParquetRowGroup? {
        while group.map({ position >= $0.rowCount }) ?? true {
            guard nextGroup < reader.rowGroupCount else { return nil }
            // Let the used-up group go first: two row groups would be alive while the next one is read.
            group = nil
            do {
                group = try reader.readRowGroup(nextGroup, columns: used)
            } catch let error as ParquetError {
                throw BulkInputError("'\(path)' row group \(nextGroup): \(error.description)")
            }
            nextGroup += 1
            position = 0
        }
        return group
    }

    /// The regions to blur of `row` in `group` (none without a box column).
    private func boxes(_ group: ParquetRowGroup, row: Int) throws -> [BlurBox] {
        guard let name = columns.boxes, let index = boxesIndex else { return [] }
        do {
            return try BlurBox.boxes(in: .parquet(group.value(row: row, column: index)))
        } catch let error as BlurBox.BoxParseError {
            throw BulkInputError(
                "'\(path)' row group \(nextGroup - 1) row \(row) box column '\(name)': \(error.message)")
        }
    }

    /// `text` without the tabs and spaces at its ends, as `trimmingCharacters(in: .whitespaces)` has it,
    /// without bridging to `NSString`: a URL that neither starts nor ends with one, the usual case, is
    /// returned as it is after two checks.
    static func trimmingSpaces(_ text: String) -> String {
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            scalar.isASCII ? scalar == " " || scalar == "\t" : CharacterSet.whitespaces.contains(scalar)
        }
        let scalars = text.unicodeScalars
        guard let first = scalars.first, let last = scalars.last, isSpace(first) || isSpace(last) else {
            return text
        }
        guard let start = scalars.firstIndex(where: { !isSpace($0) }),
            let end = scalars.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(scalars[start...end])
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
