import CCurl
import Foundation
import LocalImageServer
import ServerTestSupport
import Synchronization
import TestSupport
import Testing

@testable import WebImageTransport

/// libcurl's multi and share return codes become typed `TransportError`s, and a failing poll cannot spin the
/// transport thread. (The downloader's code for each kind is LayerBoundaryTests'; the cookie handle's codes
/// are WebImageTests' CReturnCodeTests.)
@Suite(.timeLimit(.minutes(2))) struct CReturnCodeTests {
    @Test func aPollThatAlwaysFailsBacksOffAndEndsTheTransfersInFlight() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let calls = Atomic<Int>(0)
        let transport = try CurlTransport(poll: { _, _ in
            calls.add(1, ordering: .relaxed)
            return CURLM_INTERNAL_ERROR
        })
        defer { transport.shutdown() }
        let probe = TransferProbe()
        let started = Date()
        transport.start(try transport.makeTransfer(TransferRequest(url: server.url("/hang")), delegate: probe))
        #expect(probe.wait(seconds: 10))
        let error = try #require(probe.error)
        #expect(error.kind == .failed)
        #expect(error.message.contains("curl_multi_poll"))
        #expect(error.curlCode == Int(CURLM_INTERNAL_ERROR.rawValue))
        // Keep polling (and failing) a while longer: the loop backs off instead of spinning.
        Thread.sleep(forTimeInterval: 1)
        let elapsed = Date().timeIntervalSince(started)
        let count = calls.load(ordering: .relaxed)
        // With no backoff a poll that fails at once runs hundreds of thousands of times a second.
        #expect(
            count <= Int(elapsed / TransportLoop.longestPollBackoff) + TransportLoop.pollFailuresBeforeGivingUp + 2,
            "\(count) polls in \(elapsed) s")
        #expect(count >= TransportLoop.pollFailuresBeforeGivingUp)
    }

    @Test func multiAndShareCodesBecomeTypedErrors() {
        let multi = #expect(throws: TransportError.self) {
            try CurlRuntime.checkMulti(CURLM_BAD_HANDLE, "curl_multi_add_handle")
        }
        #expect(multi?.kind == .failed)
        #expect(multi?.curlCode == Int(CURLM_BAD_HANDLE.rawValue))
        #expect(multi?.message.hasPrefix("curl_multi_add_handle failed: ") == true)
        #expect(multi?.message.count ?? 0 > "curl_multi_add_handle failed: ".count)
        let share = #expect(throws: TransportError.self) {
            try CurlRuntime.checkShare(CURLSHE_IN_USE, "curl_share_cleanup")
        }
        #expect(share?.kind == .failed)
        #expect(share?.curlCode == Int(CURLSHE_IN_USE.rawValue))
        #expect(throws: Never.self) { try CurlRuntime.checkMulti(CURLM_OK, "ok") }
    }
}
