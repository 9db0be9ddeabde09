/// A decoder of Parquet's RLE/bit-packed hybrid encoding (levels, dictionary indices, RLE booleans).
///
/// Runs are read lazily, one at a time; a run's claimed length is never allocated, only the values the
/// caller asks for, and every bit-packed run is checked against the bytes left.
struct RLEHybridDecoder {
    private let bytes: [UInt8]
    private var position: Int
    private let end: Int
    private let bitWidth: Int
    private let byteWidth: Int

    /// A decoder of `bytes[start..<end]` holding values `bitWidth` bits wide (0...32).
    init(_ bytes: [UInt8], start: Int, end: Int, bitWidth: Int) throws {
        guard (0...32).contains(bitWidth) else {
            throw ParquetError.corrupt("RLE/bit-packed bit width \(bitWidth) is out of range (0...32)")
        }
        guard start >= 0, start <= end, end <= bytes.count else {
            throw ParquetError.corrupt("RLE/bit-packed data runs past its page")
        }
        self.bytes = bytes
        self.position = start
        self.end = end
        self.bitWidth = bitWidth
        self.byteWidth = (bitWidth + 7) / 8
    }

    /// Appends exactly `count` values to `output`, or throws if the data ends first. `T` must hold
    /// `bitWidth` bits (levels go straight into bytes; dictionary indices into `UInt32`s).
    mutating func decode<T: FixedWidthInteger & UnsignedInteger>(count: Int, into output: inout [T]) throws {
        guard bitWidth <= T.bitWidth else {
            throw ParquetError.corrupt("RLE/bit-packed bit width \(bitWidth) is over the \(T.bitWidth) bits expected")
        }
        var needed = count
        while needed > 0 {
            guard position < end else {
                throw ParquetError.corrupt("RLE/bit-packed data ends \(needed) values early")
            }
            let header = try readVarint()
            if header & 1 == 0 {
                let runLength = header >> 1
                guard byteWidth <= end - position else { throw ParquetError.corrupt("RLE run ends early") }
                var value: UInt32 = 0
                for index in 0..<byteWidth { value |= UInt32(bytes[position + index]) << (8 * UInt32(index)) }
                position += byteWidth
                if bitWidth < 32 && value >> UInt32(bitWidth) != 0 {
                    throw ParquetError.corrupt("RLE run value \(value) is wider than \(bitWidth) bits")
                }
                let taken = Int(min(runLength, UInt64(needed)))
                output.append(contentsOf: repeatElement(T(truncatingIfNeeded: value), count: taken))
                needed -= taken
            } else {
                let groups = header >> 1
                let available = end - position
                // A run claims groups of eight values; only the values asked for need to be present.
                let claimedValues = groups > UInt64(Int.max / 8) ? UInt64(Int.max) : groups * 8
                let taken = Int(min(claimedValues, UInt64(needed)))
                let takenBytes = (taken * bitWidth + 7) / 8
                guard takenBytes <= available else { throw ParquetError.corrupt("bit-packed run ends early") }
                unpack(count: taken, into: &output)
                let claimedBytes = groups > UInt64(available) ? UInt64(available) : groups * UInt64(bitWidth)
                position += Int(min(claimedBytes, UInt64(available)))
                needed -= taken
            }
        }
    }

    private mutating func readVarint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < end, shift < 64 else { throw ParquetError.corrupt("bad RLE/bit-packed run header") }
            let byte = bytes[position]
            position += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    /// Unpacks `count` values from `position` (LSB first); the caller checked the bytes are there.
    private func unpack<T: FixedWidthInteger & UnsignedInteger>(count: Int, into output: inout [T]) {
        guard bitWidth > 0 else {
            output.append(contentsOf: repeatElement(0, count: count))
            return
        }
        let mask: UInt64 = (1 << UInt64(bitWidth)) - 1
        var buffer: UInt64 = 0
        var bufferedBits = 0
        var next = position
        for _ in 0..<count {
            while bufferedBits < bitWidth {
                buffer |= UInt64(bytes[next]) << UInt64(bufferedBits)
                next += 1
                bufferedBits += 8
            }
            output.append(T(truncatingIfNeeded: buffer & mask))
            buffer >>= UInt64(bitWidth)
            bufferedBits -= bitWidth
        }
    }
}

extension RLEHybridDecoder {
    /// The bit width that holds values up to `maxValue` (0 for 0).
    static func bitWidth(forMax maxValue: Int) -> Int {
        maxValue <= 0 ? 0 : Int.bitWidth - maxValue.leadingZeroBitCount
    }
}
