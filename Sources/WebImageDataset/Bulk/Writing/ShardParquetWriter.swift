import Foundation

/// Writes a shard's records as `{shard:05}.parquet`: the jsonl's rows and columns, one row group, PLAIN
/// encoding and SNAPPY compression (``ParquetWriter``).
///
/// The record's own fields have fixed types (text, int64); a kept column's type is the one its values
/// share (int64, float, double, bool; numbers of more than one kind are double), text when they differ
/// otherwise or are text. The records are not kept: the own fields go into their column chunks as each
/// record comes (``ParquetColumnChunkBuilder``, a compressed page every ``rowsPerPage`` rows), the kept
/// columns' values into one array per column (their type is known only once every row is in);
/// ``finish()`` writes them all. A shard's rows thus cost their compressed bytes until it closes (a
/// hundred-odd bytes each, most of it the hash), not their records.
///
/// With an image column (the `parquet` output format, ``ParquetSampleWriter``), each row's saved image
/// follows as a last binary column, null for a failed row, as img2dataset's Parquet output has it. Its
/// pages, cut every ``imagePageBytes``, go to a spill file beside the output as they are cut, so a shard's
/// images are on disk, not in memory, until ``finish()`` copies them into the file.
final class ShardParquetWriter {
    /// Rows per page: small pages keep little uncompressed data per open shard, and cost a page header
    /// (some twenty bytes) per column each.
    static let rowsPerPage = 1_000
    /// The image column's page size: a page holds the images of about this many bytes (one at least).
    static let imagePageBytes = 1 << 20

    private let url: URL
    private let savedColumns: [String]
    private let fields: [(field: BulkSampleRecord.Field, column: ParquetColumn)]
    private var chunks: [ParquetColumnChunkBuilder]
    private var savedValues: [[BulkValue]]
    private var imageChunk: ParquetColumnChunkBuilder?
    private let imageSpill: ParquetPageSpill?

    /// The writer of `url`'s rows; with `imageColumn`, each row's image goes in a last binary column of
    /// that name.
    init(
        url: URL, savedColumns: [String], hashAlgorithm: BulkHashAlgorithm?, recordsEXIF: Bool = false,
        recordsPHash: Bool = false, imageColumn: String? = nil
    ) throws {
        self.url = url
        self.savedColumns = savedColumns
        fields = Self.fields(hashAlgorithm: hashAlgorithm, recordsEXIF: recordsEXIF, recordsPHash: recordsPHash)
        if let imageColumn,
            savedColumns.contains(imageColumn) || fields.contains(where: { $0.column.name == imageColumn })
        {
            throw BulkFileError("cannot write '\(url.path)': the image column '\(imageColumn)' is also a kept column")
        }
        do {
            chunks = try fields.map { try ParquetColumnChunkBuilder(column: $0.column, rowsPerPage: Self.rowsPerPage) }
            let spill = try imageColumn.map { _ in try ParquetPageSpill(path: Self.spillURL(for: url).path) }
            imageSpill = spill
            imageChunk = try imageColumn.map {
                try ParquetColumnChunkBuilder(
                    column: ParquetColumn(name: $0, type: .bytes, isNullable: true), rowsPerPage: Self.rowsPerPage,
                    spill: spill, pageByteLimit: Self.imagePageBytes)
            }
        } catch let error as ParquetError {
            throw BulkFileError("cannot write '\(url.path)': \(error.description)")
        }
        savedValues = savedColumns.map { _ in [] }
    }

    /// `.NAME.pages.partial-HOST-PID` beside `url`: the image column's spill file, which
    /// `AtomicFile.removeAbandoned(in:name:)` of `NAME.pages` clears after a crash.
    static func spillURL(for url: URL) -> URL {
        AtomicFile.temporaryURL(for: url.appendingPathExtension("pages"))
    }

    /// Adds the record's row, with `image` in the image column (null when nil).
    func append(_ record: BulkSampleRecord, image: Data? = nil) throws {
        do {
            for index in chunks.indices { try chunks[index].append(Self.cell(fields[index].field, of: record)) }
            try imageChunk?.append(image.map { .bytes([UInt8]($0)) } ?? .null)
        } catch let error as ParquetError {
            throw BulkFileError("cannot write '\(url.path)': \(error.description)")
        }
        for (index, name) in savedColumns.enumerated() {
            savedValues[index].append(record.saved.first { $0.name == name }?.value ?? .null)
        }
    }

    /// Writes the file under a temporary name and renames it into place.
    func finish() throws {
        let temporary = AtomicFile.temporaryURL(for: url)
        // The chunks and values are handed on, not copied: the writer adds each chunk's last page in place.
        var columns = chunks
        let saved = savedValues
        (chunks, savedValues) = ([], [])
        do {
            for (name, cells) in zip(savedColumns, saved) {
                let type = Self.commonType(cells)
                var chunk = try ParquetColumnChunkBuilder(
                    column: ParquetColumn(name: name, type: type, isNullable: true),
                    rowsPerPage: Self.rowsPerPage)
                for cell in cells { try chunk.append(Self.parquetValue(cell, as: type)) }
                columns.append(chunk)
            }
            if let imageChunk { columns.append(imageChunk) }
            imageChunk = nil
            let writer = try ParquetWriter(
                path: temporary.path, schema: ParquetSchema(columns: columns.map(\.column)),
                rowsPerPage: Self.rowsPerPage)
            try writer.writeRowGroup(chunks: consume columns)
            try writer.close()
        } catch let error as ParquetError {
            imageSpill?.remove()
            try? FileManager.default.removeItem(at: temporary)
            throw BulkFileError("cannot write '\(url.path)': \(error.description)")
        }
        try AtomicFile.commit(temporary, to: url)
    }

    func abandon() {
        imageSpill?.remove()
        try? FileManager.default.removeItem(at: AtomicFile.temporaryURL(for: url))
    }

    /// The schema and the columns of `records`, in the record's field order, the kept columns after; the
    /// hash column is named after `hashAlgorithm`, and absent without one. What ``finish()`` writes for
    /// the same records. The `exif` column is there with `recordsEXIF`.
    static func table(
        _ records: [BulkSampleRecord], savedColumns: [String], hashAlgorithm: BulkHashAlgorithm? = .sha256,
        recordsEXIF: Bool = false
    ) -> (ParquetSchema, [[ParquetValue]]) {
        let fields = fields(hashAlgorithm: hashAlgorithm, recordsEXIF: recordsEXIF, recordsPHash: false)
        var columns = fields.map(\.column)
        var values = fields.map { field in records.map { cell(field.field, of: $0) } }
        for name in savedColumns {
            let cells = records.map { record in record.saved.first { $0.name == name }?.value ?? .null }
            let type = commonType(cells)
            columns.append(ParquetColumn(name: name, type: type, isNullable: true))
            values.append(cells.map { cell in parquetValue(cell, as: type) })
        }
        return (ParquetSchema(columns: columns), values)
    }

    /// The record's own fields and their columns, in the record's field order; the hash column is named
    /// after `hashAlgorithm`, and absent without one; `exif` is there with `recordsEXIF`.
    private static func fields(
        hashAlgorithm: BulkHashAlgorithm?, recordsEXIF: Bool, recordsPHash: Bool
    ) -> [(field: BulkSampleRecord.Field, column: ParquetColumn)] {
        BulkSampleRecord.Field.allCases.filter {
            ($0 != .hash || hashAlgorithm != nil) && ($0 != .exif || recordsEXIF) && ($0 != .phash || recordsPHash)
        }.map { field in
            // The sizes are int32, as img2dataset's schema has them; WebImage's own counts are int64.
            let type: ParquetColumnType
            let nullable: Bool
            switch field {
            case .key, .url, .status: (type, nullable) = (.string, false)
            case .errorMessage, .errorCode, .caption, .exif, .phash, .hash: (type, nullable) = (.string, true)
            case .milliseconds, .attempts: (type, nullable) = (.int64, false)
            case .width, .height, .originalWidth, .originalHeight: (type, nullable) = (.int32, true)
            }
            let name = field == .hash ? hashAlgorithm?.rawValue ?? field.rawValue : field.rawValue
            return (field, ParquetColumn(name: name, type: type, isNullable: nullable))
        }
    }

    /// The value of the record's own field `field`.
    private static func cell(_ field: BulkSampleRecord.Field, of record: BulkSampleRecord) -> ParquetValue {
        func text(_ value: String?) -> ParquetValue { value.map { .string($0) } ?? .null }
        func int(_ value: Int?) -> ParquetValue { value.map { .int64(Int64($0)) } ?? .null }
        // A decoded image's sides are far below 2^31 (the decoders bound them), so clamping never applies.
        func side(_ value: Int?) -> ParquetValue { value.map { .int32(Int32(clamping: $0)) } ?? .null }
        return switch field {
        case .key: text(record.key)
        case .url: text(record.url)
        case .status: text(record.status.rawValue)
        case .errorMessage: text(record.errorMessage)
        case .errorCode: text(record.errorCode)
        case .caption: text(record.caption)
        case .milliseconds: int(record.milliseconds)
        case .attempts: int(record.attempts)
        case .width: side(record.width)
        case .height: side(record.height)
        case .originalWidth: side(record.originalWidth)
        case .originalHeight: side(record.originalHeight)
        case .exif: text(record.exif)
        case .phash: text(record.phash)
        case .hash: text(record.hash)
        }
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
