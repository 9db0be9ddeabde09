import Foundation

/// The sockets of ``DNSClient``: one query over a connected UDP socket (the kernel passes on only the
/// server's datagrams) or over TCP with its two-byte length, each bounded by a deadline.
enum DNSSocket {
    /// Sends every query over one UDP socket at once and waits until each has a datagram its `accept`
    /// takes, or `timeout` passes; the answers in the queries' order.
    static func udp(
        address: String, port: UInt16, timeout: TimeInterval,
        queries: [(query: [UInt8], accept: ([UInt8]) -> DNSMessage.Answer?)]
    ) throws(AttemptFailure) -> [DNSMessage.Answer] {
        let socket = try connected(address: address, port: port, datagram: true, timeout: timeout)
        defer { close(socket) }
        for (query, _) in queries {
            guard send(socket, query, query.count, 0) == query.count else {
                throw AttemptFailure(
                    "cannot send to the resolver \(address):\(port): \(String(cString: strerror(errno)))")
            }
        }
        let deadline = Date().addingTimeInterval(timeout)
        var answers = [DNSMessage.Answer?](repeating: nil, count: queries.count)
        var buffer = [UInt8](repeating: 0, count: 65_535)
        while answers.contains(where: { $0 == nil }), try wait(socket, for: Int16(POLLIN), until: deadline) {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count < 0 {
                // ICMP port unreachable: nothing listens there.
                if errno == ECONNREFUSED {
                    throw AttemptFailure("the resolver \(address):\(port) refused the connection (nothing listens)")
                }
                continue
            }
            let datagram = Array(buffer[0..<count])
            for index in queries.indices where answers[index] == nil {
                if let answer = queries[index].accept(datagram) {
                    answers[index] = answer
                    break
                }
            }
        }
        let received = answers.compactMap { $0 }
        guard received.count == queries.count else {
            throw AttemptFailure("no answer from the resolver \(address):\(port) within \(timeout) s")
        }
        return received
    }

    /// Sends `query` over TCP and reads the one answer, which `accept` must take.
    static func tcp(
        address: String, port: UInt16, timeout: TimeInterval, query: [UInt8],
        accept: ([UInt8]) -> DNSMessage.Answer?
    ) throws(AttemptFailure) -> DNSMessage.Answer {
        let deadline = Date().addingTimeInterval(timeout)
        let socket = try connected(address: address, port: port, datagram: false, timeout: timeout)
        defer { close(socket) }
        let framed = [UInt8(query.count >> 8), UInt8(query.count & 0xFF)] + query
        var sent = 0
        while sent < framed.count {
            guard try wait(socket, for: Int16(POLLOUT), until: deadline) else {
                throw AttemptFailure("the resolver \(address):\(port) did not take the TCP query within \(timeout) s")
            }
            let count = framed.withUnsafeBytes { send(socket, $0.baseAddress! + sent, framed.count - sent, 0) }
            guard count > 0 else { throw AttemptFailure("the resolver \(address):\(port) closed the TCP connection") }
            sent += count
        }
        func read(_ wanted: Int) throws(AttemptFailure) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: wanted)
            var have = 0
            while have < wanted {
                guard try wait(socket, for: Int16(POLLIN), until: deadline) else {
                    throw AttemptFailure("no TCP answer from the resolver \(address):\(port) within \(timeout) s")
                }
                let count = bytes.withUnsafeMutableBytes { recv(socket, $0.baseAddress! + have, wanted - have, 0) }
                guard count > 0 else {
                    throw AttemptFailure("the resolver \(address):\(port) closed the TCP connection mid-answer")
                }
                have += count
            }
            return bytes
        }
        let length = try read(2)
        let message = try read(Int(length[0]) << 8 | Int(length[1]))
        guard let answer = accept(message) else {
            throw AttemptFailure("the resolver \(address):\(port) sent a TCP answer that is not one to the query")
        }
        return answer
    }

    /// A non-blocking UDP (`datagram`) or TCP socket connected to the server (a TCP connect waits up to
    /// `timeout`).
    private static func connected(
        address: String, port: UInt16, datagram: Bool, timeout: TimeInterval
    ) throws(AttemptFailure) -> Int32 {
        var storage = sockaddr_storage()
        var length: socklen_t
        let family: Int32
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, address, &v4.sin_addr) == 1 {
            family = AF_INET
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &storage) { target in withUnsafeBytes(of: v4) { target.copyMemory(from: $0) } }
        } else if inet_pton(AF_INET6, address, &v6.sin6_addr) == 1 {
            family = AF_INET6
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &storage) { target in withUnsafeBytes(of: v6) { target.copyMemory(from: $0) } }
        } else {
            throw AttemptFailure("'\(address)' is not a numeric address", isFinal: true)
        }
        let kind = Int32(datagram ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue)
        let socket = Foundation.socket(family, kind | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw AttemptFailure("cannot make a socket: \(String(cString: strerror(errno)))") }
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Foundation.connect(socket, $0, length) }
        }
        if result != 0 && errno != EINPROGRESS {
            let reason = String(cString: strerror(errno))
            close(socket)
            throw AttemptFailure("cannot reach the resolver \(address):\(port): \(reason)")
        }
        if result != 0 {
            let ready: Bool
            do {
                ready = try wait(socket, for: Int16(POLLOUT), until: Date().addingTimeInterval(timeout))
            } catch {
                close(socket)
                throw error
            }
            var failure: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(socket, SOL_SOCKET, SO_ERROR, &failure, &size)
            guard ready, failure == 0 else {
                close(socket)
                throw AttemptFailure(
                    ready
                        ? "cannot connect to the resolver \(address):\(port): \(String(cString: strerror(failure)))"
                        : "cannot connect to the resolver \(address):\(port) within \(timeout) s")
            }
        }
        return socket
    }

    /// Waits until `socket` is ready for `events` (true) or the deadline passes (false).
    private static func wait(_ socket: Int32, for events: Int16, until deadline: Date) throws(AttemptFailure) -> Bool {
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return false }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(remaining * 1000 + 1, 60_000)))
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR {
                throw AttemptFailure("poll failed: \(String(cString: strerror(errno)))")
            }
        }
    }
}
