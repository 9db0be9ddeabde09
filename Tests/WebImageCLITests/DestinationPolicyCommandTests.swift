import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

/// The destination policy through the built `webimage`: `get` connects anywhere unless `--public-only`,
/// `bulk` connects to public addresses only unless `--allow-destination` or `--allow-private-destinations`
/// says otherwise. Every URL here spells a loopback address.
@Suite("webimage destination policy", .timeLimit(.minutes(5)))
struct DestinationPolicyCommandTests {
    /// The corpus server on 127.0.0.1 and a listener on ::1, with a URL of each for every spelling of
    /// `Loopback.spellings` plus `localhost`.
    struct Targets {
        let server: LocalImageServer
        let ipv6: LoopbackListener
        let urls: [String]

        init() throws {
            let server = try Fixtures.server()
            let ipv6 = try LoopbackListener(address: "::1")
            let spelled = Loopback.spellings.map { host in
                "http://\(host):\(host == "[::1]" ? ipv6.port : server.port)/files/pixel-1x1.png"
            }
            urls = spelled + ["http://localhost:\(server.port)/files/pixel-1x1.png"]
            self.server = server
            self.ipv6 = ipv6
        }

        /// Requests (or connections) either listener saw.
        var requests: Int { max(server.requests.count, server.acceptedConnections) + ipv6.requests }

        func stop() {
            server.shutdown()
            ipv6.stop()
        }
    }

    @Test("get --public-only refuses every spelling of loopback, sending nothing; get alone connects")
    func getPublicOnly() async throws {
        let targets = try Targets()
        defer { targets.stop() }
        let run = try await CLIRunner.run("webimage", ["get", "--public-only", "--json"] + targets.urls)
        #expect(run.status == 1, "\(run.stderr)")
        let objects = try CLIRunner.jsonObjects(run)
        try #require(objects.count == targets.urls.count, "\(run.stdout)\n\(run.stderr)")
        for object in objects {
            let error = object["error"] as? [String: Any]
            #expect(error?["name"] as? String == "destinationNotAllowed", "\(object)")
            #expect(error?["code"] as? Int == 3010)
        }
        #expect(targets.requests == 0)

        // Without the flag, get keeps the library's default and reaches the server by an odd spelling.
        let open = try await CLIRunner.run("webimage", ["get", "--json", targets.urls[1]])
        #expect(open.status == 0, "\(open.stderr)")
        #expect(targets.server.count(for: "/files/pixel-1x1.png") == 1)
    }

    @Test("bulk refuses loopback by default; --allow-destination and --allow-private-destinations open it")
    func bulkDefaults() async throws {
        let targets = try Targets()
        defer { targets.stop() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try BulkCommandTests.writeList(targets.urls, to: folder)

        func bulk(_ name: String, _ extra: [String], status: Int32 = 0) async throws -> [[String: Any]] {
            let output = folder.appendingPathComponent(name)
            let run = try await CLIRunner.run(
                "webimage", ["bulk", list.path, "--output", output.path, "--size", "16"] + extra)
            #expect(run.status == status, "\(run.stderr)")
            // Every row refused: the run names the option that opens the addresses, and exits with 2.
            #expect(status == 0 || run.stderr.contains("--allow-private-destinations"), "\(run.stderr)")
            return try BulkInputTests.rows(output)
        }

        let refused = try await bulk("default", [], status: 2)
        #expect(refused.count == targets.urls.count)
        #expect(refused.allSatisfy { $0["error_code"] as? String == "destinationNotAllowed" }, "\(refused)")
        #expect(targets.requests == 0)

        // 127.0.0.0/8 admits the IPv4 spellings of it (and ::ffff:127.0.0.1, the same address), not 0.0.0.0
        // or ::1; localhost connects over 127.0.0.1.
        let loopback = try await bulk("loopback", ["--allow-destination", "127.0.0.0/8"])
        let codes = loopback.map { $0["error_code"] as? String ?? "none" }
        let hosts = Loopback.spellings + ["localhost"]
        let expected = hosts.map { $0 == "0" || $0 == "[::1]" ? "destinationNotAllowed" : "none" }
        #expect(codes == expected, "\(zip(hosts, codes).map { "\($0) \($1)" })")
        #expect(targets.ipv6.requests == 0)

        let open = try await bulk("open", ["--allow-private-destinations"])
        #expect(!open.contains { $0["error_code"] as? String == "destinationNotAllowed" }, "\(open)")
        #expect(targets.ipv6.requests == 1)
    }

    @Test("bulk does not follow a redirect from an allowed address to a refused one")
    func bulkRedirect() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let other = try LoopbackListener(address: "127.0.0.2")
        defer { other.stop() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = "http://127.0.0.2:\(other.port)/inside.png"
        let redirect = server.url(
            "/redirect-to?url=\(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
        let list = try BulkCommandTests.writeList([redirect.absoluteString], to: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            ["bulk", list.path, "--output", output.path, "--size", "16", "--allow-destination", "127.0.0.1/32"])
        // The only row was refused: exit 2 and the option that opens it.
        #expect(run.status == 2 && run.stderr.contains("--allow-destination"), "\(run.stderr)")
        let row = try #require(try BulkInputTests.rows(output).first)
        #expect(row["error_code"] as? String == "destinationNotAllowed", "\(row)")
        #expect((row["error_message"] as? String)?.contains("127.0.0.2") == true, "\(row)")
        #expect(server.count(for: "/redirect-to") == 1)
        #expect(other.requests == 0)
    }

    /// With a proxy, curl connects to the proxy: the policy judges the proxy's address (127.0.0.3 here), never
    /// the URL's host (127.0.0.2), which only the proxy would connect to. Nothing listens on either.
    @Test("behind a proxy, bulk's policy judges the proxy's address")
    func bulkBehindAProxy() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try BulkCommandTests.writeList(["http://127.0.0.2:9/a.png"], to: folder)
        let proxy = ["ALL_PROXY": "http://127.0.0.3:9", "NO_PROXY": "", "no_proxy": ""]
        func row(_ name: String, _ extra: [String], status: Int32 = 0) async throws -> [String: Any] {
            let output = folder.appendingPathComponent(name)
            let run = try await CLIRunner.run(
                "webimage", ["bulk", list.path, "--output", output.path, "--size", "16"] + extra, environment: proxy)
            #expect(run.status == status, "\(run.stderr)")
            return try #require(try BulkInputTests.rows(output).first)
        }
        // The only row refused: exit 2 (the all-failed hint).
        let refused = try await row("default", [], status: 2)
        #expect(refused["error_code"] as? String == "destinationNotAllowed", "\(refused)")
        let message = refused["error_message"] as? String ?? ""
        #expect(message.contains("127.0.0.3") && !message.contains("127.0.0.2"), "\(message)")

        // The proxy allowed: curl connects to it (and finds nothing listening); the URL's host is not judged.
        let allowed = try await row("proxy-allowed", ["--allow-destination", "127.0.0.3/32"])
        #expect(allowed["error_code"] as? String == "cannotConnect", "\(allowed)")
    }

    @Test("bulk refuses a --allow-destination that is not a network, and one given with --allow-private-destinations")
    func bulkBadNetworks() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try BulkCommandTests.writeList(["http://127.0.0.1:9/a.png"], to: folder)
        for extra in [
            ["--allow-destination", "10.0.0.0/33"], ["--allow-destination", "localhost"],
            ["--allow-destination", "10.1.2.3/8"],
            ["--allow-destination", "127.0.0.0/8", "--allow-private-destinations"],
        ] {
            let output = folder.appendingPathComponent("out")
            let run = try await CLIRunner.run("webimage", ["bulk", list.path, "--output", output.path] + extra)
            #expect(run.status == 2, "\(extra): \(run.stderr)")
            #expect(run.stderr.contains("--allow-destination"), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output.appendingPathComponent("00000.jsonl").path))
        }
    }
}
