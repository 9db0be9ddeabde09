import Foundation
import LocalImageServer
import TestSupport
import Testing

/// `webimage bulk` with `s3://` input and output, run as built against moto's S3 server on loopback
/// (signatures checked), through a proxy that answers the first PUT of a tar with a 500.
// Serialized: each test starts moto, whose start blocks the calling thread for seconds; several at once
// would hold the cooperative pool's few threads and stall the other suites.
@Suite(
    "webimage bulk on an object store", .serialized, .timeLimit(.minutes(10)),
    .enabled(if: MotoS3.available, "make test-python sets up .venv-test with moto[server] and boto3"))
struct BulkObjectStorageTests {
    /// The arguments of a run of `list` into `output`.
    static func arguments(_ list: String, _ output: String, _ extra: [String] = []) -> [String] {
        [
            "bulk", "--allow-destination", "127.0.0.0/8", list, "--output", output, "--shard-size", "25", "--size",
            "32", "--concurrency", "8",
        ] + extra
    }

    @Test func aRunWritesEveryShardWholeAndARerunSkipsThem() async throws {
        let store = try await MotoS3.start()
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = (0..<100).filter { BulkCommandTests.Kind.of($0) == .ok }.map {
            server.url("/gen/\($0).png").absoluteString
        }
        let list = try BulkCommandTests.writeList(urls, to: folder)
        let local = folder.appendingPathComponent("local")
        #expect(try await CLIRunner.run("webimage", Self.arguments(list.path, local.path)).status == 0)

        // Through the proxy: its 500 for the first tar is retried.
        let run = try await CLIRunner.run(
            "webimage", Self.arguments(list.path, "s3://bulk/full"), environment: store.environment(viaProxy: true))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try await store.faultsInjected() == 1)
        let shards = (urls.count + 24) / 25
        let keys = Set(try await store.keys(prefix: "full/"))
        for shard in 0..<shards {
            let stem = String(format: "full/%05d", shard)
            #expect(keys.isSuperset(of: [stem + ".tar", stem + ".jsonl", stem + ".parquet", stem + "_stats.json"]))
        }
        #expect(keys.contains("full/plan.json"))
        let copy = folder.appendingPathComponent("copy")
        try await store.download(prefix: "full/", to: copy)
        #expect(try await BulkCommandTests.tarImages(copy) == (try await BulkCommandTests.tarImages(local)))
        #expect(try BulkCommandTests.jsonl(copy).count == urls.count)

        let rerun = try await CLIRunner.run(
            "webimage", Self.arguments(list.path, "s3://bulk/full"), environment: store.environment())
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(rerun.stderr.contains("0 shard(s) written, \(shards) already done"), "\(rerun.stderr)")

        // Another input under the same prefix is refused, naming the plan's object.
        let other = try BulkCommandTests.writeList(Array(urls.prefix(3)), to: folder, name: "other.csv")
        let refused = try await CLIRunner.run(
            "webimage", Self.arguments(other.path, "s3://bulk/full"), environment: store.environment())
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("s3://bulk/full/plan.json describes another input"), "\(refused.stderr)")
    }

    @Test("--dedup exact with an s3:// output: two workers share the index in the prefix, one row kept per file")
    func exactDeduplicationInTheStore() async throws {
        let store = try await MotoS3.start()
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Copies of three files in different shards, and two workers (BulkModesTests.duplicateRows).
        let list = try BulkModesTests.duplicatesList(server, in: folder)
        for index in ["0", "1"] {
            let run = try await CLIRunner.run(
                "webimage",
                Self.arguments(
                    list.path, "s3://bulk/dedup",
                    ["--shard-size", "3", "--dedup", "exact", "--shard-index", index, "--shard-count", "2"]),
                environment: store.environment())
            #expect(run.status == 0, "\(run.stderr)")
        }
        let copy = folder.appendingPathComponent("copy")
        try await store.download(prefix: "dedup/", to: copy)
        let rows = try BulkInputTests.rows(copy)
        BulkModesTests.expectOneKeptPerFile(rows)
        // One index object per kept file, holding the kept row's key; the probe object is gone.
        let index = try await store.keys(prefix: "dedup/.dedup/").sorted()
        #expect(index.count == 3, "\(index)")
        #expect(!index.contains { $0.contains("probe-") })
        // A redone shard finds its own keys in the store's index and keeps what it kept.
        let before = rows.filter { ($0["key"] as? String ?? "").hasPrefix("00000") }.map { $0["status"] as? String }
        try await store.delete(key: "dedup/00000_stats.json")
        let redo = try await CLIRunner.run(
            "webimage",
            Self.arguments(list.path, "s3://bulk/dedup", ["--shard-size", "3", "--dedup", "exact", "--shards", "0"]),
            environment: store.environment())
        #expect(redo.status == 0 && redo.stderr.contains("1 shard(s) written"), "\(redo.stderr)")
        let again = folder.appendingPathComponent("again")
        try await store.download(prefix: "dedup/", to: again)
        let after = try BulkInputTests.rows(again).filter { ($0["key"] as? String ?? "").hasPrefix("00000") }
        #expect(after.map { $0["status"] as? String } == before)
    }

    @Test("--dedup phash with an s3:// output: two workers at once share the log in the prefix")
    func perceptualDeduplicationInTheStore() async throws {
        let store = try await MotoS3.start()
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Shards of two rows: each picture's second file is in a shard of the other worker, and the two
        // workers run at the same time, so their claims race for the log's numbers.
        let list = try BulkModesTests.picturesList(server, in: folder)
        func worker(_ extra: [String]) async throws -> CLIRunner.Output {
            try await CLIRunner.run(
                "webimage",
                // At 64 pixels, as BulkModesTests' run: the hashes are of the resized pictures.
                Self.arguments(
                    list.path, "s3://bulk/phash", ["--shard-size", "2", "--size", "64", "--dedup", "phash"] + extra),
                environment: store.environment())
        }
        async let first = worker(["--shard-index", "0", "--shard-count", "2"])
        async let second = worker(["--shard-index", "1", "--shard-count", "2"])
        for run in try await [first, second] { #expect(run.status == 0, "\(run.stderr)") }
        let copy = folder.appendingPathComponent("copy")
        try await store.download(prefix: "phash/", to: copy)
        let rows = try BulkInputTests.rows(copy)
        BulkModesTests.expectOneKeptPerPicture(rows)
        // The log: one numbered object per kept picture, each `HASH KEY` of a kept row; no probe left.
        let log = try await store.keys(prefix: "phash/.dedup/").sorted()
        #expect(log == (0..<3).map { String(format: "phash/.dedup/phash/%012d", $0) }, "\(log)")
        let kept = Set(
            rows.filter { $0["status"] as? String == "success" }.map { "\($0["phash"] ?? "") \($0["key"] ?? "")" })
        let entries = try Set(
            log.map { key in
                try String(
                    contentsOf: copy.appendingPathComponent(String(key.dropFirst("phash/".count))), encoding: .utf8
                )
                .trimmingCharacters(in: .newlines)
            })
        #expect(entries == kept, "\(entries) against \(kept)")
        // A redone shard finds its own rows in the log and keeps what it kept.
        let before = rows.filter { ($0["key"] as? String ?? "").hasPrefix("00000") }.map { $0["status"] as? String }
        try await store.delete(key: "phash/00000_stats.json")
        let redo = try await worker(["--shards", "0"])
        #expect(redo.status == 0 && redo.stderr.contains("1 shard(s) written"), "\(redo.stderr)")
        let again = folder.appendingPathComponent("again")
        try await store.download(prefix: "phash/", to: again)
        let after = try BulkInputTests.rows(again).filter { ($0["key"] as? String ?? "").hasPrefix("00000") }
        #expect(after.map { $0["status"] as? String } == before)
        #expect(try await store.keys(prefix: "phash/.dedup/").count == 3)
    }

    @Test func theFilesFormatUploadsEverySamplesObjects() async throws {
        let store = try await MotoS3.start()
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = (0..<40).filter { BulkCommandTests.Kind.of($0) == .ok }.map {
            server.url("/gen/\($0).png").absoluteString
        }
        let list = try BulkCommandTests.writeList(urls, to: folder)
        let run = try await CLIRunner.run(
            "webimage",
            Self.arguments(list.path, "s3://bulk/files", ["--format", "files", "--caption-col", "caption"]),
            environment: store.environment())
        #expect(run.status == 0, "\(run.stderr)")
        let keys = try await store.keys(prefix: "files/")
        // Each sample's image, json and caption, under its shard's folder.
        #expect(keys.filter { $0.hasSuffix(".jpg") }.count == urls.count)
        #expect(keys.filter { $0.hasSuffix(".txt") }.count == urls.count)
        #expect(keys.filter { $0.hasSuffix("_stats.json") }.count == (urls.count + 24) / 25)
        // Shards of 25 rows: 5 digits of shard, 2 of row.
        #expect(keys.contains("files/00000/0000000.json") && keys.contains("files/00001/0000100.jpg"))
    }

    @Test func aKilledRunResumesToTheSameSamples() async throws {
        let store = try await MotoS3.start()
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = (0..<300).filter { BulkCommandTests.Kind.of($0) == .ok }.map {
            server.url("/gen/\($0).png").absoluteString
        }
        let list = try BulkCommandTests.writeList(urls, to: folder)
        let reference = folder.appendingPathComponent("reference")
        #expect(try await CLIRunner.run("webimage", Self.arguments(list.path, reference.path)).status == 0)

        // The working directories go to a TMPDIR of the test's, so what the killed runs leave is seen.
        let scratch = folder.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        var environment = store.environment()
        environment["TMPDIR"] = scratch.path
        var generator = SystemRandomNumberGenerator()
        var interrupted = 0
        // A run that ends before its kill leaves nothing to resume: until one is interrupted, each such run
        // moves the next to a fresh prefix with half the time before the kill, so a fast machine still
        // interrupts one (and a slow one is not asked to be fast).
        var prefix = "killed"
        var longestKill = 1500
        for attempt in 0..<6 {
            let killed = try await CLIRunner.run(
                "webimage", Self.arguments(list.path, "s3://bulk/\(prefix)"), environment: environment,
                killAfterMilliseconds: Int.random(in: min(100, longestKill)...longestKill, using: &generator))
            if killed.signalled || killed.status != 0 {
                interrupted += 1
            } else if interrupted == 0 {
                prefix = "killed\(attempt)"
                longestKill = max(20, longestKill / 2)
            }
            // Whatever the kill interrupted, a shard's stats object is there only with its tar and jsonl.
            let keys = Set(try await store.keys(prefix: prefix + "/"))
            for key in keys where key.hasSuffix("_stats.json") {
                let stem = String(key.dropLast("_stats.json".count))
                #expect(keys.contains(stem + ".tar") && keys.contains(stem + ".jsonl"), "\(key) without its files")
            }
        }
        #expect(interrupted > 0, "no run was killed mid-way")
        let rerun = try await CLIRunner.run(
            "webimage", Self.arguments(list.path, "s3://bulk/\(prefix)"), environment: environment)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        // The rerun removed the killed runs' working directories, and its own.
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == [])
        let copy = folder.appendingPathComponent("copy")
        try await store.download(prefix: prefix + "/", to: copy)
        #expect(try await BulkCommandTests.tarImages(copy) == (try await BulkCommandTests.tarImages(reference)))
    }

    @Test func retryFailedRunsAgainTheFailuresOfPublishedShards() async throws {
        let store = try await MotoS3.start()
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let count = 60
        let list = try BulkCommandTests.writeList(
            (0..<count).map { server.url("/gen/\($0).png").absoluteString }, to: folder)
        // No --retries: the throttled rows fail with their first 429, then succeed when retried.
        let arguments = Self.arguments(list.path, "s3://bulk/retry")
        #expect(try await CLIRunner.run("webimage", arguments, environment: store.environment()).status == 0)
        let retry = try await CLIRunner.run(
            "webimage", arguments + ["--retry-failed"], environment: store.environment())
        #expect(retry.status == 0, "\(retry.stderr)")
        let keys = Set(try await store.keys(prefix: "retry/"))
        #expect(keys.isSuperset(of: ["retry/00000-retry1.jsonl", "retry/00000-retry1_stats.json"]), "\(keys)")
        let copy = folder.appendingPathComponent("copy")
        try await store.download(prefix: "retry/", to: copy)
        var retried: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: copy.path) where name.contains("-retry1.jsonl")
        {
            for line in try String(contentsOf: copy.appendingPathComponent(name), encoding: .utf8).split(
                separator: "\n")
            {
                let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                retried[record["key"] as? String ?? ""] = record["status"] as? String
            }
        }
        let throttled = (0..<count).filter { BulkCommandTests.Kind.of($0) == .throttled }.map {
            String(format: "%05d%02d", $0 / 25, $0 % 25)
        }
        #expect(!throttled.isEmpty && throttled.allSatisfy { retried[$0] == "success" }, "\(retried)")
        let missing = (0..<count).filter { BulkCommandTests.Kind.of($0) == .missing }.map {
            String(format: "%05d%02d", $0 / 25, $0 % 25)
        }
        #expect(missing.allSatisfy { retried[$0] == "failed_to_download" })
    }

    @Test func wrongCredentialsExitWith2AndSaySo() async throws {
        let store = try await MotoS3.start()
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try BulkCommandTests.writeList(["http://127.0.0.1:9/a.png"], to: folder)
        let wrongSecret = try await CLIRunner.run(
            "webimage", Self.arguments(list.path, "s3://bulk/denied"), environment: store.environment(secret: "wrong"))
        #expect(wrongSecret.status == 2)
        #expect(wrongSecret.stderr.contains("HTTP 403 (SignatureDoesNotMatch"), "\(wrongSecret.stderr)")
        #expect(wrongSecret.stderr.contains("check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY"))

        var unknownKey = store.environment()
        unknownKey["AWS_ACCESS_KEY_ID"] = "AKIAUNKNOWNKEY000000"
        let unknown = try await CLIRunner.run(
            "webimage", Self.arguments(list.path, "s3://bulk/denied"), environment: unknownKey)
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("InvalidAccessKeyId"), "\(unknown.stderr)")

        var none = store.environment()
        none["AWS_ACCESS_KEY_ID"] = ""
        let missing = try await CLIRunner.run(
            "webimage", Self.arguments(list.path, "s3://bulk/denied"), environment: none)
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"), "\(missing.stderr)")
        #expect(try await store.keys(prefix: "denied/").isEmpty)

        // A store that does not answer: a network error naming the address, exit 1 (a rerun may pass).
        var closed = store.environment()
        closed["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"
        let offline = try await CLIRunner.run(
            "webimage", Self.arguments(list.path, "s3://bulk/denied"), environment: closed)
        #expect(offline.status == 1)
        #expect(offline.stderr.contains("127.0.0.1:9/bulk/denied/plan.json: Couldn't connect"), "\(offline.stderr)")
    }

    @Test func everyInputFormatIsReadFromTheStore() async throws {
        let store = try await MotoS3.start()
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = (0..<6).map { server.url("/gen/\($0).png").absoluteString }
        let inputs: [(String, String)] = [
            ("list.txt", urls.joined(separator: "\n")),
            ("list.tsv", (["url\tcaption"] + urls.map { "\($0)\tcap" }).joined(separator: "\n")),
            ("list.jsonl", urls.map { "{\"url\": \"\($0)\"}" }.joined(separator: "\n")),
            ("list.csv", (["url"] + urls).joined(separator: "\n")),
        ]
        var files: [URL] = []
        for (name, text) in inputs {
            let url = folder.appendingPathComponent(name)
            try text.write(to: url, atomically: true, encoding: .utf8)
            files += [url, try BulkCommandTests.gzip(url)]
        }
        let parquet = folder.appendingPathComponent("list.parquet")
        let write = try await CLIRunner.runProgram(
            MotoS3.python,
            [
                "-c",
                "import sys, pyarrow as pa, pyarrow.parquet as pq; "
                    + "pq.write_table(pa.table({'url': sys.argv[2:]}), sys.argv[1])", parquet.path,
            ] + urls)
        #expect(write.status == 0, "\(write.stderr)")
        files.append(parquet)
        for file in files {
            try await store.upload(file, key: "inputs/" + file.lastPathComponent)
            let out = folder.appendingPathComponent("out-" + file.lastPathComponent)
            let run = try await CLIRunner.run(
                "webimage", Self.arguments("s3://bulk/inputs/" + file.lastPathComponent, out.path),
                environment: store.environment())
            #expect(run.status == 0, "\(file.lastPathComponent): \(run.stderr)")
            let rows = try BulkCommandTests.jsonl(out).sorted {
                ($0["key"] as? String ?? "") < ($1["key"] as? String ?? "")
            }
            #expect(rows.compactMap { $0["url"] as? String } == urls, "\(file.lastPathComponent)")
        }
        let absent = try await CLIRunner.run(
            "webimage", Self.arguments("s3://bulk/inputs/none.csv", folder.appendingPathComponent("x").path),
            environment: store.environment())
        #expect(absent.status == 2)
        #expect(absent.stderr.contains("GetObject s3://bulk/inputs/none.csv failed with HTTP 404 (NoSuchKey"))
    }
}
