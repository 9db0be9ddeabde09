import Foundation
import LocalImageServer
import TestSupport
import Testing

/// `webimage bulk --resolver` against Debian's unbound on loopback: every row's host, and a redirect's, is
/// resolved there (names under `.test`, which nothing else answers), a name it does not know fails its row
/// with the resolver's words, and the images are those the loopback server gives.
@Suite(
    "webimage bulk DNS stage", .timeLimit(.minutes(5)),
    .enabled(if: Unbound.available, "make test installs unbound"))
struct BulkDNSCommandTests {
    @Test("--resolver: rows by name, an alias, a redirect to another name, a name that does not exist")
    func resolverAnswersEveryHost() async throws {
        let dns = try Unbound(
            zone: "img.test",
            records: [
                "a.img.test. 60 IN A 127.0.0.1", "b.img.test. 60 IN A 127.0.0.1",
                "cdn.img.test. 60 IN CNAME b.img.test.", "hop.img.test. 60 IN A 127.0.0.1",
            ])
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let port = server.port
        // /jump/N redirects to a host name no row names: the download stops at the redirect, the stage
        // resolves the name, and the download runs again (with the system resolver out of the picture, the
        // row succeeds only so).
        server.route("/jump/") { request in
            let n = request.path.split(separator: "/").last.map(String.init) ?? "0"
            return LocalImageServer.Response(
                status: 302, headers: [("Location", "http://hop.img.test:\(port)/gen/\(n).png?final=1")],
                body: .data(Data()))
        }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = [
            "http://a.img.test:\(port)/gen/0.png", "http://b.img.test:\(port)/gen/1.png",
            "http://cdn.img.test:\(port)/gen/2.png", "http://a.img.test:\(port)/jump/4",
            "http://missing.img.test:\(port)/gen/6.png", "http://127.0.0.1:\(port)/gen/8.png",
        ]
        let list = try BulkCommandTests.writeList(urls, to: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output", output.path, "--resolver", dns.address, "--dns-concurrency", "4",
                "--allow-destination", "127.0.0.0/8", "--size", "8",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let records = try BulkCommandTests.jsonl(output)
        let byURL = Dictionary(uniqueKeysWithValues: records.map { ($0["url"] as? String ?? "", $0) })
        for url in urls where !url.contains("missing") {
            #expect(byURL[url]?["status"] as? String == "success", "\(url): \(byURL[url] ?? [:])")
        }
        let missing = try #require(byURL["http://missing.img.test:\(port)/gen/6.png"])
        #expect(missing["error_code"] as? String == "cannotResolveHost")
        #expect(
            missing["error_message"] as? String == "the resolver \(dns.address) says 'missing.img.test' does not exist")
    }

    @Test("--resolver and --dns-concurrency are checked before a run: exit 2 naming the option")
    func badValuesAreRefused() async throws {
        for (options, message) in [
            (["--resolver", "dns.example"], "--resolver takes a DNS server's numeric address"),
            (["--resolver", "127.0.0.1:0"], "--resolver takes a DNS server's numeric address"),
            (["--dns-concurrency", "0"], "--dns-concurrency must be 1…1024"),
        ] {
            let run = try await CLIRunner.run("webimage", ["bulk", "list.txt", "--output", "out"] + options)
            #expect(run.status == 2 && run.stderr.contains(message), "\(options): \(run.stderr)")
        }
    }
}
