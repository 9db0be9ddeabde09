import Foundation
import LocalImageServer
import Testing

@testable import WebImage

/// What only a multiplexed connection can get wrong: a cancel must reset one stream and leave the
/// connection to the others, and a strict request must never ride a connection an insecure request made.
@Suite(.timeLimit(.minutes(2))) struct HTTP2DownloaderTests {
    @Test func cancellingOneStreamResetsItAndKeepsTheConnectionForTheOthers() throws {
        let server = try Wire.http2.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()

        // A first download opens the connection; the next two multiplex on it.
        downloader.downloadImage(with: server.url("/files/pixel-1x1.png"), completed: recorder.completion(0))
        #expect(recorder.waitForTerminal(1))
        let hanging = downloader.downloadImage(with: server.url("/hang"), completed: recorder.completion(1))
        downloader.downloadImage(
            with: server.url("/drip/horse-rgba.png?chunk=4096&interval=20"), completed: recorder.completion(2))
        #expect(server.wait { $0.count(for: "/hang") == 1 && $0.count(for: "/drip/horse-rgba.png") == 1 })
        hanging?.cancel()
        #expect(recorder.waitForTerminal(2))
        downloader.drainCallbacks()

        #expect(recorder.terminals(tag: 1).map { $0.error?.code } == [.cancelled])
        #expect(recorder.terminals(tag: 2).first?.image?.width == 400)
        // The server saw the cancelled stream end early (RST_STREAM), on the one connection still open.
        #expect(server.wait { $0.requests(for: "/hang").first?.outcome == .connectionClosed })
        #expect(server.acceptedConnections == 1)
        #expect(server.openConnections == 1)
        #expect(Set(server.requests.map(\.connectionID)).count == 1)

        // The connection still carries new streams.
        downloader.downloadImage(with: server.url("/files/horse-rgba.png?after"), completed: recorder.completion(3))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 3).first?.error == nil)
        #expect(server.acceptedConnections == 1)
        #expect(server.requests.allSatisfy { $0.request.httpVersion == "2" })
    }

    @Test(arguments: Wire.allCases)
    func redirectsAreFollowedAndBoundedThroughTheDownloader(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        let followed = downloader.downloadImage(
            with: server.url("/redirect/3?to=horse-rgba.png"), completed: recorder.completion(1))
        downloader.downloadImage(with: server.url("/redirect/11"), completed: recorder.completion(2))
        downloader.downloadImage(with: server.url("/redirect-file"), completed: recorder.completion(3))
        #expect(recorder.waitForTerminal(3))
        downloader.drainCallbacks()
        #expect(recorder.terminals(tag: 1).first?.image?.width == 400)
        #expect(followed?.response?.url.path == "/files/horse-rgba.png")
        #expect(followed?.metrics?.redirectCount == 3)
        #expect(followed?.metrics?.httpVersion == wire.httpVersion)
        #expect(recorder.terminals(tag: 2).first?.error?.code == .tooManyRedirects)
        #expect(recorder.terminals(tag: 3).first?.error?.code == .unsupportedProtocol)
    }

    /// The insecure request's connection is open and busy (a slow stream) when the strict request for
    /// the same host starts: multiplexing onto it would skip the certificate check.
    @Test(arguments: Wire.allCases)
    func aStrictRequestNeverRidesAnInsecureCallersConnection(wire: Wire) throws {
        let server = try wire.startTLSServer()
        defer { server.shutdown() }
        let downloader = ImageDownloader()  // trusts only the system store: the server's certificate fails
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/drip/horse-rgba.png?chunk=512&interval=30"), options: .allowInvalidSSLCertificates,
            completed: recorder.completion(1))
        #expect(server.wait { $0.count(for: "/drip/horse-rgba.png") == 1 })
        downloader.downloadImage(with: server.url("/files/pixel-1x1.png"), completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(2))
        #expect(recorder.terminals(tag: 1).first?.image?.width == 400)
        #expect(recorder.terminals(tag: 2).first?.error?.code == .sslFailure)
        #expect(server.count(for: "/files/pixel-1x1.png") == 0)
    }
}
