import Foundation
import Synchronization

/// Names of this machine.
package enum Loopback {
    /// Host spellings that all reach this machine. `0` is 0.0.0.0, which Linux connects to locally.
    package static let spellings = [
        "2130706433", "0x7f.1", "127.1", "0", "017700000001", "[::ffff:127.0.0.1]", "[::1]",
    ]
}

/// A TCP listener on one loopback address (IPv4, or IPv6 such as `::1`) that answers every request with
/// `200 shared` and closes.
package final class LoopbackListener: Sendable {
    package let port: Int
    private let socketFD: Int32
    private let served = Atomic<Int>(0)

    /// Connections accepted (each answered once, whatever it sent).
    package var requests: Int { served.load(ordering: .acquiring) }

    /// Listens on `address` at `port` (0: a free one).
    package init(address: String, port requested: Int = 0) throws {
        let family = address.contains(":") ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        var storage = sockaddr_storage()
        let length = withUnsafeMutableBytes(of: &storage) { raw -> Int in
            if family == AF_INET6 {
                var addr = sockaddr_in6()
                addr.sin6_family = sa_family_t(AF_INET6)
                addr.sin6_port = UInt16(requested).bigEndian
                inet_pton(AF_INET6, address, &addr.sin6_addr)
                raw.storeBytes(of: addr, as: sockaddr_in6.self)
                return MemoryLayout<sockaddr_in6>.size
            }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = UInt16(requested).bigEndian
            inet_pton(AF_INET, address, &addr.sin_addr)
            raw.storeBytes(of: addr, as: sockaddr_in.self)
            return MemoryLayout<sockaddr_in>.size
        }
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw FixtureMissing("cannot listen on \(address) port \(requested): \(reason)")
        }
        var boundLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &boundLength) }
        }
        // sin_port and sin6_port sit at the same offset, right after the family.
        let port = withUnsafeBytes(of: &storage) { $0.loadUnaligned(fromByteOffset: 2, as: UInt16.self) }
        socketFD = fd
        self.port = Int(UInt16(bigEndian: port))
        Thread { [self] in serve() }.start()
    }

    private func serve() {
        while true {
            let connection = accept(socketFD, nil, nil)
            if connection < 0 { return }  // stop() shut the socket down
            var request = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !request.ends(with: Array("\r\n\r\n".utf8)) {
                let count = read(connection, &buffer, buffer.count)
                if count <= 0 { break }
                request += buffer[0..<count]
            }
            let response = Array("HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nshared".utf8)
            _ = response.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            served.add(1, ordering: .releasing)
            close(connection)
        }
    }

    package func stop() {
        shutdown(socketFD, Int32(SHUT_RDWR))
        close(socketFD)
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
