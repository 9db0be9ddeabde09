#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file written front to back with `write`, counting its offset.
final class ParquetOutputFile {
    private var descriptor: Int32
    private let path: String
    /// The number of bytes written so far (the offset of the next byte).
    private(set) var offset = 0

    init(path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw ParquetError(.io, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        self.descriptor = descriptor
        self.path = path
    }

    deinit {
        if descriptor >= 0 { _ = posixClose(descriptor) }
    }

    func write(_ bytes: [UInt8]) throws {
        guard descriptor >= 0 else { throw ParquetError(.io, "\(path) is already closed") }
        var done = 0
        while done < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                posixWrite(descriptor, buffer.baseAddress.map { $0 + done }, bytes.count - done)
            }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else {
                throw ParquetError(.io, "cannot write \(path): \(String(cString: strerror(errno)))")
            }
            done += result
        }
        offset += bytes.count
    }

    func close() throws {
        guard descriptor >= 0 else { return }
        let status = posixClose(descriptor)
        descriptor = -1
        guard status == 0 else { throw ParquetError(.io, "cannot close \(path): \(String(cString: strerror(errno)))") }
    }
}

// The class's own `write` and `close` hide the C functions inside it.
private func posixWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}

private func posixClose(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}
