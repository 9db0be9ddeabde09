#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A read-only file descriptor read with `pread`, so one handle serves concurrent readers.
final class ParquetFileHandle: Sendable {
    private let descriptor: Int32
    /// The file's size in bytes when it was opened.
    let size: Int

    init(path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ParquetError(.io, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let message = String(cString: strerror(errno))
            close(descriptor)
            throw ParquetError(.io, "cannot stat \(path): \(message)")
        }
        self.descriptor = descriptor
        self.size = Int(status.st_size)
    }

    deinit { close(descriptor) }

    /// The `count` bytes at `offset`; the caller checked the range lies inside the file.
    func read(offset: Int, count: Int) throws -> [UInt8] {
        guard offset >= 0, count >= 0, offset <= size, count <= size - offset else {
            throw ParquetError.corrupt("byte range \(offset)+\(count) lies outside the \(size)-byte file")
        }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let result = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress.map { $0 + done }, count - done, off_t(offset + done))
            }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else {
                let reason = result < 0 ? String(cString: strerror(errno)) : "the file is shorter than it was"
                throw ParquetError(.io, "cannot read \(count) bytes at \(offset): \(reason)")
            }
            done += result
        }
        return bytes
    }
}
