// Enumerations of the Parquet format (parquet.thrift) with the names its documentation uses, so errors
// can say "encoding DELTA_BINARY_PACKED" or "codec LZ4".

/// A physical type.
enum PhysicalType: Int, Sendable {
    case boolean = 0
    case int32 = 1
    case int64 = 2
    case int96 = 3
    case float = 4
    case double = 5
    case byteArray = 6
    case fixedLenByteArray = 7

    static func name(_ raw: Int) -> String {
        let names = ["BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"]
        return names.indices.contains(raw) ? names[raw] : "type \(raw)"
    }
}

/// A field's repetition.
enum Repetition: Int, Sendable {
    case required = 0
    case optional = 1
    case repeated = 2
}

/// A page or level encoding.
enum Encoding: Int, Sendable {
    case plain = 0
    case plainDictionary = 2
    case rle = 3
    case bitPacked = 4
    case deltaBinaryPacked = 5
    case deltaLengthByteArray = 6
    case deltaByteArray = 7
    case rleDictionary = 8
    case byteStreamSplit = 9

    static func name(_ raw: Int) -> String {
        switch raw {
        case 0: "PLAIN"
        case 1: "GROUP_VAR_INT"
        case 2: "PLAIN_DICTIONARY"
        case 3: "RLE"
        case 4: "BIT_PACKED"
        case 5: "DELTA_BINARY_PACKED"
        case 6: "DELTA_LENGTH_BYTE_ARRAY"
        case 7: "DELTA_BYTE_ARRAY"
        case 8: "RLE_DICTIONARY"
        case 9: "BYTE_STREAM_SPLIT"
        default: "encoding \(raw)"
        }
    }
}

/// A compression codec.
enum CompressionCodec: Int, Sendable {
    case uncompressed = 0
    case snappy = 1
    case gzip = 2
    case lzo = 3
    case brotli = 4
    case lz4 = 5
    case zstd = 6
    case lz4Raw = 7

    static func name(_ raw: Int) -> String {
        let names = ["UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"]
        return names.indices.contains(raw) ? names[raw] : "codec \(raw)"
    }
}

/// A page type.
enum PageType: Int, Sendable {
    case dataPage = 0
    case indexPage = 1
    case dictionaryPage = 2
    case dataPageV2 = 3
}

/// The converted types (the older annotations) this implementation looks at.
enum ConvertedType {
    static let utf8 = 0
    static let map = 1
    static let mapKeyValue = 2
    static let list = 3
    static let enumeration = 4
    static let json = 19
}

/// The fields of the LogicalType union this implementation looks at.
enum LogicalTypeField {
    static let string: Int16 = 1
    static let map: Int16 = 2
    static let list: Int16 = 3
    static let enumeration: Int16 = 4
    static let json: Int16 = 12
}
