import Foundation
import LocalImageServer
import Locking
import ServerTestSupport
import TestSupport
import Testing

/// `webimage bulk` and `bulk-stats` run as built, against the loopback server: what a hostile input, a
/// damaged output directory or a second process must not be able to do.
@Suite("webimage bulk hardening", .timeLimit(.minutes(10)))
struct BulkHardeningTests {
    @Test("--save-cols may not name a field of the record (key, status, …): exit 2")
    func savedColumnsCannotOverwriteRecordFields() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = folder.appendingPathComponent("list.csv")
        try Data("url,key,status,license\nhttp://127.0.0.1:9/0.png,../../x,success,cc0\n".utf8).write(to: list)
        for columns in ["key", "license,status", "error_code", "url", "caption", "ms", "attempts"] {
            let run = try await CLIRunner.run(
                "webimage",
                [
                    "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output",
                    folder.appendingPathComponent("out-\(columns)").path, "--save-cols",
                    columns,
                ])
            #expect(run.status == 2, "\(columns)")
            #expect(run.stderr.contains("--save-cols cannot keep"), "\(run.stderr)")
        }
        let fine = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output",
                folder.appendingPathComponent("fine").path, "--save-cols", "license",
            ])
        #expect(fine.status == 0, "\(fine.stderr)")
        // Nothing listens on port 9: the row failed, and says so whatever the input's status column held.
        let record = try #require(try BulkCommandTests.jsonl(folder.appendingPathComponent("fine")).first)
        #expect(
            record["status"] as? String == "failed_to_download" && record["license"] as? String == "cc0", "\(record)")
    }

    @Test("--retry-failed takes keys from the shard's numbering: a jsonl key like ../../x names no file")
    func retryKeysComeFromTheShardNumbering() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        for format in ["files", "webdataset"] {
            let folder = try CLIRunner.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            // Rows 3 and 13 are 404s (BulkCommandTests.Kind.missing).
            let urls = (0..<14).map { server.url("/gen/\($0).png").absoluteString }
            let list = try BulkCommandTests.writeList(urls, to: folder)
            let output = folder.appendingPathComponent("out")
            let arguments = [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--format", format,
                "--size", "16",
            ]
            #expect(try await CLIRunner.run("webimage", arguments).status == 0)
            // Someone rewrites the jsonl: the failures now point at an image that works, one under a key
            // that climbs out of the output folder, one under a key of another shard.
            let jsonl = output.appendingPathComponent("00000.jsonl")
            var lines: [String] = []
            for line in try String(contentsOf: jsonl, encoding: .utf8).split(separator: "\n") {
                var record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                if record["status"] as? String != "success" {
                    record["url"] = server.url("/gen/0.png").absoluteString
                    record["key"] = record["key"] as? String == "000000003" ? "../../escaped" : "000010013"
                }
                lines.append(String(decoding: try JSONSerialization.data(withJSONObject: record), as: UTF8.self))
            }
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: jsonl)

            let retry = try await CLIRunner.run("webimage", arguments + ["--retry-failed"])
            #expect(retry.status == 0, "\(retry.stderr)")
            #expect(retry.stderr.contains("retried 0 failed row(s)"), "\(retry.stderr)")
            let everything = try FileManager.default.subpathsOfDirectory(atPath: folder.path)
            #expect(!everything.contains { $0.contains("escaped") }, "\(format): \(everything)")
            if format == "webdataset" {
                // Every member of every tar is named KEY.EXT.
                let names = try await BulkCommandTests.tarMemberNames(output)
                #expect(
                    !names.isEmpty && names.allSatisfy { $0.wholeMatch(of: /[0-9]{9}\.(jpg|json)/) != nil }, "\(names)")
            }
        }
    }

    @Test("a password in a URL is written as *** in the jsonl, and printed nowhere")
    func passwordInTheURLIsRedacted() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let port = try #require(server.url("/").port)
        // Row 0 is an image, row 3 a 404 (BulkCommandTests.Kind): a success and a failure both carry it.
        let urls = [0, 3].map { "http://alice:S3CRET@127.0.0.1:\(port)/gen/\($0).png" }
        let list = try BulkCommandTests.writeList(urls, to: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--format", "files",
                "--size", "16", "--json",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try BulkCommandTests.jsonl(output)
        #expect(rows.count == 2)
        for row in rows {
            let url = row["url"] as? String ?? ""
            #expect(url.hasPrefix("http://alice:***@127.0.0.1:"), "\(url)")
        }
        #expect(!run.stdout.contains("S3CRET") && !run.stderr.contains("S3CRET"))
        let files = FileManager.default.enumerator(at: output, includingPropertiesForKeys: nil)?.allObjects ?? []
        for case let file as URL in files where !file.hasDirectoryPath {
            let text = String(decoding: try Data(contentsOf: file), as: UTF8.self)
            #expect(!text.contains("S3CRET"), "\(file.lastPathComponent)")
        }
    }

    @Test("--timeout covers every redirect hop: five hops of 0.8 s each end a 2 s row with timedOut")
    func timeoutCoversEveryRedirectHop() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = folder.appendingPathComponent("list.txt")
        try Data((server.url(Fixtures.slowRedirects).absoluteString + "\n").utf8).write(to: list)
        let output = folder.appendingPathComponent("out")
        // With each hop given the whole 2 s afresh, the 4 s chain would end in a sample.
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output", output.path, "--timeout", "2", "--stall-timeout", "2", "--size", "16",
                "--allow-destination", "127.0.0.0/8",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let row = try #require(try BulkCommandTests.jsonl(output).first)
        #expect(row["error_code"] as? String == "timedOut", "\(row)")
    }

    @Test("a truncated JPEG is a failed row (error code truncated) unless --allow-partial")
    func truncatedImagesAreFailedRows() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let jpeg = try Data(
            contentsOf: Fixtures.packageRoot.appendingPathComponent("SampleImages/astronaut-baseline.jpg"))
        let cut = Data(jpeg.prefix(jpeg.count / 3))
        server.route("/cut/") { _ in
            LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/jpeg")], body: .data(cut))
        }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try BulkCommandTests.writeList(
            [server.url("/cut/astronaut.jpg").absoluteString, server.url("/gen/0.png").absoluteString], to: folder)
        for (name, extra) in [("strict", [String]()), ("allowed", ["--allow-partial"])] {
            let output = folder.appendingPathComponent(name)
            let run = try await CLIRunner.run(
                "webimage",
                ["bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--size", "16"]
                    + extra)
            #expect(run.status == 0, "\(run.stderr)")
            let rows = try BulkInputTests.rows(output)
            #expect(rows.count == 2)
            let first = rows.first ?? [:]
            if extra.isEmpty {
                #expect(
                    first["status"] as? String == "failed_to_resize" && first["error_code"] as? String == "truncated",
                    "\(first)")
                #expect(try await BulkCommandTests.tarImages(output).count == 1)
            } else {
                #expect(first["status"] as? String == "success", "\(first)")
                #expect(try await BulkCommandTests.tarImages(output).count == 2)
            }
            #expect(rows.last?["status"] as? String == "success")
        }
    }

    @Test("bulk-stats: counts that overflow and a folder that does not exist are errors, not a crash or zeros")
    func bulkStatsRefusesOverflowAndMissingFolders() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let stats =
            #"{"shard":0,"count":9223372036854775807,"successes":1,"failures":{"x":9223372036854775807},"bytes":1,"duration":1}"#
        for shard in 0..<2 {
            try Data(stats.utf8).write(to: folder.appendingPathComponent(String(format: "%05d_stats.json", shard)))
        }
        for extra in [[], ["--json"]] {
            let run = try await CLIRunner.run("webimage", ["bulk-stats", folder.path] + extra)
            #expect(!run.signalled && run.status == 2, "\(run.status) \(run.stderr)")
            #expect(run.stderr.contains("out of range"), "\(run.stderr)")
        }
        let missing = try await CLIRunner.run("webimage", ["bulk-stats", folder.appendingPathComponent("nope").path])
        #expect(missing.status == 2, "\(missing.stdout)")
        #expect(missing.stderr.contains("is not a directory"), "\(missing.stderr)")
    }

    @Test("a 429's Retry-After wait holds no download slot: another host's rows finish during it")
    func retryWaitsHoldNoSlot() async throws {
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        let png = try Data(contentsOf: Fixtures.packageRoot.appendingPathComponent("SampleImages/horse-rgba.png"))
        // Every request in arrival order; a /wait/ path answers 429 with Retry-After: 4 the first time.
        let log = Lock<[String]>([])
        server.route("/") { request in
            let earlier = log.withLock { log -> Bool in
                defer { log.append(request.path) }
                return log.contains(request.path)
            }
            if request.path.hasPrefix("/wait/") && !earlier {
                return LocalImageServer.Response(
                    status: 429, headers: [("Retry-After", "4")], body: .data(Data("slow down".utf8)))
            }
            return LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/png")], body: .data(png))
        }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Four throttled rows on 127.0.0.1, then six on localhost (the same loopback server under another
        // host name), with two download slots.
        let throttled = (0..<4).map { server.url("/wait/\($0).png").absoluteString }
        let other = (0..<6).map {
            server.url("/img/\($0).png").absoluteString.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        }
        let list = try BulkCommandTests.writeList(throttled + other, to: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--size", "16",
                "--concurrency", "2", "--retries", "1",
                "--timeout", "60", "--stall-timeout", "60",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try BulkInputTests.rows(output)
        #expect(rows.count == 10 && rows.allSatisfy { $0["status"] as? String == "success" }, "\(rows)")
        #expect(rows.prefix(4).allSatisfy { $0["attempts"] as? Int == 2 }, "\(rows)")
        // Every localhost image was fetched while the throttled rows waited: before any of their retries.
        let order = log.withLock { $0 }
        let firstRetry = try #require(
            order.indices.first { index in order[..<index].contains(order[index]) }, "\(order)")
        let lastImage = try #require(order.lastIndex { $0.hasPrefix("/img/") }, "\(order)")
        #expect(lastImage < firstRetry, "\(order)")
    }

    @Test("host-sorted input: another host's rows run while a slow host's rows wait for its connections")
    func hostSortedInputDoesNotStall() async throws {
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        let png = try Data(contentsOf: Fixtures.packageRoot.appendingPathComponent("SampleImages/horse-rgba.png"))
        // A /slow/ image is held at a gate until the test opens it.
        server.route("/") { request in
            LocalImageServer.Response(
                status: 200, headers: [("Content-Type", "image/png")], body: .data(png),
                gate: request.path.hasPrefix("/slow/") ? "slow" : nil)
        }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Ten rows of a slow host (127.0.0.1), then four of another (localhost, the same server under
        // another name); two connections per host, four in all.
        let slow = (0..<10).map { server.url("/slow/\($0).png").absoluteString }
        let other = (0..<4).map {
            server.url("/img/\($0).png").absoluteString.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        }
        let list = try BulkCommandTests.writeList(slow + other, to: folder)
        let output = folder.appendingPathComponent("out")
        async let run = CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--size", "16",
                "--concurrency", "4", "--per-host", "2", "--timeout", "300", "--stall-timeout", "300",
            ])
        // The slow host has its two connections held, and the other host's rows are all served meanwhile:
        // the eight slow rows waiting for a connection keep nothing from them.
        // 120 s: in the full parallel suite on a loaded machine the child may start late (it took over 20).
        let served = await server.waitUntil(timeout: .seconds(120)) { server in
            server.waitingCount(atGate: "slow") == 2 && (0..<4).allSatisfy { server.count(for: "/img/\($0).png") == 1 }
        }
        let held = server.waitingCount(atGate: "slow")
        server.openGate("slow")
        let finished = try await run
        #expect(served, "the other host's rows waited behind the slow host's")
        #expect(held == 2)
        #expect(finished.status == 0, "\(finished.stderr)")
        let rows = try BulkInputTests.rows(output)
        #expect(rows.count == 14 && rows.allSatisfy { $0["status"] as? String == "success" }, "\(rows)")
        #expect(server.maxInFlight <= 4)
    }

    @Test("two processes on one output folder: the second skips the shard the first holds and keeps its files")
    func aSecondProcessSkipsAHeldShard() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Shards of 4: shard 0's first row waits at a gate, shard 1 is plain.
        let good = (1..<100).filter { BulkCommandTests.Kind.of($0) == .ok }.prefix(7).map { "/gen/\($0).png" }
        let urls = (["/gen/0.png?gate=held"] + good).map { server.url($0).absoluteString }
        let list = try BulkCommandTests.writeList(urls, to: folder)
        let output = folder.appendingPathComponent("out")
        // Leftovers of a dead process of this host (no PID is that high on Linux), and of another host.
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        var buffer = [CChar](repeating: 0, count: 256)
        #expect(gethostname(&buffer, 255) == 0)
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .filter { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }
        let dead = ".00001.jsonl.partial-\(host)-2147483646"
        let foreign = ".00001.jsonl.partial-another-host.example-12"
        for name in [dead, foreign] { try Data("{".utf8).write(to: output.appendingPathComponent(name)) }
        let arguments = [
            "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--shard-size", "4",
            "--size", "16",
            // The held row must not time out, however slow a loaded machine is.
            "--timeout", "600", "--stall-timeout", "600",
        ]

        async let first = CLIRunner.run("webimage", arguments + ["--shards", "0"])
        let deadline = ContinuousClock.now + .seconds(120)
        while server.waitingCount(atGate: "held") < 1 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let partial = { () -> Set<String> in
            Set(
                ((try? FileManager.default.contentsOfDirectory(atPath: output.path)) ?? []).filter {
                    $0.hasPrefix(".00000.") && $0.contains(".partial-")
                })
        }
        let held = partial()
        #expect(!held.isEmpty, "the first process has no temporary files")

        // The second process runs every shard. Were it to take shard 0, its own request would wait at the
        // gate too: the loop below ends then, and the test fails instead of hanging.
        let secondDone = Lock(false)
        let second = Task {
            defer { secondDone.withLock { $0 = true } }
            return try await CLIRunner.run("webimage", arguments)
        }
        while !secondDone.withLock({ $0 }) && server.waitingCount(atGate: "held") < 2
            && ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(server.waitingCount(atGate: "held") == 1, "the second process took the held shard")
        #expect(held.isSubset(of: partial()), "the second process removed the first one's files")
        server.openGate("held")
        let other = try await second.value
        let owner = try await first
        #expect(owner.status == 0, "\(owner.stderr)")
        #expect(other.status == 1, "\(other.stderr)")
        #expect(other.stderr.contains("shard 00000: skipped, another process"), "\(other.stderr)")

        let rows = try BulkCommandTests.jsonl(output)
        #expect(rows.count == 8 && rows.allSatisfy { $0["status"] as? String == "success" }, "\(rows)")
        let names = try FileManager.default.contentsOfDirectory(atPath: output.path)
        #expect(names.contains("00000_stats.json") && names.contains("00001_stats.json"), "\(names)")
        // Only the dead process's leftover was removed; no lock file stays behind a finished shard.
        #expect(names.filter { $0.hasPrefix(".") }.sorted() == [foreign], "\(names)")
    }
}
