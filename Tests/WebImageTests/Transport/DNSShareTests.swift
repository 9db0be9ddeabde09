import CCurl
import Foundation
import Synchronization
import Testing

@testable import WebImage
@testable import WebImageTransport

/// Every transfer of a transport looks names up through one DNS cache: the share handle's.
///
/// The test puts an answer into that cache that no resolver would give: `localhost` on a chosen port
/// means 127.0.0.2, where a listener of the test's own answers (nothing listens on 127.0.0.1 or ::1 at
/// that port). A plain easy handle on the transport's share loads the answer with `CURLOPT_RESOLVE`;
/// then one of the transport's own transfers, which sets no such option, must reach 127.0.0.2. An easy
/// handle without the share must not.
@Suite(.timeLimit(.minutes(3))) struct DNSShareTests {
    @Test func theTransportsTransfersShareOneDNSCache() async throws {
        let listener = try LoopbackListener(address: "127.0.0.2")
        defer { listener.stop() }
        let url = "http://localhost:\(listener.port)/shared"
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let share = transport.share

        // 1. An easy handle on the share, told that localhost:PORT is 127.0.0.2.
        let seeded = await offCooperativePool {
            Self.fetch(url, share: share, resolve: "localhost:\(listener.port):127.0.0.2")
        }
        #expect(seeded.code == CURLE_OK && seeded.body == "shared", "\(seeded)")

        // 2. The transport's own transfer, with no resolve option, finds the same answer.
        let probe = TransferProbe()
        transport.start(try transport.makeTransfer(TransferRequest(url: URL(string: url)!), delegate: probe))
        #expect(await offCooperativePool { probe.wait(seconds: 20) })
        #expect(probe.error == nil, "\(String(describing: probe.error))")
        #expect(String(decoding: probe.body, as: UTF8.self) == "shared")

        // 3. Without the share, localhost is loopback as usual, where nothing answers on this port.
        let unshared = await offCooperativePool { Self.fetch(url, share: nil, resolve: nil) }
        #expect(unshared.code != CURLE_OK || unshared.body != "shared", "\(unshared)")
        #expect(listener.requests == 2)
    }

    /// One blocking transfer on a fresh easy handle.
    static func fetch(_ url: String, share: CurlShare?, resolve: String?) -> (code: CURLcode, body: String) {
        guard let handle = curl_easy_init() else { return (CURLE_FAILED_INIT, "") }
        defer { curl_easy_cleanup(handle) }
        let list = resolve.map { curl_slist_append(nil, $0) } ?? nil
        defer { curl_slist_free_all(list) }
        let body = BodyBox()
        _ = wi_easy_setopt_string(handle, CURLOPT_URL, url)
        _ = wi_easy_setopt_long(handle, CURLOPT_TIMEOUT, 10)
        if let share { _ = wi_easy_setopt_share(handle, share.handle) }
        if let list { _ = wi_easy_setopt_slist(handle, CURLOPT_RESOLVE, list) }
        _ = wi_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, Unmanaged.passUnretained(body).toOpaque())
        _ = wi_easy_setopt_write_function(handle) { bytes, size, count, user in
            let box = Unmanaged<BodyBox>.fromOpaque(user!).takeUnretainedValue()
            box.data.append(UnsafeRawPointer(bytes).assumingMemoryBound(to: UInt8.self), count: size * count)
            return size * count
        }
        let code = curl_easy_perform(handle)
        return (code, String(decoding: body.data, as: UTF8.self))
    }

    final class BodyBox {
        var data = Data()
    }
}

/// A TCP listener on one loopback address (IPv4, or IPv6 such as `::1`) that answers every request with
/// `200 shared` and closes.
final class LoopbackListener: Sendable {
    let port: Int
    private let socketFD: Int32
    private let served = Atomic<Int>(0)

    /// Connections accepted (each answered once, whatever it sent).
    var requests: Int { served.load(ordering: .acquiring) }

    /// Listens on `address` at `port` (0: a free one).
    init(address: String, port requested: Int = 0) throws {
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

    func stop() {
        shutdown(socketFD, Int32(SHUT_RDWR))
        close(socketFD)
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
