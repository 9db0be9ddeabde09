import Foundation
import LocalImageServer
import LocalImageServerTLS
import ServerTestSupport
import Synchronization
import TestSupport
import Testing

@testable import WebImageTransport

@Suite(.timeLimit(.minutes(5))) struct CurlTransportTests {
    let server: LocalImageServer
    let transport: CurlTransport

    init() throws {
        server = try Fixtures.server()
        transport = try CurlTransport()
    }

    @Test func okBodyIsByteIdenticalWithHeadersAndFinalURL() throws {
        let expected = try Fixtures.corpusFile("astronaut-baseline.jpg")
        let probe = try transport.run(TransferRequest(url: server.url("/files/astronaut-baseline.jpg")))
        #expect(probe.error == nil)
        #expect(probe.body == expected)
        let response = try #require(probe.response)
        #expect(response.statusCode == 200)
        #expect(response.mimeType == "image/jpeg")
        #expect(response.expectedContentLength == Int64(expected.count))
        #expect(response.url == server.url("/files/astronaut-baseline.jpg"))
        #expect(probe.metrics?.bytesReceived == Int64(expected.count))
        #expect(probe.metrics?.httpVersion == "1.1")
    }

    @Test(arguments: [404, 500])
    func errorStatusesAreResponsesNotTransportErrors(status: Int) throws {
        let probe = try transport.run(TransferRequest(url: server.url("/status/\(status)")))
        #expect(probe.error == nil)
        #expect(probe.response?.statusCode == status)
    }

    @Test func refusedConnectionIsCannotConnect() throws {
        // Bind and close a listener to get a port nobody listens on.
        let closed = LocalImageServer()
        try closed.start()
        let url = closed.url("/files/x")
        closed.shutdown()
        let probe = try transport.run(TransferRequest(url: url))
        #expect(probe.error?.kind == .cannotConnect)
        #expect(probe.error?.curlCode == 7)
        #expect(probe.error?.message.isEmpty == false)
    }

    @Test func idleTimeoutFiresOnAHangButNotOnASlowSteadyStream() throws {
        var hang = TransferRequest(url: server.url("/hang"))
        hang.idleTimeout = 1
        let started = Date()
        let hung = try transport.run(hang)
        let elapsed = Date().timeIntervalSince(started)
        #expect(hung.error?.kind == .timedOut)
        #expect(elapsed >= 0.9, "an idle timeout of 1 s fired after \(elapsed) s")

        // 3,000 bytes, 100 every 100 ms: 3 s in all, but never 1 s without data.
        var steady = TransferRequest(url: server.url("/drip-bytes?total=3000&chunk=100&interval=100"))
        steady.idleTimeout = 1
        let slow = try transport.run(steady)
        #expect(slow.error == nil)
        #expect(slow.body.count == 3000)
    }

    @Test func redirectsAreFollowedAndBounded() throws {
        let three = try transport.run(TransferRequest(url: server.url("/redirect/3?to=horse-rgba.png")))
        #expect(three.error == nil)
        #expect(three.response?.statusCode == 200)
        #expect(three.response?.url.path == "/files/horse-rgba.png")
        #expect(three.metrics?.redirectCount == 3)
        #expect(three.body == (try Fixtures.corpusFile("horse-rgba.png")))

        let eleven = try transport.run(TransferRequest(url: server.url("/redirect/11")))
        #expect(eleven.error?.kind == .tooManyRedirects)

        let loop = try transport.run(TransferRequest(url: server.url("/redirect-loop")))
        #expect(loop.error?.kind == .tooManyRedirects)
    }

    @Test func redirectToFileSchemeIsRefused() throws {
        var request = TransferRequest(url: server.url("/redirect-file"))
        request.allowedProtocols = ["http", "https", "file"]  // even with file: allowed for the first URL
        let probe = try transport.run(request)
        #expect(probe.error?.kind == .unsupportedProtocol)
        #expect(!String(decoding: probe.body, as: UTF8.self).contains("root:"))
    }

    @Test func bodyPastTheLimitIsAbortedEarly() throws {
        let total = 64 * 1024 * 1024
        var request = TransferRequest(url: server.url("/bytes/\(total)"))
        request.maximumResponseSize = 1024 * 1024
        let declared = try transport.run(request)
        #expect(declared.error?.kind == .responseTooLarge)

        // Without Content-Length the limit is enforced while the body streams.
        server.setFile(name: "big.bin", data: Data(repeating: 7, count: 8 * 1024 * 1024))
        var chunked = TransferRequest(url: server.url("/chunked/big.bin"))
        chunked.maximumResponseSize = 1024 * 1024
        let streamed = try transport.run(chunked)
        #expect(streamed.error?.kind == .responseTooLarge)
        #expect(streamed.body.count <= 1024 * 1024)
        #expect(server.wait { $0.requests(for: "/bytes/\(total)").first?.outcome != .inFlight })
        #expect(server.bytesSent(for: "/bytes/\(total)") < total / 2, "the server kept sending after the abort")
    }

    @Test func cancelFromAnotherThreadEndsARunningTransferPromptly() throws {
        let probe = TransferProbe()
        weak var released: CurlTransfer?
        do {
            let transfer: CurlTransfer = try transport.makeTransfer(
                TransferRequest(url: server.url("/drip-bytes?total=100000&chunk=100&interval=50")), delegate: probe)
            released = transfer
            transport.start(transfer)
            #expect(server.wait { $0.count(for: "/drip-bytes") == 1 })
            let cancelled = Date()
            DispatchQueue.global().async { [transport] in transport.cancel(transfer) }
            #expect(probe.wait(seconds: 5))
            #expect(Date().timeIntervalSince(cancelled) < 2)
        }
        #expect(probe.error?.kind == .cancelled)
        #expect(probe.record.withLock { $0.completions } == 1)
        // The transport dropped its reference on completion, so the easy handle was freed (deinit).
        #expect(poll { released == nil })
    }

    @Test func manyConcurrentTransfersShareSixConnections() throws {
        let capped = try CurlTransport(maxConnectionsPerHost: 6)
        let expected = try Fixtures.corpusFile("horse-lossy-alpha.webp")
        let probes = (0..<200).map { _ in TransferProbe() }
        for probe in probes {
            capped.start(
                try capped.makeTransfer(
                    TransferRequest(url: server.url("/files/horse-lossy-alpha.webp")), delegate: probe))
        }
        for probe in probes { #expect(probe.wait()) }
        #expect(probes.allSatisfy { $0.error == nil && $0.body == expected })
        #expect(server.count(for: "/files/horse-lossy-alpha.webp") == 200)
        #expect(server.acceptedConnections <= 6)
        let reused = probes.filter { $0.metrics?.newConnections == 0 }.count
        #expect(reused >= 194)
    }

    @Test func basicAuthCredentialsAreSentOnlyAfterTheChallenge() throws {
        let path = "/auth/basic/ann/secret/pixel-1x1.png"
        let anonymous = try transport.run(TransferRequest(url: server.url(path)))
        #expect(anonymous.response?.statusCode == 401)

        server.resetLog()
        var request = TransferRequest(url: server.url(path))
        request.username = "ann"
        request.password = "secret"
        request.allowsCredentialsOverPlainHTTP = true  // this server speaks plain http
        let authorized = try transport.run(request)
        #expect(authorized.response?.statusCode == 200)
        let attempts = server.requests(for: path)
        #expect(attempts.count == 2)
        #expect(attempts.first?.request.header("Authorization") == nil)
        #expect(attempts.last?.request.header("Authorization")?.hasPrefix("Basic ") == true)
    }

    @Test func credentialsDoNotFollowARedirectToAnotherHost() throws {
        let target = "http://localhost:\(server.port)/headers"
        var request = TransferRequest(url: server.url("/redirect-to?url=\(target)"))
        request.username = "ann"
        request.password = "secret"
        request.allowsCredentialsOverPlainHTTP = true
        _ = try transport.run(request)
        let echoed = server.requests(for: "/headers")
        #expect(echoed.count == 1)
        #expect(echoed.first?.request.header("Authorization") == nil)
    }

    @Test func cookiesOnlyWhenEnabled() throws {
        let isolated = try CurlTransport()
        var set = TransferRequest(url: server.url("/cookies/set?flavour=oat"))
        set.handlesCookies = true
        _ = try isolated.run(set)

        let off = try isolated.run(TransferRequest(url: server.url("/cookies/echo")))
        #expect(String(decoding: off.body, as: UTF8.self) == "")

        var echo = TransferRequest(url: server.url("/cookies/echo"))
        echo.handlesCookies = true
        let on = try isolated.run(echo)
        #expect(String(decoding: on.body, as: UTF8.self).contains("flavour=oat"))
    }

    @Test func gzipBodyArrivesDecoded() throws {
        let expected = try Fixtures.corpusFile("horse-rgba.png")
        let probe = try transport.run(TransferRequest(url: server.url("/gzip/horse-rgba.png")))
        #expect(probe.response?.headers["Content-Encoding"] == "gzip")
        #expect(probe.body == expected)
    }

    @Test func validationVerdictAbortsWithTheStoredError() throws {
        struct Refusal: Error {}
        let probe = try transport.run(TransferRequest(url: server.url("/files/astronaut-36mp.jpg"))) { _ in Refusal() }
        #expect(probe.error?.kind == .aborted)
        #expect(probe.error?.reason is Refusal)
        #expect(probe.body.isEmpty)
    }

    @Test func shutdownCancelsEverythingAndFreesTheMultiHandle() throws {
        let doomed = try CurlTransport()
        let probe = TransferProbe()
        doomed.start(try doomed.makeTransfer(TransferRequest(url: server.url("/hang")), delegate: probe))
        #expect(server.wait { $0.count(for: "/hang") == 1 })
        doomed.shutdown()
        #expect(probe.wait(seconds: 5))
        #expect(probe.error?.kind == .cancelled)
        #expect(doomed.waitUntilStopped(timeout: 5))
        #expect(doomed.isStopped)
        let late = TransferProbe()
        doomed.start(try doomed.makeTransfer(TransferRequest(url: server.url("/files/pixel-1x1.png")), delegate: late))
        #expect(late.wait(seconds: 1))
        #expect(late.error?.kind == .cancelled)
    }
}

@Suite(.timeLimit(.minutes(5))) struct TLSTransportTests {
    @Test func verificationOnFailsAndOffSucceedsAgainstASelfSignedServer() throws {
        let server = try Fixtures.server(tls: .selfSigned)
        defer { server.shutdown() }
        let transport = try CurlTransport()
        #expect(server.baseURL.scheme == "https")
        let verified = try transport.run(TransferRequest(url: server.url("/files/pixel-1x1.png")))
        #expect(verified.error?.kind == .sslFailure)

        var insecure = TransferRequest(url: server.url("/files/pixel-1x1.png"))
        insecure.verifiesTLS = false
        let unverified = try transport.run(insecure)
        #expect(unverified.error == nil)
        #expect(unverified.response?.statusCode == 200)
        #expect(unverified.body == (try Fixtures.corpusFile("pixel-1x1.png")))
        #expect((unverified.metrics?.tlsHandshakeTime ?? 0) > 0)
    }
}

@Suite(.timeLimit(.minutes(5))) struct TransportParallelismTests {
    @Test func aSlowFirstResponseDoesNotHoldBackTheNextTransfer() throws {
        let server = try Fixtures.server()
        let transport = try CurlTransport()
        let hanging = TransferProbe()
        transport.start(try transport.makeTransfer(TransferRequest(url: server.url("/hang")), delegate: hanging))
        #expect(server.wait { $0.count(for: "/hang") == 1 })
        let quick = try transport.run(TransferRequest(url: server.url("/files/pixel-1x1.png")))
        #expect(quick.error == nil)
        #expect(hanging.record.withLock { $0.result } == nil)
        transport.shutdown()
        #expect(hanging.wait(seconds: 5))
    }
}
