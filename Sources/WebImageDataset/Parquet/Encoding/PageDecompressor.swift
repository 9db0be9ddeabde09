import CSnappy
import CZlib
import CZstd

/// Decompresses page bodies with the codec a column chunk names.
///
/// The output buffer is the size the page header claims (already checked against ``ParquetLimits``), and
/// each codec must produce exactly that many bytes.
enum PageDecompressor {
    /// `bytes[start..<end]` decompressed with `codec` into exactly `size` bytes.
    static func decompress(
        _ bytes: [UInt8], start: Int, end: Int, codec: Int, size: Int
    ) throws -> [UInt8] {
        guard let known = CompressionCodec(rawValue: codec) else {
            throw ParquetError.unsupported("codec \(codec) is not supported")
        }
        switch known {
        case .uncompressed:
            guard end - start == size else {
                throw ParquetError.corrupt("uncompressed page holds \(end - start) bytes, its header says \(size)")
            }
            return Array(bytes[start..<end])
        case .snappy: return try snappy(bytes, start: start, end: end, size: size)
        case .gzip: return try gzip(bytes, start: start, end: end, size: size)
        case .zstd: return try zstd(bytes, start: start, end: end, size: size)
        case .lzo, .brotli, .lz4, .lz4Raw:
            throw ParquetError.unsupported("codec \(CompressionCodec.name(codec)) is not supported")
        }
    }

    private static func snappy(_ bytes: [UInt8], start: Int, end: Int, size: Int) throws -> [UInt8] {
        try bytes.withUnsafeBufferPointer { all -> [UInt8] in
            let input = UnsafeRawPointer(all.baseAddress.map { $0 + start })?.assumingMemoryBound(to: CChar.self)
            var claimed = 0
            guard snappy_uncompressed_length(input, end - start, &claimed) == SNAPPY_OK else {
                throw ParquetError.corrupt("SNAPPY page is not valid Snappy data")
            }
            guard claimed == size else {
                throw ParquetError.corrupt("SNAPPY page decompresses to \(claimed) bytes, its header says \(size)")
            }
            // An empty array may have no storage to hand snappy as the output.
            guard size > 0 else { return [] }
            var output = [UInt8](repeating: 0, count: size)
            var length = size
            let status = output.withUnsafeMutableBufferPointer { out in
                snappy_uncompress(
                    input, end - start, UnsafeMutableRawPointer(out.baseAddress)?.assumingMemoryBound(to: CChar.self),
                    &length)
            }
            guard status == SNAPPY_OK, length == size else {
                throw ParquetError.corrupt("SNAPPY page is not valid Snappy data (status \(status.rawValue))")
            }
            return output
        }
    }

    private static func gzip(_ bytes: [UInt8], start: Int, end: Int, size: Int) throws -> [UInt8] {
        var stream = z_stream()
        // windowBits 15 + 32: zlib detects a gzip or a zlib header (Parquet's GZIP is gzip; some writers
        // wrote zlib).
        guard inflateInit2_(&stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw ParquetError.corrupt("zlib could not start inflating")
        }
        defer { inflateEnd(&stream) }
        // One more byte than expected so a page that inflates past its header's size is caught.
        var output = [UInt8](repeating: 0, count: size + 1)
        let status = bytes.withUnsafeBufferPointer { input -> Int32 in
            output.withUnsafeMutableBufferPointer { out -> Int32 in
                // zlib never writes through next_in; the mutable cast only satisfies its C signature.
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress.map { $0 + start })
                stream.avail_in = uInt(end - start)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                var status = Z_OK
                // Concatenated gzip members inflate one after the other.
                while status == Z_OK || (status == Z_STREAM_END && stream.avail_in > 0 && stream.avail_out > 0) {
                    if status == Z_STREAM_END { guard inflateReset(&stream) == Z_OK else { return Z_DATA_ERROR } }
                    status = inflate(&stream, Z_FINISH)
                    if status == Z_BUF_ERROR { break }
                }
                return status
            }
        }
        guard status == Z_STREAM_END else {
            throw ParquetError.corrupt("GZIP page is not valid deflate data (zlib status \(status))")
        }
        let produced = size + 1 - Int(stream.avail_out)
        guard produced == size else {
            throw ParquetError.corrupt("GZIP page decompresses to \(produced) bytes, its header says \(size)")
        }
        output.removeLast()
        return output
    }

    private static func zstd(_ bytes: [UInt8], start: Int, end: Int, size: Int) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: size)
        let result = bytes.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                ZSTD_decompress(out.baseAddress, size, input.baseAddress.map { $0 + start }, end - start)
            }
        }
        if ZSTD_isError(result) != 0 {
            let name = ZSTD_getErrorName(result).map { String(cString: $0) } ?? "unknown error"
            throw ParquetError.corrupt("ZSTD page does not decompress: \(name)")
        }
        guard result == size else {
            throw ParquetError.corrupt("ZSTD page decompresses to \(result) bytes, its header says \(size)")
        }
        return output
    }
}
