/// parquet.thrift's FileMetaData, with the fields the reader uses.
struct FileMetadata: Sendable {
    var version = 0
    var schema: [SchemaElement] = []
    var rowCount: Int64 = 0
    var rowGroups: [RowGroup] = []
    var createdBy: String?

    static func read(_ reader: inout ThriftCompactReader) throws -> FileMetadata {
        var result = FileMetadata()
        var seen = Set<Int16>()
        try reader.readStruct { reader, id, type in
            seen.insert(id)
            switch id {
            case 1: result.version = try reader.readInt32(type)
            case 2: result.schema = try reader.readStructList(type, SchemaElement.read)
            case 3: result.rowCount = Int64(try reader.readInt(type))
            case 4: result.rowGroups = try reader.readStructList(type, RowGroup.read)
            case 6 where type == .binary: result.createdBy = try reader.readString()
            default: return false
            }
            return true
        }
        guard seen.isSuperset(of: [2, 3, 4]) else { throw ParquetError.corrupt("footer misses required fields") }
        return result
    }
}

/// parquet.thrift's SchemaElement.
struct SchemaElement: Sendable {
    var type: Int?
    var typeLength: Int?
    var repetition: Int?
    var name = ""
    var childCount: Int?
    var convertedType: Int?
    /// The LogicalType union's field id, if set.
    var logicalType: Int16?

    static func read(_ reader: inout ThriftCompactReader) throws -> SchemaElement {
        var result = SchemaElement()
        var hasName = false
        try reader.readStruct { reader, id, type in
            switch id {
            case 1: result.type = try reader.readInt32(type)
            case 2: result.typeLength = try reader.readInt32(type)
            case 3: result.repetition = try reader.readInt32(type)
            case 4 where type == .binary:
                result.name = try reader.readString()
                hasName = true
            case 5: result.childCount = try reader.readInt32(type)
            case 6: result.convertedType = try reader.readInt32(type)
            case 10 where type == .struct:
                try reader.readStruct { reader, unionID, unionType in
                    result.logicalType = unionID
                    try reader.skip(unionType)
                    return true
                }
            default: return false
            }
            return true
        }
        guard hasName else { throw ParquetError.corrupt("schema element without a name") }
        return result
    }
}

/// parquet.thrift's RowGroup.
struct RowGroup: Sendable {
    var columns: [ColumnChunk] = []
    var rowCount: Int64 = 0

    static func read(_ reader: inout ThriftCompactReader) throws -> RowGroup {
        var result = RowGroup()
        var seen = Set<Int16>()
        try reader.readStruct { reader, id, type in
            seen.insert(id)
            switch id {
            case 1: result.columns = try reader.readStructList(type, ColumnChunk.read)
            case 3: result.rowCount = Int64(try reader.readInt(type))
            default: return false
            }
            return true
        }
        guard seen.isSuperset(of: [1, 3]) else { throw ParquetError.corrupt("row group misses required fields") }
        guard result.rowCount >= 0 else { throw ParquetError.corrupt("row group has \(result.rowCount) rows") }
        return result
    }
}

/// parquet.thrift's ColumnChunk.
struct ColumnChunk: Sendable {
    var filePath: String?
    var metadata: ColumnMetadata?

    static func read(_ reader: inout ThriftCompactReader) throws -> ColumnChunk {
        var result = ColumnChunk()
        try reader.readStruct { reader, id, type in
            switch id {
            case 1 where type == .binary: result.filePath = try reader.readString()
            case 3 where type == .struct: result.metadata = try ColumnMetadata.read(&reader)
            case 9: throw ParquetError.unsupported("encrypted column metadata is not supported")
            default: return false
            }
            return true
        }
        // Without it the chunk cannot be read; refusing it here also keeps a footer of empty structs from
        // making many times its size in memory.
        guard result.metadata != nil else { throw ParquetError.corrupt("column chunk without metadata") }
        return result
    }
}

/// parquet.thrift's ColumnMetaData.
struct ColumnMetadata: Sendable {
    var type = 0
    var encodings: [Int] = []
    var path: [String] = []
    var codec = 0
    var valueCount: Int64 = 0
    var totalUncompressedSize: Int64 = 0
    var totalCompressedSize: Int64 = 0
    var dataPageOffset: Int64 = 0
    var dictionaryPageOffset: Int64?

    static func read(_ reader: inout ThriftCompactReader) throws -> ColumnMetadata {
        var result = ColumnMetadata()
        var seen = Set<Int16>()
        try reader.readStruct { reader, id, type in
            seen.insert(id)
            switch id {
            case 1: result.type = try reader.readInt32(type)
            case 2: result.encodings = try reader.readIntList(type)
            case 3 where type == .list: result.path = try reader.readList(.binary) { try $0.readString() }
            case 4: result.codec = try reader.readInt32(type)
            case 5: result.valueCount = Int64(try reader.readInt(type))
            case 6: result.totalUncompressedSize = Int64(try reader.readInt(type))
            case 7: result.totalCompressedSize = Int64(try reader.readInt(type))
            case 9: result.dataPageOffset = Int64(try reader.readInt(type))
            case 11: result.dictionaryPageOffset = Int64(try reader.readInt(type))
            default: return false
            }
            return true
        }
        guard seen.isSuperset(of: [1, 3, 4, 5, 7, 9]) else {
            throw ParquetError.corrupt("column metadata misses required fields")
        }
        return result
    }
}
