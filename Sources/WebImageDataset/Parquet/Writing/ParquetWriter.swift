/// Writes a Parquet file row group by row group: PLAIN encoding, SNAPPY compression, data pages v1.
///
/// Columns may be nullable and of type bool, int32, int64, float, double, string and bytes, or lists
/// (also lists of lists) of those. pyarrow, Spark and this package's ``ParquetReader`` read the result.
/// The footer is written by ``close()``: a file whose writer was never closed is not valid Parquet.
/// A row group is encoded in memory before it is written, so a refused value leaves the file as it was.
///
/// ```swift
/// let schema = ParquetSchema(columns: [
///     ParquetColumn(name: "url", type: .string, isNullable: false),
///     ParquetColumn(name: "width", type: .int64, isNullable: true),
/// ])
/// let writer = try ParquetWriter(path: "out.parquet", schema: schema)
/// try writer.writeRowGroup([[.string("https://example.com/a.jpg")], [.int64(640)]])
/// try writer.close()
/// ```
public final class ParquetWriter {
    /// The columns every row group holds.
    public let schema: ParquetSchema
    /// At most this many rows go into one page. 10,000 (``defaultRowsPerPage``) by default.
    public let rowsPerPage: Int

    /// The default of ``rowsPerPage``.
    public static let defaultRowsPerPage = 10_000

    private let file: ParquetOutputFile
    private var rowGroups: [RowGroup] = []
    private var rowCount: Int64 = 0
    private var closed = false

    /// Creates (or truncates) the file at `path` for rows of `schema`.
    ///
    /// - Throws: ``ParquetError`` if a column's type cannot be written or the file cannot be created.
    public init(path: String, schema: ParquetSchema, rowsPerPage: Int = defaultRowsPerPage) throws {
        for column in schema.columns {
            _ = try ColumnEncoder(column: column)
        }
        guard rowsPerPage > 0 else { throw ParquetError(.invalidArgument, "rowsPerPage must be positive") }
        self.schema = schema
        self.rowsPerPage = rowsPerPage
        self.file = try ParquetOutputFile(path: path)
        try file.write(Array("PAR1".utf8))
    }

    /// Writes one row group; `columns` holds one array per schema column, all of the same length.
    ///
    /// - Throws: ``ParquetError`` with kind ``ParquetError/Kind/invalidArgument`` (naming the column) if a
    ///   value does not fit its column, or kind ``ParquetError/Kind/io`` if the file cannot be written.
    public func writeRowGroup(_ columns: [[ParquetValue]]) throws {
        guard !closed else { throw ParquetError(.invalidArgument, "the writer is closed") }
        guard columns.count == schema.columns.count else {
            throw ParquetError(
                .invalidArgument, "\(columns.count) columns given, the schema has \(schema.columns.count)")
        }
        let rows = columns.first?.count ?? 0
        // Every column is encoded before anything is written, so a refused value leaves the file as it was.
        var chunks: [ParquetColumnChunkBuilder] = []
        for (column, values) in zip(schema.columns, columns) {
            guard values.count == rows else {
                throw ParquetError(
                    .invalidArgument, "\(values.count) values, the first column has \(rows)", column: column.name)
            }
            var chunk = try ParquetColumnChunkBuilder(column: column, rowsPerPage: rowsPerPage)
            for value in values { try chunk.append(value) }
            chunks.append(chunk)
        }
        try writeRowGroup(chunks: chunks)
    }

    /// Writes one row group of column chunks built beforehand (one per schema column, in its order, all of
    /// the same row count and with this writer's ``rowsPerPage``): what ``writeRowGroup(_:)`` writes for
    /// the same values. The chunks are taken, so their last pages are added without copying the others.
    func writeRowGroup(chunks built: consuming [ParquetColumnChunkBuilder]) throws {
        guard !closed else { throw ParquetError(.invalidArgument, "the writer is closed") }
        guard built.count == schema.columns.count,
            zip(built, schema.columns).allSatisfy({ $0.column == $1 && $0.rowsPerPage == rowsPerPage })
        else {
            throw ParquetError(.invalidArgument, "the column chunks are not the schema's columns")
        }
        let rows = built.first?.rowCount ?? 0
        var encoded: [ParquetColumnChunkBuilder.Chunk] = []
        for index in built.indices {
            guard built[index].rowCount == rows else {
                throw ParquetError(
                    .invalidArgument, "\(built[index].rowCount) values, the first column has \(rows)",
                    column: built[index].column.name)
            }
            encoded.append(try built[index].finish())
        }
        var chunks: [ColumnChunk] = []
        for (column, chunk) in zip(schema.columns, encoded) {
            var metadata = ColumnMetadata()
            metadata.type = ColumnEncoder.physicalType(column.type.leafType)?.rawValue ?? 0
            metadata.encodings = [Encoding.plain.rawValue, Encoding.rle.rawValue]
            metadata.path = Self.path(column)
            metadata.codec = CompressionCodec.snappy.rawValue
            metadata.valueCount = Int64(chunk.valueCount)
            metadata.totalUncompressedSize = Int64(chunk.uncompressedSize)
            metadata.totalCompressedSize = Int64(chunk.compressedSize)
            metadata.dataPageOffset = Int64(file.offset)
            try chunk.spill?.copy(to: file)
            try file.write(chunk.pages)
            chunks.append(ColumnChunk(filePath: nil, metadata: metadata))
        }
        rowGroups.append(RowGroup(columns: chunks, rowCount: Int64(rows)))
        rowCount += Int64(rows)
    }

    /// Writes the footer and closes the file; the writer takes no more row groups.
    public func close() throws {
        guard !closed else { return }
        closed = true
        var metadata = FileMetadata()
        metadata.version = 1
        metadata.schema = schemaElements()
        metadata.rowCount = rowCount
        metadata.rowGroups = rowGroups
        metadata.createdBy = "WebImageDataset"
        var writer = ThriftCompactWriter()
        metadata.write(&writer)
        let footer = writer.bytes
        let length = UInt32(footer.count)
        try file.write(
            footer + (0..<4).map { UInt8(truncatingIfNeeded: length >> (8 * UInt32($0))) } + Array("PAR1".utf8))
        try file.close()
    }

    /// The leaf's path: the column name, then `list.element` per list level.
    private static func path(_ column: ParquetColumn) -> [String] {
        var path = [column.name]
        var type = column.type
        while case .list(let element, _) = type {
            path += ["list", "element"]
            type = element
        }
        return path
    }

    private func schemaElements() -> [SchemaElement] {
        var elements = [SchemaElement(name: "schema", childCount: schema.columns.count)]
        for column in schema.columns {
            Self.appendElements(name: column.name, type: column.type, nullable: column.isNullable, to: &elements)
        }
        return elements
    }

    private static func appendElements(
        name: String, type: ParquetColumnType, nullable: Bool, to elements: inout [SchemaElement]
    ) {
        let repetition = (nullable ? Repetition.optional : Repetition.required).rawValue
        if case .list(let element, let elementNullable) = type {
            elements.append(
                SchemaElement(
                    repetition: repetition, name: name, childCount: 1, convertedType: ConvertedType.list,
                    logicalType: LogicalTypeField.list))
            elements.append(SchemaElement(repetition: Repetition.repeated.rawValue, name: "list", childCount: 1))
            appendElements(name: "element", type: element, nullable: elementNullable, to: &elements)
            return
        }
        let isString = type == .string
        elements.append(
            SchemaElement(
                type: ColumnEncoder.physicalType(type)?.rawValue, repetition: repetition, name: name,
                convertedType: isString ? ConvertedType.utf8 : nil,
                logicalType: isString ? LogicalTypeField.string : nil))
    }
}
