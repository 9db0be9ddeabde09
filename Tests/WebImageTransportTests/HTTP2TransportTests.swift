import Foundation
import LocalImageServer
import LocalImageServerTLS
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImageTransport

/// The transport over HTTP/2 with TLS: the loopback server offers `h2` by ALPN and curl multiplexes its
/// transfers on one connection (PIPEWAIT).
@Suite(.timeLimit(.minutes(2))) struct HTTP2TransportTests {
    /// Before the fix, a pooled easy handle that had served a stream of a still-busy HTTP/2 connection
    /// refused CURLOPT_BUFFERSIZE, and every later transfer failed with invalidDownloadOperation.
    @Test func twoHundredMultiplexedTransfersOnReusedHandlesAllSucceed() throws {
        let server = try Fixtures.server(tls: .selfSignedHTTP2)
        defer { server.shutdown() }
        let transport = try CurlTransport()
        let expected = try Fixtures.corpusFile("horse-palette-trns.png")
        var request = TransferRequest(url: server.url("/files/horse-palette-trns.png"))
        request.caBundlePath = server.certificateURL?.path

        // Six in flight at a time, each finished transfer handing its handle back to the pool while the
        // other streams still use the connection.
        var probes: [TransferProbe] = []
        for batch in 0..<(200 / 6 + 1) {
            let batchProbes = try (0..<min(6, 200 - batch * 6)).map { index -> TransferProbe in
                var item = request
                item.url = server.url("/files/horse-palette-trns.png?n=\(batch * 6 + index)")
                let probe = TransferProbe()
                transport.start(try transport.makeTransfer(item, delegate: probe))
                return probe
            }
            for probe in batchProbes { #expect(probe.wait()) }
            probes += batchProbes
        }
        #expect(probes.count == 200)
        let failures = probes.compactMap(\.error)
        #expect(failures.isEmpty, "first failure: \(String(describing: failures.first))")
        #expect(probes.allSatisfy { $0.body == expected })
        #expect(probes.allSatisfy { $0.metrics?.httpVersion == "2" })
        #expect(server.requests.allSatisfy { $0.request.httpVersion == "2" })
        #expect(server.acceptedConnections <= 2, "\(server.acceptedConnections) connections for 200 streams")
        #expect(transport.liveHandleCount <= 16)

        transport.shutdown()
        #expect(transport.waitUntilStopped(timeout: 10))
        probes.removeAll()
        #expect(transport.liveHandleCount == 0)
    }

    @Test func aClientThatOffersOnlyHTTP1FallsBackOnTheSameServer() async throws {
        let server = try Fixtures.server(tls: .selfSignedHTTP2)
        defer { server.shutdown() }
        let certificate = try #require(server.certificateURL)
        for (flag, version) in [("--http1.1", "1.1"), ("--http2", "2")] {
            let result = try await Curl.run([
                flag, "--cacert", certificate.path, "-w", "%{http_version}",
                server.url("/files/pixel-1x1.png").absoluteString,
            ])
            #expect(result.exitCode == 0)
            #expect(result.writeOut == version)
            #expect(result.body == (try Fixtures.corpusFile("pixel-1x1.png")))
            #expect(server.requests.last?.request.httpVersion == version)
        }
    }
}
