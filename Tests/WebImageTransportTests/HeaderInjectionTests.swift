import Foundation
import Testing

@testable import WebImageTransport

/// The transport refuses a header field with CR or LF before anything is sent, whoever built the request.
/// (Through the downloader and the CLI: WebImageTests' HeaderInjectionTests.)
@Suite(.timeLimit(.minutes(2))) struct HeaderInjectionTests {
    static let injected = "1\r\nX-Injected: yes"

    @Test func theTransportRefusesSuchFieldsToo() throws {
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        var request = TransferRequest(url: try #require(URL(string: "http://127.0.0.1:9/x")))
        request.headers["X-Direct"] = Self.injected
        let error = #expect(throws: TransportError.self) {
            try transport.makeTransfer(request, delegate: TransferProbe())
        }
        #expect(error?.kind == .setupFailed)
    }
}
