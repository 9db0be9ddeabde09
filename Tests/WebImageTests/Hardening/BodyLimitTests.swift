import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// Bodies are bounded together as well as one by one: a downloader's downloads share
/// `maximumInFlightBodyBytes`, and a redirect's body is never read past a few kilobytes.
@Suite(.timeLimit(.minutes(2))) struct BodyLimitTests {
    static let limit: Int64 = 1 << 20

    @Test func bodiesInFlightShareOneLimit() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        // 700,000 bytes at once, then nothing for longer than the test runs.
        server.route("/held") { _ in
            LocalImageServer.Response(
                headers: [("Content-Type", "application/octet-stream")], body: .pattern(count: 4_000_000),
                delivery: .drip(chunkSize: 700_000, interval: .seconds(60)))
        }
        let downloader = server.downloader { $0.maximumInFlightBodyBytes = Self.limit }
        let recorder = CallbackRecorder()
        let holding = EventCounter()
        let held = downloader.downloadImage(
            with: server.url("/held"), options: .avoidDecodeImage,
            progress: { received, _, _ in if received >= 700_000 { holding.record() } },
            completed: recorder.completion(1))
        #expect(holding.wait(forMoreThan: 0, seconds: 20))

        // 700,000 more would hold 1.4 MB together: refused, though the body alone is within every limit.
        downloader.downloadImage(
            with: server.url("/bytes/700000"), options: .avoidDecodeImage, completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(1))
        let refused = recorder.terminals(tag: 2).first?.error
        // Other downloads hold the room, so this one may succeed later: its own code, not responseTooLarge.
        #expect(refused?.code == .inFlightBodyLimit, "\(String(describing: refused))")
        #expect(refused?.message.contains("maximumInFlightBodyBytes") == true)
        #expect(refused.map(RetryPolicy.isRetryable) == true)

        // Once the held body is dropped its bytes count no more.
        // (The cancel reaches the transport before the next download's start does.)
        held?.cancel()
        #expect(recorder.waitForTerminal(1))
        downloader.downloadImage(
            with: server.url("/bytes/700000?again"), options: .avoidDecodeImage, completed: recorder.completion(3))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 3).first?.data?.count == 700_000)
        #expect(downloader.bodyBudgetForTesting.bytesInUse == 0)
    }

    @Test func aBodyAloneAboveTheLimitFailsInsteadOfWaiting() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let downloader = server.downloader { $0.maximumInFlightBodyBytes = Self.limit }
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/bytes/\(2 << 20)"), options: .avoidDecodeImage, completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        let error = recorder.terminals.first?.error
        #expect(error?.code == .responseTooLarge, "\(String(describing: error))")
        #expect(error?.message.contains("alone") == true)
        #expect(downloader.bodyBudgetForTesting.bytesInUse == 0)
    }

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
