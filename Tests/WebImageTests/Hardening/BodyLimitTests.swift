import Foundation
import LocalImageServer
import Testing

@testable import WebImage

/// A redirect's body is never read past a few kilobytes.
@Suite(.timeLimit(.minutes(2))) struct BodyLimitTests {
    @Test func aRedirectsEndlessBodyIsNotRead() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        // A terabyte in chunks (no length to refuse up front), written only as fast as the client reads.
        server.route("/endless-redirect") { _ in
            LocalImageServer.Response(
                status: 302, headers: [("Location", "/pixel.png")], body: .pattern(count: 1 << 40),
                delivery: .chunked(chunkSize: 65_536))
        }
        let downloader = server.downloader { $0.totalTimeout = 5 }
        let recorder = CallbackRecorder()
        downloader.downloadImage(with: server.url("/endless-redirect"), completed: recorder.completion())
        #expect(recorder.waitForTerminal(1, seconds: 30))
        let terminal = recorder.terminals.first
        #expect(terminal?.error == nil, "\(String(describing: terminal?.error))")
        #expect(terminal?.image?.width == 1)
        // What the socket buffers held when the client stopped reading, not the body.
        #expect(server.bytesSent(for: "/endless-redirect") < 16 << 20)
    }
}
