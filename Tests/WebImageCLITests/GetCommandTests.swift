import Foundation
import LocalImageServer
import LocalImageServerTLS
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `webimage get` run as a child process against the in-process loopback server.
@Suite("webimage get", .timeLimit(.minutes(5)))
struct GetCommandTests {
    @Test("--json reports a success, a 404 and a broken image, and the exit status is 1")
    func jsonFields() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let urls = ["/files/astronaut-baseline.jpg", "/status/404", "/files/html-error-page.jpg"].map {
            server.url($0).absoluteString
        }
        let output = try await CLIRunner.run("webimage", ["get", "--json"] + urls)
        #expect(output.status == 1)
        let objects = try CLIRunner.jsonObjects(output)
        try #require(objects.count == 3, "stdout: \(output.stdout)\nstderr: \(output.stderr)")
        let byURL = Dictionary(uniqueKeysWithValues: objects.map { ($0["url"] as? String ?? "", $0) })

        let success = try #require(byURL[urls[0]])
        #expect(success["ok"] as? Bool == true)
        #expect(success["error"] is NSNull)
        #expect(success["status"] as? Int == 200)
        #expect(success["format"] as? String == "jpeg")
        #expect(success["bytes"] as? Int == 53962)
        #expect(success["width"] as? Int == 512)
        #expect(success["height"] as? Int == 512)
        #expect(success["frames"] as? Int == 1)
        #expect((success["ms"] as? Int).map { $0 >= 0 } == true)
        #expect(success["fromCache"] as? Bool == false)
        #expect(success["http"] as? String == "1.1")

        let notFound = try #require(byURL[urls[1]])
        #expect(notFound["ok"] as? Bool == false)
        #expect(notFound["status"] as? Int == 404)
        #expect(notFound["http"] as? String == "1.1")
        let notFoundError = try #require(notFound["error"] as? [String: Any])
        #expect(notFoundError["code"] as? Int == 2001)
        #expect(notFoundError["name"] as? String == "invalidDownloadStatusCode")
        #expect((notFoundError["message"] as? String)?.contains("404") == true)
        #expect(notFound["width"] is NSNull)

        let broken = try #require(byURL[urls[2]])
        #expect(broken["ok"] as? Bool == false)
        #expect(broken["status"] as? Int == 200)
        let brokenError = try #require(broken["error"] as? [String: Any])
        #expect(brokenError["code"] as? Int == 1001)
        #expect(brokenError["name"] as? String == "badImageData")

        // The summary table goes to stderr with --json, so stdout stays one object per line.
        #expect(output.stderr.contains("3 downloads: 1 ok, 2 failed"))
    }

    @Test("a JPEG cut to a third is \"partial\": true and a failure (exit 1) unless --allow-partial")
    func truncatedImageIsAFailure() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let jpeg = try Data(
            contentsOf: Fixtures.packageRoot.appendingPathComponent("SampleImages/astronaut-baseline.jpg"))
        let cut = Data(jpeg.prefix(jpeg.count / 3))
        server.route("/cut/") { _ in
            LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/jpeg")], body: .data(cut))
        }
        let url = server.url("/cut/astronaut.jpg").absoluteString
        let whole = server.url("/files/astronaut-baseline.jpg").absoluteString

        let strict = try await CLIRunner.run("webimage", ["get", "--json", url, whole])
        #expect(strict.status == 1, "\(strict.stderr)")
        let lines = Dictionary(
            uniqueKeysWithValues: try CLIRunner.jsonObjects(strict).map { ($0["url"] as? String ?? "", $0) })
        #expect(lines[url]?["ok"] as? Bool == false && lines[url]?["partial"] as? Bool == true, "\(strict.stdout)")
        #expect(lines[whole]?["ok"] as? Bool == true && lines[whole]?["partial"] as? Bool == false, "\(strict.stdout)")
        #expect(strict.stderr.contains("2 downloads: 1 ok, 1 failed"), "\(strict.stderr)")

        let allowed = try await CLIRunner.run("webimage", ["get", "--json", "--allow-partial", url])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        let line = try #require(try CLIRunner.jsonObjects(allowed).first)
        #expect(line["ok"] as? Bool == true && line["partial"] as? Bool == true, "\(allowed.stdout)")
    }

    @Test("all successful: exit 0, plain lines, a summary table, -o saves the bytes and --png the decoded frame")
    func saveAndPNG() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = try await CLIRunner.run(
            "webimage",
            [
                "get", "-o", folder.path, "--png", "--thumbnail", "100x100", "--concurrency", "2", "--lifo",
                "--header", "X-Test: yes", server.url("/files/horse-rgba.png").absoluteString,
                server.url("/files/chelsea-animated.webp").absoluteString,
            ])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("ok   200 png 100x82"))
        #expect(output.stdout.contains("2 downloads: 2 ok, 0 failed"))
        let original = try Data(contentsOf: folder.appendingPathComponent("horse-rgba.png"))
        #expect(original == (try Fixtures.corpusFile("horse-rgba.png")))
        let decoded = try ImageDecoderRegistry.shared.decode(
            Data(contentsOf: folder.appendingPathComponent("horse-rgba.png.png")))
        #expect(decoded.width == 100 && decoded.height == 82)
        let animatedFirstFrame = try ImageDecoderRegistry.shared.decode(
            Data(contentsOf: folder.appendingPathComponent("chelsea-animated.webp.png")))
        #expect(animatedFirstFrame.format == .png && animatedFirstFrame.width == 100)
        #expect(server.requests(for: "/files/horse-rgba.png").first?.headers.contains { $0.name == "X-Test" } == true)
    }

    @Test("over many URLs the summary counts results and lists the failed rows only, the first 100 of them")
    func summaryAtScale() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let good = (0..<40).map { server.url("/files/horse-rgba.png").absoluteString + "?n=\($0)" }
        let missing = (0..<110).map { server.url("/status/404").absoluteString + "?n=\($0)" }
        let input = (good + missing).joined(separator: "\n") + "\n"
        let output = try await CLIRunner.run(
            "webimage", ["get", "--input", "-", "--concurrency", "8"], stdin: Data(input.utf8))
        #expect(output.status == 1, "\(output.stderr)")
        // Each successful URL is on its own result line once; the summary does not print it again.
        for url in good {
            let lines = output.stdout.split(separator: "\n").filter { $0.hasSuffix(url) }
            #expect(lines.count == 1, "\(url): \(lines)")
        }
        #expect(output.stdout.contains("results: invalidDownloadStatusCode 2001 110, ok 40"), "\(output.stdout)")
        #expect(output.stdout.contains("… and 10 more failed"), "\(output.stdout)")
        #expect(output.stdout.contains("150 downloads: 40 ok, 110 failed"), "\(output.stdout)")
        // The 110 result lines, the 100 failed rows and a handful of summary lines; 300 before.
        let lineCount = output.stdout.split(separator: "\n").count
        #expect(lineCount < 40 + 110 + 100 + 12, "\(lineCount) lines")
    }

    @Test("--input - reads URLs from stdin, skipping blank lines and comments")
    func inputFromStdin() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let list = """
            # two images
            \(server.url("/files/horse-lossless.webp").absoluteString)

            \(server.url("/files/chelsea.gif").absoluteString)
            """
        let output = try await CLIRunner.run("webimage", ["get", "--json", "--input", "-"], stdin: Data(list.utf8))
        #expect(output.status == 0, "\(output.stderr)")
        let objects = try CLIRunner.jsonObjects(output)
        #expect(Set(objects.compactMap { $0["format"] as? String }) == ["webp", "gif"])
        #expect(server.count(for: "/files/horse-lossless.webp") == 1)
        #expect(server.count(for: "/files/chelsea.gif") == 1)
    }

    @Test("--input with a line that is not a URL names the line")
    func badInputLine() async throws {
        let output = try await CLIRunner.run(
            "webimage", ["get", "--input", "-"], stdin: Data("http://127.0.0.1:1/a.png\nnot a url\n".utf8))
        #expect(output.status != 0)
        #expect(output.stderr.contains("stdin line 2"))
    }

    @Test("--http-cache-dir DIR: the second run is answered by a 304 and reported fromCache")
    func httpCacheSecondPass() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = server.url("/cache/no-cache/horse-rgba.png").absoluteString
        let first = try CLIRunner.jsonObjects(
            try await CLIRunner.run("webimage", ["get", "--json", "--http-cache-dir", folder.path, url]))
        let second = try CLIRunner.jsonObjects(
            try await CLIRunner.run("webimage", ["get", "--json", url, "--http-cache-dir", folder.path]))
        #expect(first.first?["fromCache"] as? Bool == false)
        #expect(second.first?["fromCache"] as? Bool == true)
        #expect(second.first?["cache"] as? String == "revalidated")
        #expect(server.requests(for: "/cache/no-cache/horse-rgba.png").map(\.status) == [200, 304])

        let ignored = try await CLIRunner.run(
            "webimage", ["get", "--json", "--http-cache-dir", folder.path, "--ignore-cached", url])
        #expect(ignored.status == 1)
        let error = try CLIRunner.jsonObjects(ignored).first?["error"] as? [String: Any]
        #expect(error?["code"] as? Int == 1002)
    }

    @Test("--http-cache without a value uses the default location, $XDG_CACHE_HOME/webimage")
    func httpCacheDefaultLocation() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = server.url("/cache/no-cache/coffee-rgb.png").absoluteString
        // ASAN_OPTIONS: under `make test-asan`, the process-wide HTTPCache.shared still holds the body in
        // its memory tier at exit, a live global whose `Data` LeakSanitizer cannot see into (the same
        // false report .ci/lsan-suppressions.txt documents for the server's static PNG).
        let environment = ["XDG_CACHE_HOME": folder.path, "ASAN_OPTIONS": "detect_leaks=0"]
        for _ in 0..<2 {
            let output = try await CLIRunner.run(
                "webimage", ["get", "--json", "--http-cache", "--priority", "high", url], environment: environment)
            #expect(output.status == 0, "\(output.stderr)")
        }
        #expect(server.requests(for: "/cache/no-cache/coffee-rgb.png").map(\.status) == [200, 304])
        let stored = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("webimage").path)
        #expect(!stored.isEmpty)
    }

    @Test("get and info run without SwiftNIO's threads; demo, which serves over NIO, has them")
    func onlyTheDemoStartsNIO() async throws {
        // The check itself: this test process runs a NIO server, so its own threads show the name.
        let server = try Fixtures.server()
        defer { server.shutdown() }
        #expect(CLIRunner.threadNames(of: getpid()).contains { $0.hasPrefix("NIO-ELT") })

        // Each command is kept busy a while (the server holds its answer) so its threads are sampled.
        let get = try await CLIRunner.run(
            "webimage", ["get", "--timeout", "1", server.url("/hang").absoluteString])
        #expect(get.status == 1)
        #expect(!get.threadNames.isEmpty)
        #expect(!get.threadNames.contains { $0.hasPrefix("NIO") }, "\(get.threadNames)")
        let info = try await CLIRunner.run(
            "webimage", ["info", server.url("/drip/pixel-1x1.png?chunk=10&interval=100").absoluteString])
        #expect(!info.threadNames.isEmpty)
        #expect(!info.threadNames.contains { $0.hasPrefix("NIO") }, "\(info.threadNames)")
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let demo = try await CLIRunner.run("webimage", ["demo", "--output", folder.path], in: Fixtures.packageRoot)
        #expect(demo.status == 0, "\(demo.stderr)")
        #expect(demo.threadNames.contains { $0.hasPrefix("NIO-ELT") }, "\(demo.threadNames)")
    }

    @Test("--cookies-file FILE stores the server's cookies in a Netscape cookie file")
    func cookiesFile() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let jar = folder.appendingPathComponent("cookies.txt")
        // The body is not an image, so the download fails; the cookie is stored all the same.
        _ = try await CLIRunner.run(
            "webimage", ["get", "--cookies-file", jar.path, server.url("/cookies/set?flavour=oat").absoluteString])
        let text = try String(contentsOf: jar, encoding: .utf8)
        #expect(text.contains("flavour\toat"))
    }

    @Test("--progressive reports partial images; --first-frame-only and --scale-down reach the decoder")
    func decodingFlags() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let drip = server.url("/drip/coffee-progressive.jpg?chunk=4096&interval=5").absoluteString
        let progressive = try CLIRunner.jsonObjects(
            try await CLIRunner.run("webimage", ["get", "--json", "--progressive", drip]))
        #expect((progressive.first?["partialImages"] as? Int ?? 0) > 0)
        let plain = try CLIRunner.jsonObjects(try await CLIRunner.run("webimage", ["get", "--json", drip]))
        #expect(plain.first?["partialImages"] as? Int == 0)

        let animated = server.url("/files/chelsea-animated.gif").absoluteString
        let firstOnly = try await CLIRunner.run("webimage", ["get", "--first-frame-only", "--scale-down", animated])
        #expect(firstOnly.status == 0)
        #expect(firstOnly.stdout.contains("gif 300x200 8f"))
    }

    @Test("a self-signed server fails with sslFailure unless --insecure is given")
    func insecure() async throws {
        let server = try Fixtures.server(tls: .selfSigned)
        defer { server.shutdown() }
        let url = server.url("/files/pixel-1x1.png").absoluteString
        let strict = try await CLIRunner.run("webimage", ["get", "--json", url])
        #expect(strict.status == 1)
        #expect((try CLIRunner.jsonObjects(strict).first?["error"] as? [String: Any])?["code"] as? Int == 3004)
        let insecure = try await CLIRunner.run("webimage", ["get", "--json", "--insecure", url])
        #expect(insecure.status == 0, "stdout: \(insecure.stdout)\nstderr: \(insecure.stderr)")
    }

    @Test("--secret-header NAME keeps a --header field from another origin after a redirect")
    func secretHeader() async throws {
        let origin = try Fixtures.server()
        let other = try Fixtures.server()
        defer {
            origin.shutdown()
            other.shutdown()
        }
        let target = "http://localhost:\(other.port)/files/pixel-1x1.png"
        let url = origin.url(
            "/redirect-to?url=\(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")")
        let output = try await CLIRunner.run(
            "webimage",
            [
                "get", "--header", "X-Tenant: acme", "--header", "X-Plain: kept", "--secret-header", "X-Tenant",
                url.absoluteString,
            ])
        #expect(output.status == 0, "stdout: \(output.stdout)\nstderr: \(output.stderr)")
        let crossed = try #require(other.requests(for: "/files/pixel-1x1.png").first?.request)
        #expect(crossed.header("X-Tenant") == nil)
        #expect(crossed.header("X-Plain") == "kept")
        #expect(origin.requests(for: "/redirect-to").first?.request.header("X-Tenant") == "acme")
        let invalid = try await CLIRunner.run("webimage", ["get", "--secret-header", "X Tenant", url.absoluteString])
        #expect(invalid.status == 64)
    }

    @Test("over HTTP/2 the protocol shows in --json and in the summary table")
    func protocolIsReported() async throws {
        let server = try Fixtures.server(tls: .selfSignedHTTP2)
        defer { server.shutdown() }
        let urls = ["/files/pixel-1x1.png", "/files/horse-rgba.png", "/status/404"].map {
            server.url($0).absoluteString
        }
        let json = try await CLIRunner.run("webimage", ["get", "--json", "--insecure"] + urls)
        let objects = try CLIRunner.jsonObjects(json)
        try #require(objects.count == 3, "stdout: \(json.stdout)\nstderr: \(json.stderr)")
        #expect(objects.allSatisfy { $0["http"] as? String == "2" }, "\(objects)")

        let plain = try await CLIRunner.run("webimage", ["get", "--insecure"] + urls.prefix(2))
        #expect(plain.status == 0, "stdout: \(plain.stdout)\nstderr: \(plain.stderr)")
        let lines = plain.stdout.split(separator: "\n").map(String.init)
        let header = try #require(lines.first { $0.hasPrefix("#") })
        #expect(header.split(separator: " ").contains("http"))
        let rows = lines.filter { $0.contains(" ok ") && $0.contains("https://") }
        #expect(rows.count == 2 && rows.allSatisfy { $0.split(separator: " ").dropFirst(3).first == "2" }, "\(rows)")
    }
}
