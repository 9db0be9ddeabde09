import Foundation
import LocalImageServer
import LocalImageServerTLS
import TestSupport
import Testing

/// Connection-level behaviour: TLS, keep-alive accounting, concurrency, hangs and aborts.
@Suite("LocalImageServer connections", .timeLimit(.minutes(5)))
struct LocalImageServerConnectionTests {
    private func makeServer(tls: LocalImageServer.TLSMode = .none) throws -> (LocalImageServer, ServerFixtures) {
        let fixtures = try ServerFixtures()
        let server = LocalImageServer(root: fixtures.folder, tls: tls)
        try server.start()
        return (server, fixtures)
    }

    @Test("TLS: verifying client fails, -k and --cacert succeed")
    func selfSignedTLS() async throws {
        let (server, fixtures) = try makeServer(tls: .selfSigned)
        defer {
            server.shutdown()
            fixtures.remove()
        }
        let url = server.url("/files/horse-rgba.png")
        #expect(url.scheme == "https")
        let certificate = try #require(server.certificateURL)

        let verifying = try await Curl.run([url.absoluteString])
        #expect(verifying.exitCode == 60)

        let insecure = try await Curl.run(["-k", url.absoluteString])
        #expect(insecure.exitCode == 0)
        #expect(insecure.body == (try fixtures.data("horse-rgba.png")))

        let trusting = try await Curl.run(["--cacert", certificate.path, url.absoluteString])
        #expect(trusting.exitCode == 0)
        #expect(trusting.status == 200)

        server.shutdown()
        #expect(!FileManager.default.fileExists(atPath: certificate.path))
    }

    @Test("request log keeps method, path, query, ordered headers and the reused connection")
    func requestLog() async throws {
        let (server, fixtures) = try makeServer()
        defer {
            server.shutdown()
            fixtures.remove()
        }
        let first = server.url("/files/pixel-1x1.png?v=1").absoluteString
        let second = server.url("/etag/pixel-1x1.png").absoluteString
        // Two URLs in one curl run share a keep-alive connection.
        let result = try await Curl.run([
            "-H", "X-First: 1", "-H", "x-second: 2", "-o", "/dev/null", first, "-o", "/dev/null", second,
        ])
        #expect(result.exitCode == 0)

        #expect(server.acceptedConnections == 1)
        #expect(server.count(for: "/files/pixel-1x1.png") == 1)
        #expect(server.count(for: "/etag/pixel-1x1.png") == 1)
        let entries = server.requests
        #expect(entries.count == 2)
        let entry = try #require(server.requests(for: "/files/pixel-1x1.png").first)
        #expect(entry.method == "GET")
        #expect(entry.query == "v=1")
        #expect(entry.status == 200)
        #expect(entry.outcome == .completed)
        #expect(entry.bytesSent == (try fixtures.data("pixel-1x1.png")).count)
        let names = entry.headers.map(\.name)
        let firstIndex = try #require(names.firstIndex(of: "X-First"))
        let secondIndex = try #require(names.firstIndex(of: "x-second"))
        #expect(firstIndex < secondIndex)
        #expect(entries[0].connectionID == entries[1].connectionID)
        #expect(entries[0].arrival <= entries[1].arrival)

        server.resetLog()
        #expect(server.requests.isEmpty)
        #expect(server.acceptedConnections == 0)
        #expect(server.count(for: "/files/pixel-1x1.png") == 0)
    }

    @Test("maxInFlight sees three parallel slow downloads, and one at a time sees one")
    func maxInFlight() async throws {
        let (server, fixtures) = try makeServer()
        defer {
            server.shutdown()
            fixtures.remove()
        }
        // Every response waits at one gate, opened once all three curl processes are in flight.
        let url = server.url("/bytes/2000?gate=overlap").absoluteString
        let launched = try (0..<3).map { _ in try Curl.launch([url]) }
        let overlapped = await server.waitUntil(timeout: .seconds(30)) { $0.inFlight == 3 }
        server.openGate("overlap")
        var results: [Curl.Result] = []
        for curl in launched { results.append(await curl.result()) }
        #expect(overlapped)
        for result in results {
            #expect(result.exitCode == 0)
            #expect(result.body == LocalImageServer.patternBytes(offset: 0, count: 2000))
        }
        #expect(server.maxInFlight == 3)
        // A client can have the whole body before the server has counted its response finished: wait for it.
        #expect(await server.waitUntil(timeout: .seconds(120)) { $0.inFlight == 0 })
        #expect(server.acceptedConnections == 3)

        server.resetLog()
        let quick = server.url("/files/pixel-1x1.png").absoluteString
        let sequential = try await Curl.run([
            "-o", "/dev/null", quick, "-o", "/dev/null", quick, "-o", "/dev/null", quick,
        ])
        #expect(sequential.exitCode == 0)
        #expect(server.count(for: "/files/pixel-1x1.png") == 3)
        #expect(server.maxInFlight == 1)
    }

    @Test("hang never answers: the client times out and the request ends as closed")
    func hang() async throws {
        let (server, fixtures) = try makeServer()
        defer {
            server.shutdown()
            fixtures.remove()
        }
        let result = try await Curl.run(["-m", "1", server.url("/hang").absoluteString])
        #expect(result.exitCode == 28)
        #expect(server.count(for: "/hang") == 1)
        let closed = await server.waitUntil { $0.requests(for: "/hang").first?.outcome == .connectionClosed }
        #expect(closed)
        #expect(server.requests(for: "/hang").first?.status == nil)
        #expect(server.inFlight == 0)
    }

    @Test("close mid-body sends half the bytes and closes")
    func closeMidBody() async throws {
        let (server, fixtures) = try makeServer()
        defer {
            server.shutdown()
            fixtures.remove()
        }
        let full = try fixtures.data("astronaut-baseline.jpg")
        let result = try await Curl.run([server.url("/close-mid-body/astronaut-baseline.jpg").absoluteString])
        #expect(result.exitCode == 18)
        #expect(result.header("Content-Length") == String(full.count))
        #expect(result.body == full.prefix(full.count / 2))
        let closed = await server.waitUntil {
            $0.requests(for: "/close-mid-body/astronaut-baseline.jpg").first?.outcome == .connectionClosed
        }
        #expect(closed)
        #expect(server.bytesSent(for: "/close-mid-body/astronaut-baseline.jpg") == full.count / 2)
    }

    @Test("an aborted large download stops the server early")
    func abortStopsStreaming() async throws {
        let (server, fixtures) = try makeServer()
        defer {
            server.shutdown()
            fixtures.remove()
        }
        let total = 200_000_000
        // curl sees the Content-Length, refuses the size and disconnects without reading the body.
        let result = try await Curl.run(["--max-filesize", "1000", server.url("/bytes/\(total)").absoluteString])
        #expect(result.exitCode == 63)
        let closed = await server.waitUntil {
            $0.requests(for: "/bytes/\(total)").first?.outcome == .connectionClosed
        }
        #expect(closed)
        // Only what the loopback socket buffers absorbed went out, far less than the body.
        #expect(server.bytesSent(for: "/bytes/\(total)") < total / 4)
        #expect(server.inFlight == 0)
    }

    @Test("a dripping download cut short by the client stops the drip")
    func dripAbort() async throws {
        let (server, fixtures) = try makeServer()
        defer {
            server.shutdown()
            fixtures.remove()
        }
        let path = "/drip/horse-rgba.png"
        let result = try await Curl.run(["-m", "1", server.url(path + "?chunk=100&interval=50").absoluteString])
        #expect(result.exitCode == 28)
        let closed = await server.waitUntil { $0.requests(for: path).first?.outcome == .connectionClosed }
        #expect(closed)
        let sent = server.bytesSent(for: path)
        let size = try fixtures.data("horse-rgba.png").count
        #expect(sent > 0 && sent < size)
        #expect(server.openConnections == 0)
    }

    @Test("a gate holds responses until it opens, then lets later ones straight through")
    func gateHoldsUntilOpened() async throws {
        let (server, fixtures) = try makeServer()
        defer {
            server.shutdown()
            fixtures.remove()
        }
        let url = server.url("/files/pixel-1x1.png?gate=g").absoluteString
        // A client that gives up while held: its request ends as closed, and opening later is harmless.
        let gaveUp = try await Curl.run(["-m", "1", url])
        #expect(gaveUp.exitCode == 28)
        #expect(server.requests(for: "/files/pixel-1x1.png").first?.status == nil)
        let held = try (0..<2).map { _ in try Curl.launch([url]) }
        #expect(await server.waitUntil { $0.inFlight == 2 })
        // The gave-up request's response still waits at the gate with the two held ones.
        #expect(await server.waitUntil { $0.waitingCount(atGate: "g") == 3 })
        #expect(server.requests(for: "/files/pixel-1x1.png").allSatisfy { $0.status == nil })
        server.openGate("g")
        for curl in held {
            let result = await curl.result()
            #expect(result.exitCode == 0)
            #expect(result.body == (try fixtures.data("pixel-1x1.png")))
        }
        #expect(server.waitingCount(atGate: "g") == 0)
        let after = try await Curl.run([url])
        #expect(after.exitCode == 0)
        #expect(server.requests(for: "/files/pixel-1x1.png").map(\.status) == [nil, 200, 200, 200])
    }

    @Test("delay holds the head back, and lifecycle calls are idempotent")
    func delayAndLifecycle() async throws {
        let (server, fixtures) = try makeServer()
        defer { fixtures.remove() }
        let delayed = try await Curl.run(["-m", "1", server.url("/files/pixel-1x1.png?delay=3000").absoluteString])
        #expect(delayed.exitCode == 28)
        #expect(server.count(for: "/files/pixel-1x1.png") == 1)

        try server.start()  // already running: no effect
        #expect(server.port > 0)
        server.shutdown()
        server.shutdown()
        #expect(server.port == 0)
        #expect(throws: LocalImageServer.StartError.self) { try server.start() }
    }
}
