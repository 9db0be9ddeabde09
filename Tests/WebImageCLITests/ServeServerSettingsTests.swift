import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `webimage serve`'s server settings from imgproxy's variables, through the built binary: the path prefix,
/// the read timeout, the connection limit, the metrics' own listener and namespace, and the download timeout.
@Suite("webimage serve: IMGPROXY_* server settings", .timeLimit(.minutes(5)))
struct ServeServerSettingsTests {
    static let key = ServeCommandTests.key
    static let salt = ServeCommandTests.salt
    static let health = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

    @Test("IMGPROXY_PATH_PREFIX: image, /info, health and metrics paths answer under it, others 404; signed after it")
    func pathPrefix() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(
            ["--allow-destination", "127.0.0.0/8"],
            environment: [
                "IMGPROXY_KEY": Self.key, "IMGPROXY_SALT": Self.salt, "IMGPROXY_PATH_PREFIX": "images/",
                "IMGPROXY_HEALTH_CHECK_PATH": "/healthz",
            ])
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString
        let path = "/rs:fill:64:32:0/plain/\(source)@png"
        let signature = try await ServeProcess.sign(path, key: Self.key, salt: Self.salt)
        let image = try await serve.get("/images/\(signature)\(path)")
        #expect(image.status == 200, "\(String(decoding: image.body, as: UTF8.self))")
        #expect(ServeProcess.pngSize(image.body)?.width == 64 && ServeProcess.pngSize(image.body)?.height == 32)
        #expect(try await serve.get("/\(signature)\(path)").status == 404)
        #expect(try await serve.get("/imagesx/\(signature)\(path)").status == 404)
        // imgproxy signs the path after the prefix: a signature over the prefix too does not match.
        let overPrefix = try await ServeProcess.sign("/images" + path, key: Self.key, salt: Self.salt)
        #expect(try await serve.get("/images/\(overPrefix)\(path)").status == 403)

        let infoSignature = try await ServeProcess.sign("/plain/\(source)", key: Self.key, salt: Self.salt)
        let info = try await serve.get("/images/info/\(infoSignature)/plain/\(source)")
        #expect(info.status == 200 && info.header("Content-Type") == "application/json")
        #expect(try await serve.get("/info/\(infoSignature)/plain/\(source)").status == 404)

        for answered in ["/images/health", "/images/healthz", "/images/health/ready", "/images/metrics"] {
            #expect(try await serve.get(answered).status == 200, "\(answered)")
        }
        for missing in ["/health", "/healthz", "/health/ready", "/metrics"] {
            #expect(try await serve.get(missing).status == 404, "\(missing)")
        }
        #expect(await serve.stop() == 0, "\(serve.stderr)")
        #expect(!serve.stderr.contains("is not a setting"), "\(serve.stderr)")

        // The flag wins over the variable.
        let flagged = try await ServeProcess.start(
            ["--allow-unsigned", "--path-prefix", "/p"], environment: ["IMGPROXY_PATH_PREFIX": "/images"])
        #expect(try await flagged.get("/p/health").status == 200)
        #expect(try await flagged.get("/images/health").status == 404)
        #expect(await flagged.stop() == 0)
    }

    @Test("IMGPROXY_READ_REQUEST_TIMEOUT: a connection that sends half a request head is closed unanswered")
    func readTimeout() async throws {
        let serve = try await ServeProcess.start(
            ["--allow-unsigned"], environment: ["IMGPROXY_READ_REQUEST_TIMEOUT": "1"])
        let partial = try RawConnection(port: serve.port)
        try partial.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  // no empty line: the head never ends
        let (data, closed) = await partial.readUntilClosed(waitingAtMost: 120)
        #expect(closed, "the connection is still open after two minutes")
        #expect(!String(decoding: data, as: UTF8.self).contains("200"), "\(String(decoding: data, as: UTF8.self))")
        // The server itself still answers a whole request.
        let whole = try RawConnection(port: serve.port)
        try whole.send(Self.health)
        #expect(await whole.readResponse(waitingAtMost: 60)?.hasPrefix("HTTP/1.1 200") == true)
        #expect(await serve.stop() == 0, "\(serve.stderr)")
    }

    @Test("IMGPROXY_MAX_CLIENTS=1: a second connection is not answered until the first closes")
    func maxClients() async throws {
        let serve = try await ServeProcess.start(
            ["--allow-unsigned"],
            environment: ["IMGPROXY_MAX_CLIENTS": "1", "IMGPROXY_READ_REQUEST_TIMEOUT": "600"])
        let first = try RawConnection(port: serve.port)
        try first.send(Self.health)
        #expect(await first.readResponse(waitingAtMost: 60)?.hasPrefix("HTTP/1.1 200") == true)
        // The first stays open (kept alive): the second connects (the system queues it) and waits unaccepted.
        let second = try RawConnection(port: serve.port)
        try second.send(Self.health)
        // An answer that must not come: a loaded machine can only make this pass later, never fail it.
        #expect(await second.readResponse(waitingAtMost: 3) == nil, "answered past the limit")
        first.hangUp()
        #expect(await second.readResponse(waitingAtMost: 120)?.hasPrefix("HTTP/1.1 200") == true)
        #expect(await serve.stop() == 0, "\(serve.stderr)")
    }

    @Test("IMGPROXY_PROMETHEUS_BIND: metrics on their own port, not on the main one; NAMESPACE starts every name")
    func metricsListener() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let metricsPort = try RawConnection.freePort()
        let serve = try await ServeProcess.start(
            ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"],
            environment: [
                "IMGPROXY_PROMETHEUS_BIND": "127.0.0.1:\(metricsPort)", "IMGPROXY_PROMETHEUS_NAMESPACE": "edge",
            ])
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString
        #expect(try await serve.get("/insecure/w:32/plain/\(source)@png").status == 200)
        #expect(try await serve.get("/metrics").status == 404)
        let scrape = try RawConnection(port: metricsPort)
        try scrape.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let reply = try #require(await scrape.readResponse(waitingAtMost: 60))
        #expect(reply.hasPrefix("HTTP/1.1 200"), "\(reply)")
        let body = String(reply[(reply.range(of: "\r\n\r\n")?.upperBound ?? reply.endIndex)...])
        let names = Set(PrometheusText.samples(body).keys.map { String($0.prefix { $0 != "{" }) })
        #expect(names.contains("edge_webimage_serve_requests_total"), "\(names.sorted())")
        #expect(names.contains { $0.hasPrefix("edge_webimage_downloads") }, "the downloader's: \(names.sorted())")
        #expect(names.allSatisfy { $0.hasPrefix("edge_") }, "\(names.sorted())")
        #expect(await serve.stop() == 0, "\(serve.stderr)")
    }

    @Test("IMGPROXY_DOWNLOAD_TIMEOUT: a source still sending after it fails as a source timeout, not the deadline")
    func downloadTimeout() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(
            ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"],
            environment: ["IMGPROXY_DOWNLOAD_TIMEOUT": "1"])
        // 16 bytes every 200 ms: never silent long enough for the idle timeout, minutes for the whole file.
        let slow = origin.url("/drip/coffee-progressive.jpg").absoluteString + "%3Fchunk%3D16%26interval%3D200"
        let reply = try await serve.get("/insecure/w:32/plain/\(slow)@png")
        let text = String(decoding: reply.body, as: UTF8.self)
        #expect(reply.status == 504, "\(text)")
        #expect(text.contains("the source did not answer in time"), "not the request's deadline: \(text)")
        #expect(await serve.stop() == 0, "\(serve.stderr)")
    }

    @Test("IMGPROXY_MAX_ANIMATION_FRAMES: 1 makes stills, as imgproxy; more is the most a source may have")
    func maxAnimationFrames() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        origin.setFile(name: "dance.gif", data: try ServeAnimationTests.animation())
        let path = "/insecure/w:60/plain/\(origin.url("/files/dance.gif").absoluteString)@gif"
        for (value, status, frames) in [("1", 200, 1), ("3", 422, 0), ("4", 200, 4)] {
            let serve = try await ServeProcess.start(
                ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"],
                environment: ["IMGPROXY_MAX_ANIMATION_FRAMES": value])
            let reply = try await serve.get(path)
            #expect(reply.status == status, "\(value): \(String(decoding: reply.body, as: UTF8.self))")
            if status == 200 {
                #expect(try ImageDecoderRegistry.shared.decode(reply.body).frames.count == frames, "\(value)")
            }
            #expect(await serve.stop() == 0, "\(serve.stderr)")
            #expect(!serve.stderr.contains("is not a setting"), "\(serve.stderr)")
        }
    }

    @Test("a malformed new variable stops the start with a message naming it")
    func malformedValues() async throws {
        let cases: [([String: String], String)] = [
            (["IMGPROXY_READ_REQUEST_TIMEOUT": "0"], "IMGPROXY_READ_REQUEST_TIMEOUT"),
            (["IMGPROXY_DOWNLOAD_TIMEOUT": "soon"], "IMGPROXY_DOWNLOAD_TIMEOUT"),
            (["IMGPROXY_MAX_CLIENTS": "-1"], "IMGPROXY_MAX_CLIENTS"),
            (["IMGPROXY_PROMETHEUS_BIND": "9464"], "IMGPROXY_PROMETHEUS_BIND"),
            (["IMGPROXY_PROMETHEUS_NAMESPACE": "9lives"], "IMGPROXY_PROMETHEUS_NAMESPACE"),
            (["IMGPROXY_WATERMARK_URL": "ftp://127.0.0.1/mark.png"], "IMGPROXY_WATERMARK_URL"),
            (["IMGPROXY_WATERMARK_DATA": "not base64!"], "IMGPROXY_WATERMARK_DATA"),
        ]
        try await Self.expectStartRefused(cases)
    }

    /// Starts `webimage serve` with each environment and expects it to stop before listening, naming the
    /// variable in its message.
    static func expectStartRefused(_ cases: [([String: String], String)]) async throws {
        for (environment, name) in cases {
            let run = try await CLIRunner.run(
                "webimage", ["serve", "--allow-unsigned", "--port", "0"], environment: environment,
                killAfterMilliseconds: 120_000)
            #expect(run.status != 0, "\(environment) started")
            #expect(run.stderr.contains(name), "\(environment): \(run.stderr)")
            #expect(!run.stdout.contains("listening"), "\(environment): \(run.stdout)")
        }
    }
}
