import Foundation

/// A plain TCP connection to a loopback port, for what curl does not do: send half a request, hold a
/// connection open while others are made, see whether the server closed it.
///
/// Reads block on `poll`, on a thread of their own (`offCooperativePool`), never on Swift's cooperative pool.
///
/// ```swift
/// let connection = try RawConnection(port: serve.port)
/// try connection.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
/// let reply = await connection.readResponse(waitingAtMost: 60)
/// ```
package final class RawConnection: Sendable {
    private let descriptor: Int32

    /// Connects to `127.0.0.1:port`.
    package init(port: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureMissing("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw FixtureMissing("cannot connect to 127.0.0.1:\(port): \(reason)")
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Closes the connection both ways (the descriptor itself is closed with the object).
    package func hangUp() {
        shutdown(descriptor, Int32(SHUT_RDWR))
    }

    /// A UDP socket bound to 127.0.0.1 on a free port, and the port: a server that reads and never answers
    /// (the caller closes it).
    package static func boundUDPSocket() throws -> (descriptor: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard let port = bindLoopback(fd) else {
            if fd >= 0 { close(fd) }
            throw FixtureMissing("no UDP socket on loopback: \(String(cString: strerror(errno)))")
        }
        return (fd, port)
    }

    /// A loopback port free a moment ago: bound to 127.0.0.1:0, read, and released, for a server that must
    /// be told its port rather than pick one.
    package static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        guard let port = bindLoopback(fd) else {
            throw FixtureMissing("no free loopback port: \(String(cString: strerror(errno)))")
        }
        return port
    }

    /// Binds `fd` to 127.0.0.1 on a port the system picks; that port, or nil.
    private static func bindLoopback(_ fd: Int32) -> Int? {
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// Writes all of `text`.
    package func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { throw FixtureMissing("write: \(String(cString: strerror(errno)))") }
            sent += count
        }
    }

    /// What the peer sent until it closed the connection, and whether it did within `seconds` (false when
    /// the wait ended first).
    package func readUntilClosed(waitingAtMost seconds: Double) async -> (data: Data, closed: Bool) {
        let fd = descriptor
        return await offCooperativePool { Self.read(fd, until: { _ in false }, waitingAtMost: seconds) }
    }

    /// One response's head and `Content-Length` body, nil when the connection closed or `seconds` passed
    /// before it was whole.
    package func readResponse(waitingAtMost seconds: Double) async -> String? {
        let fd = descriptor
        let (data, _) = await offCooperativePool {
            Self.read(fd, until: { Self.isWholeResponse($0) }, waitingAtMost: seconds)
        }
        return Self.isWholeResponse(data) ? String(decoding: data, as: UTF8.self) : nil
    }

    /// Whether `data` holds a response head and as many body bytes as its `Content-Length` says.
    static func isWholeResponse(_ data: Data) -> Bool {
        let text = String(decoding: data, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { return false }
        let length =
            text[..<end.lowerBound].split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        return text.utf8.count - text[..<end.upperBound].utf8.count >= length
    }

    /// Reads until `done` says so, the peer closes, or `seconds` pass without either.
    private static func read(_ fd: Int32, until done: (Data) -> Bool, waitingAtMost seconds: Double) -> (Data, Bool) {
        var data = Data()
        let deadline = Date(timeIntervalSinceNow: seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !done(data) {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return (data, false) }
            var request = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&request, 1, Int32(min(left, 1) * 1000))
            if ready < 0, errno != EINTR { return (data, true) }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (data, true) }  // end of stream, or a reset: closed either way
            data.append(contentsOf: buffer[0..<count])
        }
        return (data, false)
    }
}
