import CCurl
import Foundation
import Synchronization
import TestSupport
import Testing

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
