/// parquet.thrift's PageHeader with its data, dictionary and data v2 headers.
struct PageHeader: Sendable {
    var type = 0
    var uncompressedSize = 0
    var compressedSize = 0
    var dataPage: DataPageHeader?
    var dictionaryPage: DictionaryPageHeader?
    var dataPageV2: DataPageHeaderV2?

    static func read(_ reader: inout ThriftCompactReader) throws -> PageHeader {
        var result = PageHeader()
        var seen = Set<Int16>()
        try reader.readStruct { reader, id, type in
            seen.insert(id)
            switch id {
            case 1: result.type = try reader.readInt32(type)
            case 2: result.uncompressedSize = try reader.readInt32(type)
            case 3: result.compressedSize = try reader.readInt32(type)
            case 5 where type == .struct: result.dataPage = try DataPageHeader.read(&reader)
            case 7 where type == .struct: result.dictionaryPage = try DictionaryPageHeader.read(&reader)
            case 8 where type == .struct: result.dataPageV2 = try DataPageHeaderV2.read(&reader)
            default: return false
            }
            return true
        }
        guard seen.isSuperset(of: [1, 2, 3]) else { throw ParquetError.corrupt("page header misses required fields") }
        guard result.uncompressedSize >= 0, result.compressedSize >= 0 else {
            throw ParquetError.corrupt("page header has a negative size")
        }
        return result
    }
}

/// parquet.thrift's DataPageHeader.
struct DataPageHeader: Sendable {
    var valueCount = 0
    var encoding = 0
    var definitionLevelEncoding = 0
    var repetitionLevelEncoding = 0

    static func read(_ reader: inout ThriftCompactReader) throws -> DataPageHeader {
        var result = DataPageHeader()
        var seen = Set<Int16>()
        try reader.readStruct { reader, id, type in
            seen.insert(id)
            switch id {
            case 1: result.valueCount = try reader.readInt32(type)
            case 2: result.encoding = try reader.readInt32(type)
            case 3: result.definitionLevelEncoding = try reader.readInt32(type)
            case 4: result.repetitionLevelEncoding = try reader.readInt32(type)
            default: return false
            }
            return true
        }
        guard seen.isSuperset(of: [1, 2, 3, 4]) else { throw ParquetError.corrupt("data page header is incomplete") }
        guard result.valueCount >= 0 else { throw ParquetError.corrupt("data page has a negative value count") }
        return result
    }
}

/// parquet.thrift's DictionaryPageHeader.
struct DictionaryPageHeader: Sendable {
    var valueCount = 0
    var encoding = 0

    static func read(_ reader: inout ThriftCompactReader) throws -> DictionaryPageHeader {
        var result = DictionaryPageHeader()
        var seen = Set<Int16>()
        try reader.readStruct { reader, id, type in
            seen.insert(id)
            switch id {
            case 1: result.valueCount = try reader.readInt32(type)
            case 2: result.encoding = try reader.readInt32(type)
            default: return false
            }
            return true
        }
        guard seen.isSuperset(of: [1, 2]) else { throw ParquetError.corrupt("dictionary page header is incomplete") }
        guard result.valueCount >= 0 else { throw ParquetError.corrupt("dictionary page has a negative value count") }
        return result
    }
}

/// parquet.thrift's DataPageHeaderV2.
struct DataPageHeaderV2: Sendable {
    var valueCount = 0
    var nullCount = 0
    var rowCount = 0
    var encoding = 0
    var definitionLevelsLength = 0
    var repetitionLevelsLength = 0
    var isCompressed = true

    static func read(_ reader: inout ThriftCompactReader) throws -> DataPageHeaderV2 {
        var result = DataPageHeaderV2()
        var seen = Set<Int16>()
        try reader.readStruct { reader, id, type in
            seen.insert(id)
            switch id {
            case 1: result.valueCount = try reader.readInt32(type)
            case 2: result.nullCount = try reader.readInt32(type)
            case 3: result.rowCount = try reader.readInt32(type)
            case 4: result.encoding = try reader.readInt32(type)
            case 5: result.definitionLevelsLength = try reader.readInt32(type)
            case 6: result.repetitionLevelsLength = try reader.readInt32(type)
            case 7: result.isCompressed = try reader.readBool(type)
            default: return false
            }
            return true
        }
        guard seen.isSuperset(of: [1, 2, 3, 4, 5, 6]) else {
            throw ParquetError.corrupt("data page v2 header is incomplete")
        }
        guard result.valueCount >= 0, result.definitionLevelsLength >= 0, result.repetitionLevelsLength >= 0 else {
            throw ParquetError.corrupt("data page v2 header has a negative count or length")
        }
        return result
    }
}
