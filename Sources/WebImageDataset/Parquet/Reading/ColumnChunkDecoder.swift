/// The levels and non-null values of one column chunk, before record assembly.
///
/// A dictionary-encoded chunk keeps its dictionary once and a 4-byte index per value, never a
/// ``ParquetValue`` per value: a few kilobytes of RLE runs may stand for 2^25 values.
struct DecodedColumnChunk {
    /// Repetition levels, one per value slot (empty when the column has no repetition).
    var repetitionLevels: [UInt8] = []
    /// Definition levels, one per value slot (empty when the column has no definition levels).
    var definitionLevels: [UInt8] = []
    /// Without a dictionary, the non-null leaf values in order; with one, its entries, then the values of
    /// the chunk's PLAIN pages (a writer falls back to PLAIN when the dictionary grows too large).
    var values: [ParquetValue] = []
    /// With a dictionary, the index in ``values`` of each non-null leaf value, in order; nil without one.
    var indices: [UInt32]?
    /// The number of value slots (levels) read.
    var slotCount = 0

    /// The number of non-null leaf values.
    var valueCount: Int { indices?.count ?? values.count }

    /// The `index`th non-null leaf value (in `0..<valueCount`).
    func value(_ index: Int) -> ParquetValue {
        if let indices { return values[Int(indices[index])] }
        return values[index]
    }
}

/// Decodes the pages of one column chunk: dictionary page, data pages v1 and v2, each codec.
struct ColumnChunkDecoder {
    let plan: ColumnPlan
    let metadata: ColumnMetadata
    let limits: ParquetLimits

    /// The number of dictionary entries (the first of the result's values); nil before a dictionary page.
    private var dictionaryCount: Int?
    private var result = DecodedColumnChunk()

    init(plan: ColumnPlan, metadata: ColumnMetadata, limits: ParquetLimits) {
        self.plan = plan
        self.metadata = metadata
        self.limits = limits
    }

    private var plain: PlainDecoder {
        PlainDecoder(physicalType: plan.physicalType, typeLength: plan.typeLength, isText: plan.isText)
    }

    /// Decodes every page in `bytes` (the whole column chunk).
    mutating func decode(_ bytes: [UInt8]) throws -> DecodedColumnChunk {
        guard metadata.valueCount >= 0, metadata.valueCount <= Int64(limits.maxValuesPerColumnChunk) else {
            throw ParquetError(
                .limitExceeded,
                "\(metadata.valueCount) values exceed the limit of \(limits.maxValuesPerColumnChunk) per column chunk")
        }
        let expected = Int(metadata.valueCount)
        if plan.maxRepetitionLevel > 0 { result.repetitionLevels.reserveCapacity(expected) }
        if plan.maxDefinitionLevel > 0 { result.definitionLevels.reserveCapacity(expected) }
        var position = 0
        while result.slotCount < expected {
            guard position < bytes.count else {
                throw ParquetError.corrupt("column chunk ends after \(result.slotCount) of \(expected) values")
            }
            var reader = ThriftCompactReader(bytes, start: position)
            let header = try PageHeader.read(&reader)
            let bodyStart = reader.position
            guard header.compressedSize <= bytes.count - bodyStart else {
                throw ParquetError.corrupt("page of \(header.compressedSize) bytes runs past its column chunk")
            }
            guard header.uncompressedSize <= limits.maxPageBytes else {
                throw ParquetError(
                    .limitExceeded,
                    "page claims \(header.uncompressedSize) decompressed bytes, over the limit of \(limits.maxPageBytes)"
                )
            }
            let bodyEnd = bodyStart + header.compressedSize
            switch PageType(rawValue: header.type) {
            case .dictionaryPage:
                guard let dictionaryHeader = header.dictionaryPage else {
                    throw ParquetError.corrupt("dictionary page without its header")
                }
                try readDictionary(header, dictionaryHeader, bytes, bodyStart, bodyEnd)
            case .dataPage:
                guard let dataHeader = header.dataPage else {
                    throw ParquetError.corrupt("data page without its header")
                }
                try readDataPage(header, dataHeader, bytes, bodyStart, bodyEnd, remaining: expected - result.slotCount)
            case .dataPageV2:
                guard let dataHeader = header.dataPageV2 else {
                    throw ParquetError.corrupt("data page v2 without its header")
                }
                try readDataPageV2(
                    header, dataHeader, bytes, bodyStart, bodyEnd, remaining: expected - result.slotCount)
            case .indexPage, nil:
                break
            }
            position = bodyEnd
        }
        // Handed over, not shared: the assembler grows the indices in place, which a second reference
        // (this decoder's) would turn into a copy of them.
        defer { result = DecodedColumnChunk() }
        return result
    }

    // MARK: - Pages

    private mutating func readDictionary(
        _ header: PageHeader, _ dictionaryHeader: DictionaryPageHeader, _ bytes: [UInt8], _ start: Int, _ end: Int
    ) throws {
        guard dictionaryCount == nil, result.slotCount == 0 else {
            throw ParquetError.corrupt("a second dictionary page, or one after data pages")
        }
        guard
            dictionaryHeader.encoding == Encoding.plain.rawValue
                || dictionaryHeader.encoding == Encoding.plainDictionary.rawValue
        else {
            throw ParquetError.unsupported(
                "dictionary encoding \(Encoding.name(dictionaryHeader.encoding)) is not supported")
        }
        guard dictionaryHeader.valueCount <= limits.maxValuesPerColumnChunk else {
            throw ParquetError(.limitExceeded, "dictionary of \(dictionaryHeader.valueCount) values is over the limit")
        }
        let body = try PageDecompressor.decompress(
            bytes, start: start, end: end, codec: metadata.codec, size: header.uncompressedSize)
        var values: [ParquetValue] = []
        try plain.decode(body, start: 0, end: body.count, count: dictionaryHeader.valueCount, into: &values)
        dictionaryCount = values.count
        result.values = values
        // All at once, as the levels: a reservation per page (exact, not doubling) would copy the indices
        // once per page. Untouched, the reservation costs address space, not memory.
        var indices: [UInt32] = []
        indices.reserveCapacity(Int(metadata.valueCount))
        result.indices = indices
    }

    private mutating func readDataPage(
        _ header: PageHeader, _ dataHeader: DataPageHeader, _ bytes: [UInt8], _ start: Int, _ end: Int,
        remaining: Int
    ) throws {
        let count = dataHeader.valueCount
        guard count <= remaining else {
            throw ParquetError.corrupt("data pages hold more values than the column chunk's \(metadata.valueCount)")
        }
        let body = try PageDecompressor.decompress(
            bytes, start: start, end: end, codec: metadata.codec, size: header.uncompressedSize)
        var position = 0
        if plan.maxRepetitionLevel > 0 {
            try checkLevelEncoding(dataHeader.repetitionLevelEncoding)
            position = try Self.readPrefixedLevels(
                body, position, count: count, maxLevel: plan.maxRepetitionLevel, into: &result.repetitionLevels)
        }
        if plan.maxDefinitionLevel > 0 {
            try checkLevelEncoding(dataHeader.definitionLevelEncoding)
            position = try Self.readPrefixedLevels(
                body, position, count: count, maxLevel: plan.maxDefinitionLevel, into: &result.definitionLevels)
        }
        try readValues(body, position, body.count, encoding: dataHeader.encoding, slots: count)
    }

    private mutating func readDataPageV2(
        _ header: PageHeader, _ dataHeader: DataPageHeaderV2, _ bytes: [UInt8], _ start: Int, _ end: Int,
        remaining: Int
    ) throws {
        let count = dataHeader.valueCount
        guard count <= remaining else {
            throw ParquetError.corrupt("data pages hold more values than the column chunk's \(metadata.valueCount)")
        }
        let levelsLength = dataHeader.repetitionLevelsLength + dataHeader.definitionLevelsLength
        guard levelsLength <= end - start, levelsLength <= header.uncompressedSize else {
            throw ParquetError.corrupt("data page v2 levels are longer than the page")
        }
        // Levels come first and are never compressed.
        let repetitionEnd = start + dataHeader.repetitionLevelsLength
        if plan.maxRepetitionLevel > 0 {
            try Self.readLevels(
                bytes, start, repetitionEnd, count: count, maxLevel: plan.maxRepetitionLevel,
                into: &result.repetitionLevels)
        }
        let valuesStart = repetitionEnd + dataHeader.definitionLevelsLength
        if plan.maxDefinitionLevel > 0 {
            try Self.readLevels(
                bytes, repetitionEnd, valuesStart, count: count, maxLevel: plan.maxDefinitionLevel,
                into: &result.definitionLevels)
        }
        let valuesSize = header.uncompressedSize - levelsLength
        let body: [UInt8]
        if dataHeader.isCompressed && metadata.codec != CompressionCodec.uncompressed.rawValue {
            body = try PageDecompressor.decompress(
                bytes, start: valuesStart, end: end, codec: metadata.codec, size: valuesSize)
        } else {
            guard end - valuesStart == valuesSize else {
                throw ParquetError.corrupt("uncompressed data page v2 size does not match its header")
            }
            body = Array(bytes[valuesStart..<end])
        }
        try readValues(body, 0, body.count, encoding: dataHeader.encoding, slots: count)
    }

    // MARK: - Levels and values

    private func checkLevelEncoding(_ encoding: Int) throws {
        guard encoding == Encoding.rle.rawValue else {
            throw ParquetError.unsupported("level encoding \(Encoding.name(encoding)) is not supported")
        }
    }

    /// Reads v1 levels (a four-byte length, then the hybrid) and returns the offset after them.
    ///
    /// Static, as ``readLevels(_:_:_:count:maxLevel:into:)``: a method of `self` given `&result`'s levels
    /// would hold a copy of `self`, so every page's append would copy the chunk's levels (quadratic).
    private static func readPrefixedLevels(
        _ body: [UInt8], _ start: Int, count: Int, maxLevel: Int, into levels: inout [UInt8]
    ) throws -> Int {
        guard body.count - start >= 4 else { throw ParquetError.corrupt("levels miss their length") }
        let length = Int(PlainDecoder.littleEndian(body, start, 4))
        guard length <= body.count - start - 4 else { throw ParquetError.corrupt("levels run past their page") }
        try readLevels(body, start + 4, start + 4 + length, count: count, maxLevel: maxLevel, into: &levels)
        return start + 4 + length
    }

    private static func readLevels(
        _ bytes: [UInt8], _ start: Int, _ end: Int, count: Int, maxLevel: Int, into levels: inout [UInt8]
    ) throws {
        guard maxLevel <= Int(UInt8.max) else {
            throw ParquetError.unsupported("level \(maxLevel) is deeper than the reader's 255")
        }
        var decoder = try RLEHybridDecoder(
            bytes, start: start, end: end, bitWidth: RLEHybridDecoder.bitWidth(forMax: maxLevel))
        let first = levels.count
        try decoder.decode(count: count, into: &levels)
        if let level = levels[first...].first(where: { Int($0) > maxLevel }) {
            throw ParquetError.corrupt("level \(level) is above the column's maximum \(maxLevel)")
        }
    }

    private mutating func readValues(_ body: [UInt8], _ start: Int, _ end: Int, encoding: Int, slots: Int) throws {
        let nonNull: Int
        if plan.maxDefinitionLevel > 0 {
            let maxLevel = UInt8(plan.maxDefinitionLevel)
            nonNull = result.definitionLevels.suffix(slots).reduce(0) { $0 + ($1 == maxLevel ? 1 : 0) }
        } else {
            nonNull = slots
        }
        switch Encoding(rawValue: encoding) {
        case .plain:
            let first = result.values.count
            let plain = plain
            try plain.decode(body, start: start, end: end, count: nonNull, into: &result.values)
            appendIndices(from: first)
        case .plainDictionary, .rleDictionary:
            guard let dictionaryCount, var indices = result.indices else {
                throw ParquetError.corrupt("dictionary-encoded page without a dictionary")
            }
            guard nonNull > 0 else { break }
            guard start < end else { throw ParquetError.corrupt("dictionary indices miss their bit width") }
            var decoder = try RLEHybridDecoder(body, start: start + 1, end: end, bitWidth: Int(body[start]))
            // Decoded in place: the chunk's only copy of the indices is moved out while they grow.
            result.indices = nil
            let first = indices.count
            try decoder.decode(count: nonNull, into: &indices)
            if let index = indices[first...].first(where: { Int($0) >= dictionaryCount }) {
                throw ParquetError.corrupt("dictionary index \(index) is out of range (\(dictionaryCount) entries)")
            }
            result.indices = indices
        case .rle where plan.physicalType == PhysicalType.boolean.rawValue:
            let first = result.values.count
            let plain = plain
            try plain.decodeRLEBooleans(body, start: start, end: end, count: nonNull, into: &result.values)
            appendIndices(from: first)
        default:
            throw ParquetError.unsupported("encoding \(Encoding.name(encoding)) is not supported")
        }
        result.slotCount += slots
    }

    /// After a dictionary, a page of values (not indices) puts them after the entries: each is indexed.
    private mutating func appendIndices(from first: Int) {
        guard result.indices != nil else { return }
        result.indices?.append(contentsOf: UInt32(first)..<UInt32(result.values.count))
    }
}
