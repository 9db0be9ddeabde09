/// The element and field types of the Thrift compact protocol.
enum ThriftType: UInt8 {
    case stop = 0
    case boolTrue = 1
    case boolFalse = 2
    case byte = 3
    case i16 = 4
    case i32 = 5
    case i64 = 6
    case double = 7
    case binary = 8
    case list = 9
    case set = 10
    case map = 11
    case `struct` = 12
}

/// A bounds-checked reader of the Thrift compact protocol over bytes from a file.
///
/// Every length and count is checked against the bytes left before anything is allocated, and nesting
/// is limited, so hostile input ends in a ``ParquetError`` rather than a crash, a hang or a large
/// allocation.
struct ThriftCompactReader {
    /// Deeper nesting than this is refused (Parquet's own structures nest about five deep).
    static let maxDepth = 32

    private let bytes: [UInt8]
    private let end: Int
    /// The offset of the next byte to read.
    private(set) var position: Int
    private var lastFieldID: Int16 = 0
    private var depth = 0

    /// A reader of `bytes[start..<end]` (`end` defaults to the end of `bytes`).
    init(_ bytes: [UInt8], start: Int = 0, end: Int? = nil) {
        self.bytes = bytes
        self.position = start
        self.end = min(end ?? bytes.count, bytes.count)
    }

    var remaining: Int { end - position }

    // MARK: - Scalars

    mutating func readByte() throws -> UInt8 {
        guard position < end else { throw ParquetError.corrupt("Thrift data ends early") }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func readVarint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try readByte()
            guard shift < 64 else { throw ParquetError.corrupt("Thrift varint is longer than 10 bytes") }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    mutating func readI64() throws -> Int64 {
        let raw = try readVarint()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    mutating func readI32() throws -> Int32 {
        guard let value = Int32(exactly: try readI64()) else {
            throw ParquetError.corrupt("Thrift i32 out of range")
        }
        return value
    }

    mutating func readI16() throws -> Int16 {
        guard let value = Int16(exactly: try readI64()) else {
            throw ParquetError.corrupt("Thrift i16 out of range")
        }
        return value
    }

    mutating func readDouble() throws -> Double {
        guard remaining >= 8 else { throw ParquetError.corrupt("Thrift data ends early") }
        var bits: UInt64 = 0
        for index in 0..<8 { bits |= UInt64(bytes[position + index]) << (8 * UInt64(index)) }
        position += 8
        return Double(bitPattern: bits)
    }

    mutating func readBinary() throws -> ArraySlice<UInt8> {
        let length = try readVarint()
        guard length <= UInt64(remaining) else {
            throw ParquetError.corrupt("Thrift binary length \(length) runs past the data")
        }
        defer { position += Int(length) }
        return bytes[position..<position + Int(length)]
    }

    mutating func readString() throws -> String {
        let raw = try readBinary()
        // Parquet's strings (schema names, metadata) are UTF-8; a bad byte becomes U+FFFD rather than an error
        // because a name is only ever compared and printed.
        return String(decoding: raw, as: UTF8.self)
    }

    // MARK: - Structures

    /// Reads a struct's fields, calling `field` with each id and type; `field` reads the value and returns
    /// `true`, or returns `false` to have it skipped.
    mutating func readStruct(
        _ field: (inout ThriftCompactReader, Int16, ThriftType) throws -> Bool
    ) throws {
        depth += 1
        guard depth <= Self.maxDepth else { throw ParquetError.corrupt("Thrift structures nest too deeply") }
        let savedFieldID = lastFieldID
        lastFieldID = 0
        while true {
            let header = try readByte()
            guard let type = ThriftType(rawValue: header & 0x0F) else {
                throw ParquetError.corrupt("Thrift field type \(header & 0x0F) is not valid")
            }
            if type == .stop { break }
            let delta = Int16(header >> 4)
            let id = delta == 0 ? try readI16() : lastFieldID &+ delta
            lastFieldID = id
            if try !field(&self, id, type) {
                try skip(type, inCollection: false)
            }
        }
        lastFieldID = savedFieldID
        depth -= 1
    }

    /// Reads a list header: the element type and a count already checked against the bytes left (every
    /// element takes at least one byte).
    mutating func readListHeader() throws -> (ThriftType, Int) {
        let header = try readByte()
        var count = UInt64(header >> 4)
        if count == 15 { count = try readVarint() }
        // Some writers give an empty list element type 0.
        guard let type = ThriftType(rawValue: header & 0x0F), type != .stop || count == 0 else {
            throw ParquetError.corrupt("Thrift list element type \(header & 0x0F) is not valid")
        }
        guard count <= UInt64(remaining) else {
            throw ParquetError.corrupt("Thrift list of \(count) elements runs past the data")
        }
        return (type, Int(count))
    }

    /// Reads a list whose elements `element` reads.
    mutating func readList<T>(
        _ expected: ThriftType, _ element: (inout ThriftCompactReader) throws -> T
    ) throws -> [T] {
        let (type, count) = try readListHeader()
        guard type == expected || (expected == .boolTrue && type == .boolFalse) || count == 0 else {
            throw ParquetError.corrupt("Thrift list holds type \(type.rawValue), expected \(expected.rawValue)")
        }
        var result: [T] = []
        // The count is checked against the bytes left, but an element in memory is larger than its one
        // byte on disk; growing as elements are read keeps memory in step with what is really there.
        result.reserveCapacity(min(count, 1024))
        for _ in 0..<count { result.append(try element(&self)) }
        return result
    }

    /// Skips a value of `type`; `inCollection` because a boolean inside a list takes a byte of its own.
    mutating func skip(_ type: ThriftType, inCollection: Bool = false) throws {
        switch type {
        case .stop:
            throw ParquetError.corrupt("Thrift STOP where a value was expected")
        case .boolTrue, .boolFalse:
            if inCollection { _ = try readByte() }
        case .byte:
            _ = try readByte()
        case .i16, .i32, .i64:
            _ = try readVarint()
        case .double:
            _ = try readDouble()
        case .binary:
            _ = try readBinary()
        case .list, .set:
            let (elementType, count) = try readListHeader()
            try nested { reader in
                for _ in 0..<count { try reader.skip(elementType, inCollection: true) }
            }
        case .map:
            let count = try readVarint()
            guard count > 0 else { return }
            guard count <= UInt64(remaining) else {
                throw ParquetError.corrupt("Thrift map of \(count) entries runs past the data")
            }
            let types = try readByte()
            guard let keyType = ThriftType(rawValue: types >> 4), let valueType = ThriftType(rawValue: types & 0x0F)
            else { throw ParquetError.corrupt("Thrift map types \(types) are not valid") }
            try nested { reader in
                for _ in 0..<count {
                    try reader.skip(keyType, inCollection: true)
                    try reader.skip(valueType, inCollection: true)
                }
            }
        case .struct:
            try readStruct { _, _, _ in false }
        }
    }

    private mutating func nested(_ body: (inout ThriftCompactReader) throws -> Void) throws {
        depth += 1
        guard depth <= Self.maxDepth else { throw ParquetError.corrupt("Thrift structures nest too deeply") }
        try body(&self)
        depth -= 1
    }
}

extension ThriftType {
    /// `true` when a field of this type holds an integer the compact protocol writes as a varint.
    var isInteger: Bool { self == .i16 || self == .i32 || self == .i64 || self == .byte }
}

extension ThriftCompactReader {
    /// Reads an integer field of any integer type as `Int`.
    mutating func readInt(_ type: ThriftType) throws -> Int {
        switch type {
        case .byte: return Int(Int8(bitPattern: try readByte()))
        case .i16, .i32, .i64: return Int(try readI64())
        default: throw ParquetError.corrupt("Thrift field of type \(type.rawValue) where an integer was expected")
        }
    }

    /// Reads an integer field that must fit in an Int32 (Parquet's i32 fields).
    mutating func readInt32(_ type: ThriftType) throws -> Int {
        let value = try readInt(type)
        guard Int32(exactly: value) != nil else { throw ParquetError.corrupt("Thrift i32 \(value) out of range") }
        return value
    }

    /// Reads a boolean field (the compact protocol stores it in the field type).
    func readBool(_ type: ThriftType) throws -> Bool {
        switch type {
        case .boolTrue: return true
        case .boolFalse: return false
        default: throw ParquetError.corrupt("Thrift field of type \(type.rawValue) where a boolean was expected")
        }
    }

    /// Reads a list of i32 values (enums).
    mutating func readIntList(_ type: ThriftType) throws -> [Int] {
        guard type == .list || type == .set else { throw ParquetError.corrupt("Thrift field is not a list") }
        let (elementType, count) = try readListHeader()
        var result: [Int] = []
        result.reserveCapacity(min(count, 1024))
        for _ in 0..<count { result.append(try readInt32(elementType)) }
        return result
    }

    /// Reads a list of structs, each with `element`.
    mutating func readStructList<T>(
        _ type: ThriftType, _ element: (inout ThriftCompactReader) throws -> T
    ) throws -> [T] {
        guard type == .list || type == .set else { throw ParquetError.corrupt("Thrift field is not a list") }
        return try readList(.struct, element)
    }
}
