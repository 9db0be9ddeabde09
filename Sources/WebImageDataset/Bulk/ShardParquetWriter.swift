import Foundation

/// Writes a shard's records as `{shard:05}.parquet`: the jsonl's rows and columns, one row group, PLAIN
/// encoding and SNAPPY compression (``ParquetWriter``).
///
/// The record's own fields have fixed types (text, int64); a kept column's type is the one its values
/// share (int64, float, double, bool; numbers of more than one kind are double), text when they differ
/// otherwise or are text. The rows are kept until ``finish()``, at most one shard's (10,000).
final class ShardParquetWriter {
    private let url: URL
    private let savedColumns: [String]
    private let hashAlgorithm: BulkHashAlgorithm?
    private var records: [BulkSampleRecord] = []

    init(url: URL, savedColumns: [String], hashAlgorithm: BulkHashAlgorithm?) {
        self.url = url
        self.savedColumns = savedColumns
        self.hashAlgorithm = hashAlgorithm
    }

    func append(_ record: BulkSampleRecord) {
        records.append(record)
    }

    /// Writes the file under a temporary name and renames it into place.
    func finish() throws {
        let temporary = AtomicFile.temporaryURL(for: url)
        do {
            let (schema, columns) = Self.table(records, savedColumns: savedColumns, hashAlgorithm: hashAlgorithm)
            let writer = try ParquetWriter(path: temporary.path, schema: schema)
            try writer.writeRowGroup(columns)
            try writer.close()
        } catch let error as ParquetError {
            try? FileManager.default.removeItem(at: temporary)
            throw BulkFileError("cannot write '\(url.path)': \(error.description)")
        }
        try AtomicFile.commit(temporary, to: url)
    }

    func abandon() {
        try? FileManager.default.removeItem(at: AtomicFile.temporaryURL(for: url))
    }

    /// The schema and the columns of `records`, in the record's field order, the kept columns after; the
    /// hash column is named after `hashAlgorithm`, and absent without one.
    static func table(
        _ records: [BulkSampleRecord], savedColumns: [String], hashAlgorithm: BulkHashAlgorithm? = .sha256
    ) -> (ParquetSchema, [[ParquetValue]]) {
        func text(_ value: String?) -> ParquetValue { value.map { .string($0) } ?? .null }
        func int(_ value: Int?) -> ParquetValue { value.map { .int64(Int64($0)) } ?? .null }
        var columns: [ParquetColumn] = []
        var values: [[ParquetValue]] = []
        for field in BulkSampleRecord.Field.allCases where field != .hash || hashAlgorithm != nil {
            let isText: Bool
            let nullable: Bool
            switch field {
            case .key, .url, .status: (isText, nullable) = (true, false)
            case .error, .errorCode, .caption, .hash: (isText, nullable) = (true, true)
            case .milliseconds, .attempts: (isText, nullable) = (false, false)
            case .width, .height, .originalWidth, .originalHeight: (isText, nullable) = (false, true)
            }
            let name = field == .hash ? hashAlgorithm?.rawValue ?? field.rawValue : field.rawValue
            columns.append(ParquetColumn(name: name, type: isText ? .string : .int64, isNullable: nullable))
            values.append(
                records.map { record in
                    switch field {
                    case .key: text(record.key)
                    case .url: text(record.url)
                    case .status: text(record.status.rawValue)
                    case .error: text(record.error)
                    case .errorCode: text(record.errorCode)
                    case .caption: text(record.caption)
                    case .milliseconds: int(record.milliseconds)
                    case .attempts: int(record.attempts)
                    case .width: int(record.width)
                    case .height: int(record.height)
                    case .originalWidth: int(record.originalWidth)
                    case .originalHeight: int(record.originalHeight)
                    case .hash: text(record.hash)
                    }
                })
        }
        for name in savedColumns {
            let cells = records.map { record in record.saved.first { $0.name == name }?.value ?? .null }
            let type = commonType(cells)
            columns.append(ParquetColumn(name: name, type: type, isNullable: true))
            values.append(cells.map { cell in parquetValue(cell, as: type) })
        }
        return (ParquetSchema(columns: columns), values)
    }

    /// The type all non-null `cells` share: int64, float (floats only, as img2dataset keeps LAION's float
    /// columns), double (doubles, or numbers of more than one kind), bool, else text.
    private static func commonType(_ cells: [BulkValue]) -> ParquetColumnType {
        var kinds = Set<String>()
        for cell in cells {
            switch cell {
            case .null: continue
            case .int: kinds.insert("int")
            case .double: kinds.insert("double")
            case .float: kinds.insert("float")
            case .bool: kinds.insert("bool")
            case .string: kinds.insert("string")
            }
        }
        if kinds == ["int"] { return .int64 }
        if kinds == ["float"] { return .float }
        if !kinds.isEmpty, kinds.isSubset(of: ["int", "float", "double"]) { return .double }
        if kinds == ["bool"] { return .bool }
        return .string
    }

    private static func parquetValue(_ cell: BulkValue, as type: ParquetColumnType) -> ParquetValue {
        switch (cell, type) {
        case (.null, _): .null
        case (.int(let value), .int64): .int64(value)
        case (.int(let value), .double): .double(Double(value))
        case (.double(let value), .double): .double(value)
        case (.float(let value), .float): .float(value)
        case (.float(let value), .double): .double(Double(value.description) ?? Double(value))  // 0.1, as the json
        case (.bool(let value), .bool): .bool(value)
        default: cell.text.map { .string($0) } ?? .null
        }
    }
}
