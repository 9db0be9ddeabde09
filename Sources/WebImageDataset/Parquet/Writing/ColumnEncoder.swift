import CSnappy

/// Encodes one column's values of some rows into a PLAIN, SNAPPY-compressed data page (v1).
struct ColumnEncoder {
    let column: ParquetColumn
    let physicalType: PhysicalType
    let shape: LevelShape
    let maxDefinitionLevel: Int
    let maxRepetitionLevel: Int

    private var repetitionLevels: [UInt32] = []
    private var definitionLevels: [UInt32] = []
    private var values: [UInt8] = []
    private var bitBuffer: UInt8 = 0
    private var bitCount = 0
    private var slotCount = 0

    /// The encoded values waiting for the next page, in bytes (levels not counted).
    var pendingValueBytes: Int { values.count }

    init(column: ParquetColumn) throws {
        self.column = column
        (shape, maxDefinitionLevel, maxRepetitionLevel) = Self.shape(
            column.type, nullable: column.isNullable, definition: 0, repetition: 0)
        guard let physical = Self.physicalType(column.type.leafType) else {
            throw ParquetError(.invalidArgument, "type \(column.type) cannot be written", column: column.name)
        }
        physicalType = physical
    }

    static func physicalType(_ type: ParquetColumnType) -> PhysicalType? {
        switch type {
        case .bool: .boolean
        case .int32: .int32
        case .int64: .int64
        case .float: .float
        case .double: .double
        case .string, .bytes: .byteArray
        case .list, .unsupported: nil
        }
    }

    private static func shape(
        _ type: ParquetColumnType, nullable: Bool, definition: Int, repetition: Int
    ) -> (LevelShape, Int, Int) {
        let level = definition + (nullable ? 1 : 0)
        guard case .list(let element, let elementNullable) = type else {
            return (.leaf(definedLevel: level), level, repetition)
        }
        let (inner, maxDefinition, maxRepetition) = shape(
            element, nullable: elementNullable, definition: level + 1, repetition: repetition + 1)
        return (
            .list(
                nullable: nullable, presentLevel: level, elementsLevel: level + 1, repetitionLevel: repetition + 1,
                element: inner),
            maxDefinition, maxRepetition
        )
    }

    // MARK: - Shredding

    /// Adds one row's value.
    mutating func append(_ value: ParquetValue) throws {
        try shred(value, shape, parentDefinition: 0, repetition: 0)
    }

    private mutating func shred(
        _ value: ParquetValue, _ shape: LevelShape, parentDefinition: Int, repetition: Int
    ) throws {
        switch shape {
        case .leaf(let definedLevel):
            if value.isNull {
                guard definedLevel > parentDefinition else {
                    throw ParquetError(.invalidArgument, "null in a required field", column: column.name)
                }
                addSlot(repetition, definedLevel - 1)
                return
            }
            try appendValue(value)
            addSlot(repetition, definedLevel)
        case .list(let nullable, let presentLevel, let elementsLevel, let repetitionLevel, let element):
            switch value {
            case .null:
                guard nullable else {
                    throw ParquetError(.invalidArgument, "null in a required list", column: column.name)
                }
                addSlot(repetition, presentLevel - 1)
            case .list(let items) where items.isEmpty:
                addSlot(repetition, presentLevel)
            case .list(let items):
                for (index, item) in items.enumerated() {
                    try shred(
                        item, element, parentDefinition: elementsLevel,
                        repetition: index == 0 ? repetition : repetitionLevel)
                }
            default:
                throw ParquetError(.invalidArgument, "\(value) where the schema has a list", column: column.name)
            }
        }
    }

    private mutating func addSlot(_ repetition: Int, _ definition: Int) {
        if maxRepetitionLevel > 0 { repetitionLevels.append(UInt32(repetition)) }
        if maxDefinitionLevel > 0 { definitionLevels.append(UInt32(definition)) }
        slotCount += 1
    }

    private mutating func appendValue(_ value: ParquetValue) throws {
        switch (physicalType, value) {
        case (.boolean, .bool(let flag)):
            bitBuffer |= (flag ? 1 : 0) << UInt8(bitCount)
            bitCount += 1
            if bitCount == 8 { flushBits() }
        case (.int32, .int32(let number)): appendLittleEndian(UInt64(UInt32(bitPattern: number)), 4)
        case (.int64, .int64(let number)): appendLittleEndian(UInt64(bitPattern: number), 8)
        case (.float, .float(let number)): appendLittleEndian(UInt64(number.bitPattern), 4)
        case (.double, .double(let number)): appendLittleEndian(number.bitPattern, 8)
        case (.byteArray, .string(let text)) where column.type.leafType == .string:
            appendLittleEndian(UInt64(text.utf8.count), 4)
            values.append(contentsOf: text.utf8)
        case (.byteArray, .bytes(let bytes)) where column.type.leafType == .bytes:
            appendLittleEndian(UInt64(bytes.count), 4)
            values.append(contentsOf: bytes)
        default:
            throw ParquetError(
                .invalidArgument, "\(value) does not fit the column's type \(column.type)", column: column.name)
        }
    }

    private mutating func appendLittleEndian(_ value: UInt64, _ width: Int) {
        for index in 0..<width { values.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    private mutating func flushBits() {
        values.append(bitBuffer)
        bitBuffer = 0
        bitCount = 0
    }

    // MARK: - Pages

    /// The page (header and compressed body) of the values added since the last page, with its sizes.
    mutating func page() throws -> (bytes: [UInt8], uncompressedSize: Int, valueCount: Int) {
        if bitCount > 0 { flushBits() }
        var body: [UInt8] = []
        if maxRepetitionLevel > 0 { Self.appendLevels(repetitionLevels, maxLevel: maxRepetitionLevel, to: &body) }
        if maxDefinitionLevel > 0 { Self.appendLevels(definitionLevels, maxLevel: maxDefinitionLevel, to: &body) }
        body.append(contentsOf: values)
        guard body.count <= Int(Int32.max) else {
            throw ParquetError(.invalidArgument, "a page of \(body.count) bytes is too large", column: column.name)
        }
        let compressed = try Self.snappy(body)
        var header = PageHeader()
        header.type = PageType.dataPage.rawValue
        header.uncompressedSize = body.count
        header.compressedSize = compressed.count
        header.dataPage = DataPageHeader(
            valueCount: slotCount, encoding: Encoding.plain.rawValue, definitionLevelEncoding: Encoding.rle.rawValue,
            repetitionLevelEncoding: Encoding.rle.rawValue)
        var writer = ThriftCompactWriter()
        header.write(&writer)
        let valueCount = slotCount
        repetitionLevels.removeAll(keepingCapacity: true)
        definitionLevels.removeAll(keepingCapacity: true)
        values.removeAll(keepingCapacity: true)
        slotCount = 0
        return (writer.bytes + compressed, writer.bytes.count + body.count, valueCount)
    }

    /// v1 levels: a four-byte length, then RLE runs (the hybrid encoding without bit-packed runs).
    private static func appendLevels(_ levels: [UInt32], maxLevel: Int, to body: inout [UInt8]) {
        let byteWidth = (RLEHybridDecoder.bitWidth(forMax: maxLevel) + 7) / 8
        var runs: [UInt8] = []
        var index = 0
        while index < levels.count {
            var end = index + 1
            while end < levels.count && levels[end] == levels[index] { end += 1 }
            var header = UInt64(end - index) << 1
            while header >= 0x80 {
                runs.append(UInt8(truncatingIfNeeded: header) | 0x80)
                header >>= 7
            }
            runs.append(UInt8(header))
            for byte in 0..<byteWidth { runs.append(UInt8(truncatingIfNeeded: levels[index] >> (8 * UInt32(byte)))) }
            index = end
        }
        let count = UInt32(runs.count)
        for byte in 0..<4 { body.append(UInt8(truncatingIfNeeded: count >> (8 * UInt32(byte)))) }
        body.append(contentsOf: runs)
    }

    private static func snappy(_ input: [UInt8]) throws -> [UInt8] {
        var length = snappy_max_compressed_length(input.count)
        var output = [UInt8](repeating: 0, count: length)
        let status = input.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { target in
                snappy_compress(
                    source.baseAddress?.assumingMemoryBound(to: CChar.self), input.count,
                    target.baseAddress?.assumingMemoryBound(to: CChar.self), &length)
            }
        }
        guard status == SNAPPY_OK else { throw ParquetError(.io, "Snappy compression failed (\(status.rawValue))") }
        output.removeSubrange(length...)
        return output
    }
}
