import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// A server that trickles bytes just fast enough to dodge the idle timeout still ends at the total
/// timeout (`config.totalTimeout`, CLI `--max-time`).
@Suite(.timeLimit(.minutes(2))) struct TotalTimeoutTests {
    /// One byte every 0.5 s for far longer than any test runs.
    static let trickle = "/drip-bytes?total=100000&chunk=1&interval=500"

    @Test(arguments: Wire.allCases)
    func aTricklingServerFailsWithTimedOutAtTheTotalLimit(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader {
            $0.totalTimeout = 2
            $0.downloadTimeout = 15
        }
        let recorder = CallbackRecorder()
        let started = Date()
        downloader.downloadImage(with: server.url(Self.trickle), completed: recorder.completion())
        #expect(recorder.waitForTerminal(1, seconds: 20))
        let elapsed = Date().timeIntervalSince(started)
        let error = recorder.terminals.first?.error
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(elapsed >= 1.9, "the total timeout of 2 s fired after \(elapsed) s")
        // Bytes were still arriving: the idle timeout (15 s) was not what ended it.
        #expect(server.bytesSent(for: "/drip-bytes") >= 2)
    }

    @Test func theTotalTimeoutCoversEveryRedirectHop() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let downloader = server.downloader {
            $0.totalTimeout = 2
            $0.downloadTimeout = 15
        }
        let recorder = CallbackRecorder()
        let started = Date()
        downloader.downloadImage(with: server.url(Fixtures.slowRedirects), completed: recorder.completion())
        #expect(recorder.waitForTerminal(1, seconds: 20))
        let elapsed = Date().timeIntervalSince(started)
        let error = recorder.terminals.first?.error
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(elapsed >= 1.9 && elapsed < 3.5, "the total timeout of 2 s fired after \(elapsed) s")
        #expect(server.count(for: "/pixel.png") == 0)
    }

    @Test func sixTricklingServersDoNotStarveTheQueue() throws {
        let tricklers = try (0..<6).map { _ in try Fixtures.server() }
        let healthy = try Fixtures.server()
        defer {
            for server in tricklers + [healthy] { server.shutdown() }
        }
        let downloader = ImageDownloader(
            config: {
                var config = ImageDownloaderConfig()
                config.maxConcurrentDownloads = 6
                config.totalTimeout = 2
                return config
            }())
        let recorder = CallbackRecorder()
        // The six trickles take every slot first; the healthy URLs queue behind them.
        for (index, server) in tricklers.enumerated() {
            downloader.downloadImage(with: server.url(Self.trickle), completed: recorder.completion(index))
        }
        for index in 0..<10 {
            downloader.downloadImage(
                with: healthy.url("/files/pixel-1x1.png?n=\(index)"), completed: recorder.completion(100 + index))
        }
        #expect(recorder.waitForTerminal(16, seconds: 30))
        for index in 0..<6 {
            #expect(recorder.terminals(tag: index).map { $0.error?.code } == [.timedOut])
        }
        for index in 100..<110 {
            #expect(recorder.terminals(tag: index).first?.image?.width == 1, "healthy URL \(index - 100)")
        }
    }

    @Test func theCLIsMaxTimeEndsATrickle() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let output = try await CLIRunner.run(
            "webimage", ["get", "--json", "--max-time", "1", server.url(Self.trickle).absoluteString])
        #expect(output.status == 1)
        let error = try #require(try CLIRunner.jsonObjects(output).first?["error"] as? [String: Any])
        #expect(error["name"] as? String == "timedOut")
        let invalid = try await CLIRunner.run("webimage", ["get", "--max-time", "0", "http://127.0.0.1:9/x.png"])
        #expect(invalid.status == 64)
    }

    @Test func theCLIsMaxTimeCoversEveryRedirectHop() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        // With every hop given the whole 2 s afresh, the 4 s chain would succeed.
        let output = try await CLIRunner.run(
            "webimage", ["get", "--json", "--max-time", "2", server.url(Fixtures.slowRedirects).absoluteString])
        #expect(output.status == 1, "stdout: \(output.stdout)\nstderr: \(output.stderr)")
        let error = try #require(try CLIRunner.jsonObjects(output).first?["error"] as? [String: Any])
        #expect(error["name"] as? String == "timedOut")
    }
}
