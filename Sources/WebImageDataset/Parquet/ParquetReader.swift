/// Reads a Parquet file one row group at a time.
///
/// Opening reads the footer: the schema and the row groups' sizes. ``readRowGroup(_:columns:)`` then
/// reads the requested top-level columns of one row group, so memory is bounded by one row group's
/// columns (a dictionary-encoded column as its dictionary and an index per row). Every length in the file is checked against ``ParquetLimits`` and against the file's size
/// before anything is allocated; a malformed or unsupported file throws a ``ParquetError`` naming the
/// column and the feature.
///
/// ```swift
/// let reader = try ParquetReader(path: "laion.parquet")
/// for group in 0..<reader.rowGroupCount {
///     let rows = try reader.readRowGroup(group, columns: ["url", "caption"])
///     for row in 0..<rows.rowCount {
///         guard let url = rows.value(row: row, column: 0).stringValue else { continue }  // a null URL
///         print(url, rows.value(row: row, column: 1).stringValue ?? "")
///     }
/// }
/// ```
///
/// Reads: PLAIN and dictionary encodings, data pages v1 and v2, UNCOMPRESSED/SNAPPY/GZIP/ZSTD, the
/// physical types BOOLEAN, INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY, optional
/// columns and LISTs (also lists of lists).
public final class ParquetReader: Sendable {
    /// The file's top-level columns.
    public let schema: ParquetSchema
    /// The number of rows in the file (the footer's count).
    public let rowCount: Int64
    /// The application that wrote the file (the footer's `created_by`), if recorded.
    public let createdBy: String?

    private let file: ParquetFileHandle
    private let metadata: FileMetadata
    private let plans: [ColumnPlan]
    private let limits: ParquetLimits
    /// Where the column chunks' bytes end (the footer starts).
    private let dataEnd: Int

    /// Opens the file at `path` and reads its footer.
    ///
    /// - Throws: ``ParquetError`` if the file cannot be read, is not Parquet, or its footer is malformed or
    ///   larger than `limits` allow.
    public init(path: String, limits: ParquetLimits = ParquetLimits()) throws {
        let file = try ParquetFileHandle(path: path)
        guard file.size >= 12 else { throw ParquetError.corrupt("\(file.size) bytes is too short for Parquet") }
        let head = try file.read(offset: 0, count: 4)
        let tail = try file.read(offset: file.size - 8, count: 8)
        let magic: [UInt8] = Array("PAR1".utf8)
        guard Array(tail[4...]) == magic else {
            if Array(tail[4...]) == Array("PARE".utf8) {
                throw ParquetError.unsupported("encrypted Parquet files are not supported")
            }
            throw ParquetError.corrupt("the file does not end with the Parquet magic PAR1 (truncated?)")
        }
        guard head == magic else { throw ParquetError.corrupt("the file does not start with the Parquet magic") }
        let footerLength = Int(PlainDecoder.littleEndian(tail, 0, 4))
        guard footerLength <= file.size - 12 else {
            throw ParquetError.corrupt("footer length \(footerLength) is past the file's \(file.size) bytes")
        }
        guard footerLength <= limits.maxFooterBytes else {
            throw ParquetError(
                .limitExceeded, "footer of \(footerLength) bytes is over the limit of \(limits.maxFooterBytes)")
        }
        let dataEnd = file.size - 8 - footerLength
        var reader = ThriftCompactReader(try file.read(offset: dataEnd, count: footerLength))
        let metadata = try FileMetadata.read(&reader)
        let plans = try SchemaBuilder.plans(metadata.schema)
        let leafCount = plans.reduce(0) { $0 + $1.leafCount }
        for (index, group) in metadata.rowGroups.enumerated() where group.columns.count != leafCount {
            throw ParquetError.corrupt(
                "row group \(index) has \(group.columns.count) column chunks, the schema \(leafCount) leaves")
        }
        self.file = file
        self.metadata = metadata
        self.plans = plans
        self.limits = limits
        self.dataEnd = dataEnd
        self.schema = ParquetSchema(columns: plans.map(\.column))
        self.rowCount = metadata.rowCount
        self.createdBy = metadata.createdBy
    }

    /// The number of row groups.
    public var rowGroupCount: Int { metadata.rowGroups.count }

    /// The number of rows in row group `index` (0 for an index out of range).
    public func rowCount(ofRowGroup index: Int) -> Int {
        metadata.rowGroups.indices.contains(index) ? Int(metadata.rowGroups[index].rowCount) : 0
    }

    /// Reads the columns named `columns` (top-level names; every column when `nil`) of row group `index`.
    ///
    /// - Throws: ``ParquetError`` with kind ``ParquetError/Kind/invalidArgument`` for an unknown column or
    ///   row group, or the error of the first column that cannot be read (never a partial result).
    public func readRowGroup(_ index: Int, columns: [String]? = nil) throws -> ParquetRowGroup {
        guard metadata.rowGroups.indices.contains(index) else {
            throw ParquetError(.invalidArgument, "row group \(index) does not exist (\(rowGroupCount) in the file)")
        }
        let group = metadata.rowGroups[index]
        guard group.rowCount <= Int64(limits.maxValuesPerColumnChunk) else {
            throw ParquetError(.limitExceeded, "row group \(index) claims \(group.rowCount) rows, over the limit")
        }
        let selected = try (columns ?? plans.map(\.column.name)).map { name in
            guard let plan = plans.first(where: { $0.column.name == name }) else {
                throw ParquetError(.invalidArgument, "the file has no column `\(name)`")
            }
            return plan
        }
        var storage: [ParquetColumnValues] = []
        for plan in selected {
            do {
                storage.append(try readColumn(plan, group))
            } catch let error as ParquetError {
                throw error.inColumn(plan.path)
            }
        }
        return ParquetRowGroup(columns: selected.map(\.column), storage: storage, rowCount: Int(group.rowCount))
    }

    private func readColumn(_ plan: ColumnPlan, _ group: RowGroup) throws -> ParquetColumnValues {
        if let reason = plan.unsupported { throw ParquetError.unsupported(reason) }
        let chunk = group.columns[plan.leafIndex]
        guard chunk.filePath == nil else {
            throw ParquetError.unsupported("column chunks in other files are not supported")
        }
        guard let metadata = chunk.metadata else { throw ParquetError.corrupt("column chunk without metadata") }
        guard metadata.path.joined(separator: ".") == plan.path else {
            throw ParquetError.corrupt(
                "column chunk path `\(metadata.path.joined(separator: "."))` is not the schema's")
        }
        guard metadata.type == plan.physicalType else {
            throw ParquetError.corrupt(
                "column chunk type \(PhysicalType.name(metadata.type)) is not the schema's "
                    + PhysicalType.name(plan.physicalType))
        }
        if let unsupported = metadata.encodings.first(where: { !Self.readableEncodings.contains($0) }) {
            throw ParquetError.unsupported("encoding \(Encoding.name(unsupported)) is not supported")
        }
        guard [0, 1, 2, 6].contains(metadata.codec) else {
            throw ParquetError.unsupported("codec \(CompressionCodec.name(metadata.codec)) is not supported")
        }
        var start = metadata.dataPageOffset
        if let dictionaryOffset = metadata.dictionaryPageOffset, dictionaryOffset > 0, dictionaryOffset < start {
            start = dictionaryOffset
        }
        let length = metadata.totalCompressedSize
        guard start >= 4, length >= 0, start <= Int64(dataEnd), length <= Int64(dataEnd) - start else {
            throw ParquetError.corrupt("column chunk at \(start)+\(length) lies outside the file's data")
        }
        guard length <= Int64(limits.maxColumnChunkBytes) else {
            throw ParquetError(
                .limitExceeded, "column chunk of \(length) bytes is over the limit of \(limits.maxColumnChunkBytes)")
        }
        let bytes = try file.read(offset: Int(start), count: Int(length))
        var decoder = ColumnChunkDecoder(plan: plan, metadata: metadata, limits: limits)
        var assembler = RecordAssembler(shape: plan.shape, chunk: try decoder.decode(bytes))
        return try assembler.assemble(rowCount: Int(group.rowCount))
    }

    private static let readableEncodings: Set<Int> = [
        Encoding.plain.rawValue, Encoding.plainDictionary.rawValue, Encoding.rle.rawValue,
        Encoding.rleDictionary.rawValue, Encoding.bitPacked.rawValue,
    ]
}
