import Foundation
import LocalImageServer
import Locking
import TestSupport
import Testing

@testable import WebImage

/// `webimage bulk` run as built, against the loopback server's generated images.
@Suite("webimage bulk", .timeLimit(.minutes(10)))
struct BulkCommandTests {
    /// What the server does for row `n` of a generated list.
    enum Kind: String, CaseIterable {
        case ok, missing, throttled, noAI, redirect, trickle

        static func of(_ n: Int) -> Kind {
            if n % 10 == 3 { return .missing }
            if n % 17 == 5 { return .throttled }
            if n % 23 == 7 { return .noAI }
            if n % 31 == 11 { return .redirect }
            if n % 97 == 13 { return .trickle }
            return .ok
        }
    }

    /// A server with `/gen/N.png` (a small PNG that differs by N) behaving as `Kind.of(N)` says: 404s, a 429
    /// with `Retry-After: 1` on the first request, `X-Robots-Tag: noai`, a redirect to another image,
    /// or a body that trickles for longer than the timeout.
    static func server() throws -> (LocalImageServer, Lock<[String: Int]>) {
        let server = LocalImageServer(root: nil)
        try server.start()
        let pngs = try (0..<8).map { shade -> Data in
            var pixels: [UInt8] = []
            for index in 0..<(24 * 16) { pixels += [UInt8(shade * 30), UInt8(index % 256), 90, 255] }
            let frame = ImageFrame(width: 24, height: 16, bytesPerRow: 96, pixels: pixels)
            return try PNGEncoder().encode(frame)
        }
        let seen = Lock<[String: Int]>([:])
        server.route("/gen/") { request in
            let name = request.path.split(separator: "/").last.map(String.init) ?? ""
            let n = Int(name.split(separator: ".").first ?? "") ?? 0
            let png = pngs[n % 8]
            // `?gate=NAME` holds the response until the test opens that gate.
            let image = LocalImageServer.Response(
                status: 200, headers: [("Content-Type", "image/png")], body: .data(png),
                gate: request.queryValue("gate"))
            if request.queryValue("final") == "1" { return image }  // where redirects lead
            switch Kind.of(n) {
            case .ok:
                return image
            case .missing:
                return .text("no such image", status: 404)
            case .throttled:
                let count = seen.withLock { counts -> Int in
                    counts[request.path, default: 0] += 1
                    return counts[request.path]!
                }
                if count == 1 {
                    return LocalImageServer.Response(
                        status: 429, headers: [("Retry-After", "1")], body: .data(Data("slow down".utf8)))
                }
                return image
            case .noAI:
                var tagged = image
                tagged.headers.append(("X-Robots-Tag", "noai, noimageai"))
                return tagged
            case .redirect:
                return LocalImageServer.Response(status: 302, headers: [("Location", "/gen/\(n).png?final=1")])
            case .trickle:
                var slow = image
                slow.delivery = .drip(chunkSize: 8, interval: .milliseconds(300))
                return slow
            }
        }
        return (server, seen)
    }

    static func writeList(_ urls: [String], to folder: URL, name: String = "list.csv") throws -> URL {
        let lines =
            ["url,caption,n"]
            + urls.enumerated().map { "\($0.element),\"image \($0.offset), \"\"generated\"\"\",\($0.offset)" }
        let url = folder.appendingPathComponent(name)
        try (lines.joined(separator: "\n") + "\n").write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    static func jsonl(_ folder: URL) throws -> [[String: Any]] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".jsonl") }
            .sorted()
        return try names.flatMap { name in
            try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8).split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
        }
    }

    /// The image members of every tar in `folder`, by name, read with Python's `tarfile` (which also
    /// proves each tar is well formed).
    static func tarImages(_ folder: URL) async throws -> [String: String] {
        let script = """
            import hashlib, sys, tarfile, glob, os
            for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.tar"))):
                with tarfile.open(path) as tar:
                    for member in tar.getmembers():
                        if member.name.endswith((".jpg", ".png", ".webp")):
                            print(member.name, hashlib.sha256(tar.extractfile(member).read()).hexdigest())
            """
        let output = try await CLIRunner.runProgram("/usr/bin/env", ["python3", "-c", script, folder.path])
        #expect(output.status == 0, "\(output.stderr)")
        var images: [String: String] = [:]
        for line in output.stdoutLines {
            let parts = line.split(separator: " ")
            if parts.count == 2 { images[String(parts[0])] = String(parts[1]) }
        }
        return images
    }

    /// The names of every member of every tar in `folder`, read with Python's `tarfile`.
    static func tarMemberNames(_ folder: URL) async throws -> [String] {
        let script = """
            import sys, tarfile, glob, os
            for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.tar"))):
                with tarfile.open(path) as tar:
                    for name in tar.getnames():
                        print(name)
            """
        let output = try await CLIRunner.runProgram("/usr/bin/env", ["python3", "-c", script, folder.path])
        #expect(output.status == 0, "\(output.stderr)")
        return output.stdoutLines
    }

    @Test func twoThousandURLsAreAllAccountedFor() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let count = 2_000
        let list = try Self.writeList((0..<count).map { server.url("/gen/\($0).png").absoluteString }, to: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--caption-col",
                "caption", "--save-cols", "n",
                "--shard-size", "500", "--size", "32", "--concurrency", "32", "--retries", "2", "--timeout", "2",
                "--json",
            ])
        #expect(run.status == 0, "\(run.stderr)")

        let rows = try Self.jsonl(output)
        #expect(rows.count == count)
        #expect(Set(rows.compactMap { $0["n"] as? Int }).count == count)
        var expected: [String: Int] = [:]
        for n in 0..<count {
            switch Kind.of(n) {
            case .ok, .throttled, .redirect: expected["success", default: 0] += 1
            case .missing: expected["invalidDownloadStatusCode", default: 0] += 1
            case .noAI: expected["robotsTag", default: 0] += 1
            case .trickle: expected["timedOut", default: 0] += 1
            }
        }
        var seen: [String: Int] = [:]
        for row in rows { seen[(row["error_code"] as? String) ?? "success", default: 0] += 1 }
        #expect(seen == expected)
        // The throttled rows succeeded on their second attempt, after Retry-After.
        let throttled = rows.filter { ($0["n"] as? Int).map { Kind.of($0) == .throttled } ?? false }
        let unexpected = throttled.filter { $0["attempts"] as? Int != 2 || $0["status"] as? String != "success" }
        #expect(unexpected.isEmpty, "\(unexpected.prefix(3))")

        // The stats add up to the rows.
        var total = 0
        var successes = 0
        for shard in 0..<4 {
            let data = try Data(contentsOf: output.appendingPathComponent(String(format: "%05d_stats.json", shard)))
            let stats = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            total += stats["count"] as? Int ?? 0
            successes += stats["successes"] as? Int ?? 0
        }
        #expect(total == count)
        #expect(successes == expected["success"])

        // Every tar opens with Python's tarfile and holds one image per success, named by key.
        let images = try await Self.tarImages(output)
        #expect(images.count == expected["success"])
        let keys = Set(rows.filter { $0["status"] as? String == "success" }.compactMap { $0["key"] as? String })
        // Shards of 500 rows: 5 digits of shard, 3 of row.
        #expect(Set(images.keys.map { String($0.prefix(8)) }) == keys)
        #expect(images.keys.allSatisfy { $0.hasSuffix(".jpg") })
    }

    /// The Python `make test` prepares with the `webdataset` package (`.venv-test`).
    static let webdatasetPython = Fixtures.packageRoot.appendingPathComponent(".venv-test/bin/python3").path

    @Test(
        "the tars load in webdataset, one sample per success with its image, json and caption",
        .enabled(if: FileManager.default.isExecutableFile(atPath: webdatasetPython), "make test sets up .venv-test"))
    func tarsLoadInWebdataset() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let count = 60
        let list = try Self.writeList((0..<count).map { server.url("/gen/\($0).png").absoluteString }, to: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--caption-col",
                "caption", "--shard-size", "25", "--size",
                "16",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let script = """
            import glob, json, os, sys
            import webdataset as wds
            urls = sorted(glob.glob(os.path.join(sys.argv[1], "*.tar")))
            total = 0
            for sample in wds.WebDataset(urls, shardshuffle=False):
                assert sample["jpg"][:2] == b"\\xff\\xd8", sample["__key__"]
                meta = json.loads(sample["json"])
                assert meta["key"] == sample["__key__"] and meta["status"] == "success"
                assert sample["txt"].decode().startswith("image ")
                total += 1
            print(total)
            """
        let python = try await CLIRunner.runProgram(Self.webdatasetPython, ["-c", script, output.path])
        #expect(python.status == 0, "\(python.stderr)")
        let successes = try Self.jsonl(output).filter { $0["status"] as? String == "success" }.count
        #expect(successes >= 40)
        #expect(python.stdoutLines.last == String(successes))
    }

    @Test func killedRunsResumeToTheSameImages() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Only images that always succeed, so every run must end with the same samples.
        let urls = (0..<400).filter { Kind.of($0) == .ok }.map { server.url("/gen/\($0).png").absoluteString }
        let list = try Self.writeList(urls, to: folder)
        let arguments = { (out: URL) in
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", out.path, "--shard-size", "25",
                "--size", "32", "--concurrency", "8",
            ]
        }
        let reference = folder.appendingPathComponent("reference")
        #expect(try await CLIRunner.run("webimage", arguments(reference)).status == 0)
        let expected = try await Self.tarImages(reference)

        let killed = folder.appendingPathComponent("killed")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let delay = Int.random(in: 20...400, using: &generator)
            _ = try await CLIRunner.run("webimage", arguments(killed), killAfterMilliseconds: delay)
            // Under its final names the directory only ever holds complete files (it may not exist yet when
            // the kill came early). A shard's jsonl is renamed last, as the mark that its tar is complete: a
            // kill between the two renames leaves a tar alone, which the resume redoes.
            let names = (try? FileManager.default.contentsOfDirectory(atPath: killed.path)) ?? []
            for name in names where name.hasSuffix(".jsonl") {
                let stem = String(name.dropLast(6))
                #expect(names.contains(stem + ".tar"), "\(name) without its tar")
            }
        }
        // A kill between writing the plan and renaming it leaves its temporary file; plant one for certain
        // (a process id above Linux's maximum is never running), and one of another host, which a shared
        // directory may hold for a process still writing there.
        try FileManager.default.createDirectory(at: killed, withIntermediateDirectories: true)
        var buffer = [CChar](repeating: 0, count: 256)
        #expect(gethostname(&buffer, 255) == 0)
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .filter { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }
        let foreign = ".plan.json.partial-another-host.example-12"
        for name in [".plan.json.partial-\(host)-2147483646", foreign] {
            try Data("{".utf8).write(to: killed.appendingPathComponent(name))
        }
        #expect(try await CLIRunner.run("webimage", arguments(killed)).status == 0)
        let resumed = try await Self.tarImages(killed)
        #expect(resumed == expected)
        // A shard lock file may stay when a kill came between a shard's stats and the removal of its lock.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: killed.path).filter {
            $0.hasPrefix(".") && !$0.hasSuffix(".lock")
        }
        #expect(leftovers == [foreign])
    }

    @Test func aSlowRowHoldsOnlyItsOwnShard() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Shard 0's first row waits at a gate; shards 1 and 2 must be written while it waits.
        let urls =
            ["/gen/0.png?gate=held"] + (1..<100).filter { Kind.of($0) == .ok }.prefix(11).map { "/gen/\($0).png" }
        let list = try Self.writeList(urls.map { server.url($0).absoluteString }, to: folder)
        let output = folder.appendingPathComponent("out")
        async let run = CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--shard-size", "4",
                "--size", "16", "--concurrency", "4",
                // The held row must not time out, however slow a loaded machine makes the rest.
                "--timeout", "600", "--stall-timeout", "600",
            ])
        let later = ["00001_stats.json", "00002_stats.json"].map { output.appendingPathComponent($0).path }
        let deadline = ContinuousClock.now + .seconds(120)
        while !later.allSatisfy({ FileManager.default.fileExists(atPath: $0) }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(later.allSatisfy { FileManager.default.fileExists(atPath: $0) }, "later shards waited for shard 0")
        #expect(server.waitingCount(atGate: "held") == 1)
        #expect(!FileManager.default.fileExists(atPath: output.appendingPathComponent("00000_stats.json").path))
        server.openGate("held")
        let result = try await run
        #expect(result.status == 0, "\(result.stderr)")
        let rows = try Self.jsonl(output)
        #expect(rows.count == 12)
        #expect(
            rows.allSatisfy { $0["status"] as? String == "success" },
            "\(rows.filter { $0["status"] as? String != "success" })")
        #expect(FileManager.default.fileExists(atPath: output.appendingPathComponent("00000_stats.json").path))
    }

    @Test func shardIndexesSplitTheWorkAndEnginesSetThem() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = (0..<120).filter { Kind.of($0) == .ok }.map { server.url("/gen/\($0).png").absoluteString }
        let list = try Self.writeList(urls, to: folder)
        func run(_ out: String, _ extra: [String], environment: [String: String] = [:]) async throws -> URL {
            let directory = folder.appendingPathComponent(out)
            let result = try await CLIRunner.run(
                "webimage",
                [
                    "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", directory.path, "--shard-size",
                    "10", "--size", "16",
                ] + extra,
                environment: environment)
            #expect(result.status == 0, "\(result.stderr)")
            return directory
        }
        func shardsDone(_ directory: URL) throws -> Set<Int> {
            Set(
                try FileManager.default.contentsOfDirectory(atPath: directory.path).compactMap { name in
                    name.hasSuffix("_stats.json") ? Int(name.prefix(5)) : nil
                })
        }
        let one = try await run("one", [])
        let all = try shardsDone(one)
        #expect(all.count == 10)

        // Two processes, index 0 and 1 of 2, into one directory: the same union as one process.
        let split = try await run("split", ["--shard-index", "0", "--shard-count", "2"])
        #expect(try shardsDone(split) == all.filter { $0 % 2 == 0 })
        _ = try await run("split", ["--shard-index", "1", "--shard-count", "2"])
        #expect(try shardsDone(split) == all)
        #expect(try await Self.tarImages(split) == (try await Self.tarImages(one)))

        // The engines' variables.
        let kubernetes = try await run("k8s", ["--shard-count", "3"], environment: ["JOB_COMPLETION_INDEX": "2"])
        #expect(try shardsDone(kubernetes) == all.filter { $0 % 3 == 2 })
        let slurm = try await run(
            "slurm", [], environment: ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4"])
        #expect(try shardsDone(slurm) == all.filter { $0 % 4 == 1 })
        let batch = try await run("batch", ["--shard-count", "5"], environment: ["AWS_BATCH_JOB_ARRAY_INDEX": "4"])
        #expect(try shardsDone(batch) == all.filter { $0 % 5 == 4 })
        let chosen = try await run("chosen", ["--shards", "3,7"])
        #expect(try shardsDone(chosen) == [3, 7])
    }

    @Test func retryFailedRedoesOnlyTheFailuresThatMaySucceed() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let count = 120
        let list = try Self.writeList((0..<count).map { server.url("/gen/\($0).png").absoluteString }, to: folder)
        let output = folder.appendingPathComponent("out")
        let arguments = [
            "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--shard-size", "50",
            "--size", "16",
        ]
        // No --retries: the throttled rows fail with their first 429.
        #expect(try await CLIRunner.run("webimage", arguments).status == 0)
        let first = try Self.jsonl(output)
        let throttled = Set(
            (0..<count).filter { Kind.of($0) == .throttled }.map { String(format: "00%03d%02d", $0 / 50, $0 % 50) })
        #expect(
            Set(
                first.filter { $0["error_code"] as? String == "invalidDownloadStatusCode" }.compactMap {
                    $0["key"] as? String
                }
            ).isSuperset(of: throttled))

        let retry = try await CLIRunner.run("webimage", arguments + ["--retry-failed"])
        #expect(retry.status == 0, "\(retry.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: output.path)
        #expect(names.contains("00000-retry1_stats.json") && names.contains("00000-retry1.tar"))
        var retried: [String: [String: Any]] = [:]
        for name in names where name.contains("-retry1.jsonl") {
            for line in try String(contentsOf: output.appendingPathComponent(name), encoding: .utf8).split(
                separator: "\n")
            {
                let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                retried[record["key"] as? String ?? ""] = record
            }
        }
        // The 429s now succeed under their original keys; robots-tagged rows were not retried; 404s still fail.
        #expect(throttled.allSatisfy { retried[$0]?["status"] as? String == "success" })
        let noAI = (0..<count).filter { Kind.of($0) == .noAI }.map { String(format: "00%03d%02d", $0 / 50, $0 % 50) }
        #expect(noAI.allSatisfy { retried[$0] == nil })
        let missing = (0..<count).filter { Kind.of($0) == .missing }.map {
            String(format: "00%03d%02d", $0 / 50, $0 % 50)
        }
        #expect(missing.allSatisfy { retried[$0]?["status"] as? String == "failed_to_download" })

        let stats = try await CLIRunner.run("webimage", ["bulk-stats", output.path])
        #expect(stats.stdout.contains("recovered"), "\(stats.stdout)")
    }

    @Test(
        "on a terminal, a progress line counts shards, images and the success rate",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "util-linux script gives a pty"))
    func progressLineOnATerminal() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try Self.writeList((0..<30).map { server.url("/gen/\($0).png").absoluteString }, to: folder)
        let command = [
            try CLIRunner.executable("webimage").path, "bulk", "--allow-destination", "127.0.0.0/8", list.path,
            "--output",
            folder.appendingPathComponent("out").path,
            "--shard-size", "10", "--size", "16",
        ].joined(separator: " ")
        // `script` runs the command with a pseudo-terminal as its stderr, as a user's shell would.
        let run = try await CLIRunner.runProgram(
            "/usr/bin/script", ["-qec", command, "/dev/null"], environment: ["TERM": "xterm"])
        #expect(run.status == 0, "\(run.stdout)")
        let lines = run.stdout.split(whereSeparator: { $0 == "\r" || $0 == "\n" }).map(String.init)
        let last = try #require(lines.last { $0.contains("shards ") })
        let successes = (0..<30).filter { [.ok, .throttled, .redirect].contains(Kind.of($0)) }.count
        // No --retries: the throttled rows fail here.
        let expected = successes - (0..<30).filter { Kind.of($0) == .throttled }.count
        #expect(last.contains("shards 3/3 · 30/30 images"), "\(last)")
        #expect(last.contains(String(format: "%.1f%% ok", 100 * Double(expected) / 30)), "\(last)")
    }

    @Test func jsonProgressLinesShardLinesAndASummary() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // The last row waits at a gate, so the run lasts until the test has seen a shard finish.
        let urls =
            (0..<100).filter { Kind.of($0) == .ok }.prefix(30).map { "/gen/\($0).png" } + ["/gen/0.png?gate=json"]
        let list = try Self.writeList(urls.map { server.url($0).absoluteString }, to: folder)
        let output = folder.appendingPathComponent("out")
        async let run = CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--shard-size", "10",
                "--size", "16", "--json",
                "--progress-interval", "0.1", "--timeout", "600", "--stall-timeout", "600",
            ])
        let first = output.appendingPathComponent("00000_stats.json").path
        let deadline = ContinuousClock.now + .seconds(120)
        while !(FileManager.default.fileExists(atPath: first) && server.waitingCount(atGate: "json") == 1)
            && ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(500))  // a few progress intervals while the gate holds the run
        server.openGate("json")
        let result = try await run
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try CLIRunner.jsonObjects(result)
        let progress = lines.filter { $0["event"] as? String == "progress" }
        let shards = lines.filter { $0["event"] as? String == "shard" }
        #expect(progress.count >= 2, "\(result.stdout)")
        #expect(shards.map { $0["shard"] as? Int ?? -1 }.sorted() == [0, 1, 2, 3])
        #expect(shards.reduce(0) { $0 + ($1["count"] as? Int ?? 0) } == 31)
        let summary = try #require(lines.last)
        #expect(summary["event"] as? String == "summary")
        #expect(summary["written"] as? Int == 4 && summary["shards"] as? Int == 4)
        // Progress counts only go up, and name every field a driver needs.
        let counts = progress.map { $0["images"] as? Int ?? -1 }
        #expect(counts == counts.sorted() && counts.allSatisfy { (0...31).contains($0) }, "\(counts)")
        for key in ["shards_done", "shards", "expected_images", "images_per_second", "success_rate", "eta_seconds"] {
            #expect(progress.allSatisfy { $0[key] != nil }, "\(key)")
        }
        #expect(progress.allSatisfy { $0["shards"] as? Int == 4 && $0["expected_images"] as? Int == 31 })
    }

    @Test("a reader that goes away (| head) ends the run quietly with status 141, as SIGPIPE would")
    func closedStdoutEndsQuietly() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // The gate never opens: only the closed pipe can end this run.
        let list = try Self.writeList([server.url("/gen/0.png?gate=never").absoluteString], to: folder)
        let arguments = [
            try CLIRunner.executable("webimage").path, "bulk", "--allow-destination", "127.0.0.0/8", list.path,
            "--output",
            folder.appendingPathComponent("out").path, "--json", "--progress-interval", "0.05",
        ]
        let run = try await CLIRunner.runProgram(
            "/bin/bash", ["-c", "set -o pipefail; \"$@\" | head -n 1", "bash"] + arguments)
        #expect(run.status == 141, "\(run.stderr)")
        #expect(run.stdoutLines.count == 1)
        #expect(!run.stderr.contains("Fatal error"), "\(run.stderr)")
    }

    @Test("deploy/: the Slurm script and the Indexed Job's arguments run as written")
    func deployFilesRunAsWritten() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = (0..<40).filter { Kind.of($0) == .ok }.map { server.url("/gen/\($0).png").absoluteString }
        let list = try Self.writeList(urls, to: folder)
        let deploy = Fixtures.packageRoot.appendingPathComponent("deploy")
        let binaries = try CLIRunner.executable("webimage").deletingLastPathComponent().path
        let path = binaries + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")

        // Slurm: the script as sbatch would start it, as array task 0 of 16.
        let slurmOutput = folder.appendingPathComponent("slurm")
        let slurm = try await CLIRunner.runProgram(
            "/bin/bash",
            [
                deploy.appendingPathComponent("slurm/bulk.sbatch").path, list.path, slurmOutput.path,
                "--allow-destination", "127.0.0.0/8",
            ],
            environment: ["PATH": path, "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "16"])
        #expect(slurm.status == 0, "\(slurm.stderr)")
        #expect(try Self.jsonl(slurmOutput).filter { $0["status"] as? String == "success" }.count == urls.count)

        // Kubernetes: the container's args, with the input and output paths pointed here, as index 0.
        let yaml = try String(
            contentsOf: deploy.appendingPathComponent("kubernetes/indexed-job.yaml"), encoding: .utf8)
        let lines = yaml.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex { $0.trimmingCharacters(in: .whitespaces) == "args:" })
        var arguments: [String] = []
        for line in lines[(start + 1)...] {
            let item = line.trimmingCharacters(in: .whitespaces)
            guard item.hasPrefix("- ") else { break }
            let value = String(item.dropFirst(2)).components(separatedBy: "   #")[0]
            arguments.append(value.trimmingCharacters(in: .whitespaces))
        }
        #expect(arguments.first == "bulk" && arguments.count > 10, "\(arguments)")
        let kubernetesOutput = folder.appendingPathComponent("kubernetes")
        arguments = arguments.map { argument in
            if argument.hasPrefix("/data/input/") || argument.hasPrefix("s3://") { return list.path }
            if argument.hasPrefix("--output=") { return "--output=" + kubernetesOutput.path }
            return argument
        }
        // The job downloads from public addresses only; this server is on loopback.
        let job = try await CLIRunner.run(
            "webimage", arguments + ["--allow-destination", "127.0.0.0/8"], environment: ["JOB_COMPLETION_INDEX": "0"])
        #expect(job.status == 0, "\(job.stderr)")
        let rows = try Self.jsonl(kubernetesOutput)
        #expect(rows.count == urls.count && rows.allSatisfy { $0["status"] as? String == "success" })
        #expect(rows.allSatisfy { ($0["caption"] as? String)?.hasPrefix("image ") == true })
    }

    @Test("--plan-only writes and prints the plan, downloads nothing, and still refuses a mismatched plan")
    func planOnly() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try Self.writeList((0..<25).map { "http://127.0.0.1:9/\($0).png" }, to: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--shard-size", "10",
                "--plan-only",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let plan = try #require(try CLIRunner.jsonObjects(run).first)
        #expect(plan["shards"] as? Int == 3 && plan["rows"] as? Int == 25 && plan["shardSize"] as? Int == 10)
        #expect(try FileManager.default.contentsOfDirectory(atPath: output.path) == ["plan.json"])
        let other = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--shard-size", "5",
                "--plan-only",
            ])
        #expect(other.status == 2, "\(other.stderr)")
    }

    @Test func everyInputFormatReadsTheSameRows() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = (0..<12).map { server.url("/gen/\($0).png").absoluteString }
        let inputs: [(String, String)] = [
            ("list.txt", (["# comment", ""] + urls).joined(separator: "\n")),
            ("list.tsv", (["url\tcaption"] + urls.map { "\($0)\tcap" }).joined(separator: "\r\n")),
            ("list.jsonl", urls.map { "{\"url\": \"\($0)\", \"caption\": \"cap\", \"n\": 1}" }.joined(separator: "\n")),
            ("list.csv", (["caption,url"] + urls.map { "\"a,\nb\",\($0)" }).joined(separator: "\n")),
        ]
        for (name, text) in inputs {
            let url = folder.appendingPathComponent(name)
            try text.write(to: url, atomically: true, encoding: .utf8)
            for path in [url.path, try Self.gzip(url).path] {
                let out = folder.appendingPathComponent("out-\(URL(fileURLWithPath: path).lastPathComponent)")
                let run = try await CLIRunner.run(
                    "webimage",
                    [
                        "bulk", "--allow-destination", "127.0.0.0/8", path, "--output", out.path, "--size", "16",
                        "--encode", "png",
                    ])
                #expect(run.status == 0, "\(path): \(run.stderr)")
                // Rows are written as they finish; in key order they are the input's.
                let rows = try Self.jsonl(out).sorted { ($0["key"] as? String ?? "") < ($1["key"] as? String ?? "") }
                #expect(rows.compactMap { $0["url"] as? String } == urls, "\(path)")
            }
        }
        // Errors no retry fixes exit with 2.
        let bad = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", folder.appendingPathComponent("list.tsv").path,
                "--output", folder.path + "/x", "--url-col",
                "link",
            ])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("no column 'link'"))
        let flags = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", folder.appendingPathComponent("list.txt").path,
                "--output", folder.path + "/y", "--shard-size",
                "1000001",
            ])
        #expect(flags.status == 2)
    }

    static func gzip(_ url: URL) throws -> URL {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-k", "-f", url.path]
        try process.run()
        process.waitUntilExit()
        return URL(fileURLWithPath: url.path + ".gz")
    }
}
