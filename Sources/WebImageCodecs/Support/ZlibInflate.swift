import CZlib
import Foundation

/// zlib's inflate for the compressed text chunks of a PNG (an `iTXt` with compression flag 1), bounded so
/// a small chunk cannot expand into unbounded memory.
enum ZlibInflate {
    /// What the zlib stream `data` inflates to; nil when it is not a complete zlib stream or inflates to more
    /// than `limit` bytes.
    static func inflated(_ data: Data, limit: Int) -> Data? {
        var stream = z_stream()
        guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        let input = [UInt8](data)
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        return input.withUnsafeBufferPointer { input -> Data? in
            // zlib never writes through next_in; the mutable cast only satisfies its C signature.
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = uInt(input.count)
            while true {
                let (status, produced) = buffer.withUnsafeMutableBufferPointer { out -> (Int32, Int) in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    let status = inflate(&stream, Z_NO_FLUSH)
                    return (status, out.count - Int(stream.avail_out))
                }
                output.append(contentsOf: buffer[0..<produced])
                // Z_BUF_ERROR: the input ended before the stream did; anything else but Z_OK is bad data.
                guard output.count <= limit, status == Z_OK || status == Z_STREAM_END else { return nil }
                if status == Z_STREAM_END { return output }
            }
        }
    }
}
