import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `webimage serve`'s operational flags through the built binary: the result cache, `/metrics`, the access
/// log on stderr, readiness while draining, SIGTERM with requests in flight, and the listen address from
/// the environment.
@Suite("webimage serve: operations", .timeLimit(.minutes(5)))
struct ServeOperationsCommandTests {
    static let unsigned = ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"]

    /// The value of the sample `name` in `/metrics`, nil when absent.
    static func metric(_ serve: ServeProcess, _ name: String) async throws -> Double? {
        let text = String(decoding: try await serve.get("/metrics").body, as: UTF8.self)
        return PrometheusText.samples(text)[name]
    }

    @Test("--cache-dir serves a repeat from disk: the origin is asked once, the hit is counted and logged")
    func resultCache() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let serve = try await ServeProcess.start(Self.unsigned + ["--cache-dir", folder.path, "--cache-size", "16M"])
        let path = "/insecure/rs:fill:64:64/plain/\(origin.url("/files/coffee-progressive.jpg").absoluteString)@png"
        let first = try await serve.get(path)
        let second = try await serve.get(path)
        #expect(first.status == 200 && second.status == 200)
        #expect(second.body == first.body)
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 1)
        #expect(try await Self.metric(serve, "webimage_serve_result_cache_hits_total") == 1)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("index.sqlite").path))
        #expect(await serve.stop() == 0)

        // One access-log line per request on stderr, the /metrics scrape (a debug line) not among them.
        let lines = serve.stderr.split(separator: "\n").filter {
            $0.contains("request") && $0.contains("rs:fill:64:64")
        }
        #expect(lines.count == 2, "\(serve.stderr)")
        #expect(lines.first?.contains("cache=miss") == true && lines.last?.contains("cache=hit") == true)
        #expect(lines.allSatisfy { $0.contains("status=200") && $0.contains("format=png") })
    }

    @Test("SIGTERM with requests held at the origin: readiness turns 503, the listener closes, all end 200, exit 0")
    func drain() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(
            Self.unsigned + ["--max-concurrency", "4", "--drain-delay", "5", "--drain-timeout", "120"])
        #expect(try await serve.get("/health/ready").status == 200)
        let files = ["coffee-progressive.jpg", "horse-rgba.png", "coffee-progressive.jpg"]
        let paths = files.enumerated().map { index, file in
            "/insecure/w:\(40 + index)/plain/\(origin.url("/files/\(file)").absoluteString)%3Fgate%3Ddrain\(index)@png"
        }
        let replies = try await withThrowingTaskGroup(of: ServeProcess.Reply.self) { group in
            for path in paths { group.addTask { try await serve.get(path) } }
            let held = await pollAsync(seconds: 120) {
                (0..<paths.count).allSatisfy { origin.waitingCount(atGate: "drain\($0)") == 1 }
            }
            #expect(held, "all three requests are in flight")
            serve.terminate()
            // The listener stays open for --drain-delay, saying "not ready"; then it closes.
            var status = 0
            for _ in 0..<200 where status != 503 {
                status = try await serve.get("/health/ready").status
                if status != 503 { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(status == 503)
            for _ in 0..<3000 where status != 0 {
                status = try await serve.get("/health").status  // curl's 000: the connection was refused
                if status != 0 { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(status == 0, "the listener closed after the drain delay")
            // Only now may the held requests finish: they must not have been cut by the close.
            for index in paths.indices { origin.openGate("drain\(index)") }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(replies.count == 3)
        for reply in replies {
            #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            #expect(ServeProcess.pngSize(reply.body) != nil)
        }
        #expect(await serve.stop() == 0, "\(serve.stderr)")
        #expect(serve.stderr.contains("draining"))
    }

    @Test("a request still held when --drain-timeout passes is cut, and the exit is still 0")
    func drainTimeout() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(Self.unsigned + ["--drain-timeout", "1"])
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString + "%3Fgate%3Dforever"
        async let held = serve.get("/insecure/w:20/plain/\(source)@png")
        #expect(await pollAsync(seconds: 120) { origin.waitingCount(atGate: "forever") == 1 })
        let started = Date()
        #expect(await serve.stop() == 0, "\(serve.stderr)")
        #expect(Date().timeIntervalSince(started) < 60, "the timeout, not the origin, ended the drain")
        let reply = try await held
        #expect(reply.status != 200, "the held request could not have finished")
        origin.openGate("forever")
    }

    @Test("WEBIMAGE_HOST and WEBIMAGE_PORT say where to listen when the flags are absent")
    func listenFromEnvironment() async throws {
        let serve = try await ServeProcess.start(
            Self.unsigned, environment: ["WEBIMAGE_HOST": "127.0.0.1", "WEBIMAGE_PORT": "0"], listenFlags: false)
        #expect(try await serve.get("/health").status == 200)
        #expect(await serve.stop() == 0)
        let bad = try await CLIRunner.run(
            "webimage", ["serve", "--allow-unsigned"], environment: ["WEBIMAGE_PORT": "eighty"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("WEBIMAGE_PORT"), "\(bad.stderr)")
    }

    @Test("bad operational flags are refused with the flag's name")
    func validation() async throws {
        for (arguments, flag) in [
            (["--cache-size", "10X"], "--cache-size"), (["--cache-size", "0"], "--cache-size"),
            (["--max-concurrency", "0"], "--max-concurrency"), (["--max-queue", "-1"], "--max-queue"),
            (["--drain-timeout", "-1"], "--drain-timeout"),
        ] {
            let result = try await CLIRunner.run("webimage", ["serve", "--allow-unsigned"] + arguments)
            #expect(result.status != 0)
            #expect(result.stderr.contains(flag), "\(arguments): \(result.stderr)")
        }
    }
}
