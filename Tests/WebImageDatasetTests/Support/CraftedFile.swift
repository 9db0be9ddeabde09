import Foundation

@testable import WebImageDataset

/// Hand-made Parquet files: one row group of one column chunk, with whatever pages and metadata a test
/// wants, to reach the reader's checks that well-formed files never trigger.
struct CraftedFile {
    var schema: [SchemaElement]
    var physicalType: PhysicalType
    var path: [String]
    var codec = CompressionCodec.uncompressed
    var pages: [(header: PageHeader, body: [UInt8])] = []
    var valueCount: Int64
    var rowCount: Int64

    /// An optional INT32 column `x`.
    static func optionalInt32(rows: Int64) -> CraftedFile {
        CraftedFile(
            schema: [
                SchemaElement(name: "schema", childCount: 1),
                SchemaElement(type: PhysicalType.int32.rawValue, repetition: Repetition.optional.rawValue, name: "x"),
            ], physicalType: .int32, path: ["x"], valueCount: rows, rowCount: rows)
    }

    /// A required INT32 column `x`.
    static func requiredInt32(rows: Int64) -> CraftedFile {
        var file = optionalInt32(rows: rows)
        file.schema[1].repetition = Repetition.required.rawValue
        return file
    }

    /// An optional LIST `l` of required INT32 elements (levels: repetition up to 1, definition up to 2).
    static func optionalList(values: Int64, rows: Int64) -> CraftedFile {
        CraftedFile(
            schema: [
                SchemaElement(name: "schema", childCount: 1),
                SchemaElement(
                    repetition: Repetition.optional.rawValue, name: "l", childCount: 1,
                    convertedType: ConvertedType.list),
                SchemaElement(repetition: Repetition.repeated.rawValue, name: "list", childCount: 1),
                SchemaElement(
                    type: PhysicalType.int32.rawValue, repetition: Repetition.required.rawValue, name: "element"),
            ], physicalType: .int32, path: ["l", "list", "element"], valueCount: values, rowCount: rows)
    }

    /// A data page v1 header for `body` with `values` values.
    static func dataPage(_ body: [UInt8], values: Int, encoding: Encoding = .plain) -> (PageHeader, [UInt8]) {
        var header = PageHeader()
        header.type = PageType.dataPage.rawValue
        header.uncompressedSize = body.count
        header.compressedSize = body.count
        header.dataPage = DataPageHeader(
            valueCount: values, encoding: encoding.rawValue, definitionLevelEncoding: Encoding.rle.rawValue,
            repetitionLevelEncoding: Encoding.rle.rawValue)
        return (header, body)
    }

    /// A data page v2 with `repetition` and `definition` levels (no length prefixes) and uncompressed values.
    static func dataPageV2(
        repetition: [UInt8] = [], definition: [UInt8], values: [UInt8], count: Int, nulls: Int, rows: Int
    ) -> (PageHeader, [UInt8]) {
        let body = repetition + definition + values
        var header = PageHeader()
        header.type = PageType.dataPageV2.rawValue
        header.uncompressedSize = body.count
        header.compressedSize = body.count
        header.dataPageV2 = DataPageHeaderV2(
            valueCount: count, nullCount: nulls, rowCount: rows, encoding: Encoding.plain.rawValue,
            definitionLevelsLength: definition.count, repetitionLevelsLength: repetition.count, isCompressed: false)
        return (header, body)
    }

    /// A PLAIN dictionary page header for `body` with `values` values.
    static func dictionaryPage(_ body: [UInt8], values: Int) -> (PageHeader, [UInt8]) {
        var header = PageHeader()
        header.type = PageType.dictionaryPage.rawValue
        header.uncompressedSize = body.count
        header.compressedSize = body.count
        header.dictionaryPage = DictionaryPageHeader(valueCount: values, encoding: Encoding.plain.rawValue)
        return (header, body)
    }

    /// v1 levels: the four-byte length, then `runs`.
    static func levels(_ runs: [UInt8]) -> [UInt8] {
        [UInt8(runs.count), 0, 0, 0] + runs
    }

    /// The file's bytes.
    var bytes: [UInt8] {
        var bytes = Array("PAR1".utf8)
        let start = bytes.count
        for page in pages {
            var writer = ThriftCompactWriter()
            page.header.write(&writer)
            bytes += writer.bytes + page.body
        }
        var metadata = ColumnMetadata()
        metadata.type = physicalType.rawValue
        metadata.encodings = [Encoding.plain.rawValue, Encoding.rle.rawValue]
        metadata.path = path
        metadata.codec = codec.rawValue
        metadata.valueCount = valueCount
        metadata.totalUncompressedSize = Int64(bytes.count - start)
        metadata.totalCompressedSize = Int64(bytes.count - start)
        metadata.dataPageOffset = Int64(start)
        var footer = FileMetadata()
        footer.version = 1
        footer.schema = schema
        footer.rowCount = rowCount
        footer.rowGroups = [RowGroup(columns: [ColumnChunk(filePath: nil, metadata: metadata)], rowCount: rowCount)]
        var writer = ThriftCompactWriter()
        footer.write(&writer)
        return bytes + Self.footer(writer.bytes)
    }

    /// `metadata`, its little-endian length and the closing magic.
    static func footer(_ metadata: [UInt8]) -> [UInt8] {
        let length = UInt32(metadata.count)
        return metadata + (0..<4).map { UInt8(truncatingIfNeeded: length >> (8 * UInt32($0))) } + Array("PAR1".utf8)
    }

    /// A reader of `bytes` (written to a temporary file, removed once open: the reader keeps its descriptor).
    static func reader(_ bytes: [UInt8]) throws -> ParquetReader {
        let url = SampleTable.temporaryFile("crafted.parquet")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try ParquetReader(path: url.path)
    }

    /// Writes `bytes` to a temporary file, opens it and reads every row group; the error is the test's.
    @discardableResult
    static func read(_ bytes: [UInt8], limits: ParquetLimits = ParquetLimits()) throws -> [ParquetRowGroup] {
        let url = SampleTable.temporaryFile("crafted.parquet")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let reader = try ParquetReader(path: url.path, limits: limits)
        return try (0..<reader.rowGroupCount).map { try reader.readRowGroup($0) }
    }
}
