/// A writer of the Thrift compact protocol (the subset Parquet's metadata uses).
struct ThriftCompactWriter {
    /// The bytes written so far.
    private(set) var bytes: [UInt8] = []
    private var lastFieldIDs: [Int16] = [0]

    mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private mutating func writeZigZag(_ value: Int64) {
        writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    private mutating func fieldHeader(_ id: Int16, _ type: ThriftType) {
        let last = lastFieldIDs[lastFieldIDs.count - 1]
        let delta = Int(id) - Int(last)
        if delta > 0 && delta <= 15 {
            bytes.append(UInt8(delta) << 4 | type.rawValue)
        } else {
            bytes.append(type.rawValue)
            writeZigZag(Int64(id))
        }
        lastFieldIDs[lastFieldIDs.count - 1] = id
    }

    /// An integer field written as i32 (the caller keeps it in range).
    mutating func i32(_ id: Int16, _ value: Int) {
        fieldHeader(id, .i32)
        writeZigZag(Int64(value))
    }

    /// An i64 field.
    mutating func i64(_ id: Int16, _ value: Int64) {
        fieldHeader(id, .i64)
        writeZigZag(value)
    }

    /// A boolean field.
    mutating func bool(_ id: Int16, _ value: Bool) {
        fieldHeader(id, value ? .boolTrue : .boolFalse)
    }

    /// A string field.
    mutating func string(_ id: Int16, _ value: String) {
        fieldHeader(id, .binary)
        writeVarint(UInt64(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    /// A struct field whose fields `body` writes (the stop byte is added).
    mutating func structField(_ id: Int16, _ body: (inout ThriftCompactWriter) -> Void) {
        fieldHeader(id, .struct)
        writeStruct(body)
    }

    /// A struct's fields and its stop byte (a struct value in a list, or the top-level struct).
    mutating func writeStruct(_ body: (inout ThriftCompactWriter) -> Void) {
        lastFieldIDs.append(0)
        body(&self)
        bytes.append(ThriftType.stop.rawValue)
        lastFieldIDs.removeLast()
    }

    /// A list field header for `count` elements of `type`; the caller writes the elements.
    mutating func listField(_ id: Int16, _ type: ThriftType, count: Int) {
        fieldHeader(id, .list)
        if count < 15 {
            bytes.append(UInt8(count) << 4 | type.rawValue)
        } else {
            bytes.append(0xF0 | type.rawValue)
            writeVarint(UInt64(count))
        }
    }

    /// An i32 list element.
    mutating func i32Element(_ value: Int) { writeZigZag(Int64(value)) }

    /// A string list element.
    mutating func stringElement(_ value: String) {
        writeVarint(UInt64(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }
}
