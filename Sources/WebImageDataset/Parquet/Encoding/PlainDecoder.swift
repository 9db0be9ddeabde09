/// Decodes PLAIN-encoded values (and RLE booleans) into ``ParquetValue``s.
struct PlainDecoder {
    let physicalType: Int
    let typeLength: Int
    let isText: Bool

    /// Decodes `count` values from `bytes[start..<end]`, appending them to `output`.
    ///
    /// `output` is not reserved for the page: an exact reservation per page reallocates and copies the
    /// whole chunk's values on every page (quadratic over a chunk of thousands of pages), where `append`
    /// grows it geometrically.
    func decode(
        _ bytes: [UInt8], start: Int, end: Int, count: Int, into output: inout [ParquetValue]
    ) throws {
        guard let type = PhysicalType(rawValue: physicalType) else {
            throw ParquetError.corrupt("physical type \(physicalType) is not valid")
        }
        let available = end - start
        func need(_ size: Int) throws {
            guard size == 0 || count <= available / size else {
                throw ParquetError.corrupt("\(count) PLAIN values need more than the page's \(available) bytes")
            }
        }
        switch type {
        case .boolean:
            guard count <= available * 8 else {
                throw ParquetError.corrupt("\(count) PLAIN booleans need more than the page's \(available) bytes")
            }
            for index in 0..<count {
                output.append(.bool(bytes[start + index / 8] >> UInt8(index % 8) & 1 == 1))
            }
        case .int32:
            try need(4)
            for index in 0..<count {
                output.append(.int32(Int32(bitPattern: UInt32(Self.littleEndian(bytes, start + 4 * index, 4)))))
            }
        case .int64:
            try need(8)
            for index in 0..<count {
                output.append(.int64(Int64(bitPattern: Self.littleEndian(bytes, start + 8 * index, 8))))
            }
        case .float:
            try need(4)
            for index in 0..<count {
                output.append(.float(Float(bitPattern: UInt32(Self.littleEndian(bytes, start + 4 * index, 4)))))
            }
        case .double:
            try need(8)
            for index in 0..<count {
                output.append(.double(Double(bitPattern: Self.littleEndian(bytes, start + 8 * index, 8))))
            }
        case .byteArray:
            // Each value is at least its four-byte length.
            try need(4)
            var position = start
            for _ in 0..<count {
                guard end - position >= 4 else { throw ParquetError.corrupt("BYTE_ARRAY value runs past its page") }
                let length = Int(Self.littleEndian(bytes, position, 4))
                position += 4
                guard length <= end - position else {
                    throw ParquetError.corrupt("BYTE_ARRAY length \(length) runs past its page")
                }
                output.append(try value(bytes[position..<position + length]))
                position += length
            }
        case .fixedLenByteArray:
            try need(typeLength)
            for index in 0..<count {
                let first = start + typeLength * index
                output.append(.bytes(Array(bytes[first..<first + typeLength])))
            }
        case .int96:
            throw ParquetError.unsupported("physical type INT96 is not supported")
        }
    }

    /// Decodes `count` RLE-encoded booleans (a four-byte length, then the hybrid with bit width 1).
    func decodeRLEBooleans(
        _ bytes: [UInt8], start: Int, end: Int, count: Int, into output: inout [ParquetValue]
    ) throws {
        guard end - start >= 4 else { throw ParquetError.corrupt("RLE booleans miss their length") }
        let length = Int(Self.littleEndian(bytes, start, 4))
        guard length <= end - start - 4 else { throw ParquetError.corrupt("RLE booleans run past their page") }
        var decoder = try RLEHybridDecoder(bytes, start: start + 4, end: start + 4 + length, bitWidth: 1)
        var raw: [UInt32] = []
        try decoder.decode(count: count, into: &raw)
        output.append(contentsOf: raw.lazy.map { .bool($0 != 0) })
    }

    private func value(_ raw: ArraySlice<UInt8>) throws -> ParquetValue {
        guard isText else { return .bytes(Array(raw)) }
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw ParquetError.corrupt("a UTF8 value is not valid UTF-8")
        }
        return .string(text)
    }

    /// The little-endian unsigned integer of `width` bytes at `offset` (the caller checked the bounds).
    static func littleEndian(_ bytes: [UInt8], _ offset: Int, _ width: Int) -> UInt64 {
        var result: UInt64 = 0
        for index in 0..<width { result |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
        return result
    }
}
