import Foundation
import LocalImageServer
import Testing
import WebImage

@testable import WebImageDataset

/// ``BulkJob`` from Swift, as `webimage bulk` uses it: its checks, the shard index from an array job's
/// environment, the downloader its settings make, and ``BulkStatsTotals``.
@Suite("BulkJob", .timeLimit(.minutes(5)))
struct BulkJobTests {
    /// A wrong choice and the error it gives.
    struct Refusal: Sendable, CustomStringConvertible {
        let change: @Sendable (inout BulkJob) -> Void
        let option: String
        let message: String
        var description: String { option }
    }

    static let refusals: [Refusal] = [
        Refusal(
            change: { $0.shardSize = 1_000_001 }, option: "--shard-size",
            message: "--shard-size must be between 1 and 1000000, got 1000001."),
        Refusal(
            change: { $0.shardDigits = 0 }, option: "--shard-digits",
            message: "--shard-digits must be between 1 and 12, got 0."),
        Refusal(change: { $0.concurrency = 0 }, option: "--concurrency", message: "--concurrency must be 1…4096."),
        Refusal(change: { $0.perHost = 0 }, option: "--per-host", message: "--per-host must be at least 1."),
        Refusal(
            change: { $0.objectStoreStallTimeout = 0.5 }, option: "--s3-stall-timeout",
            message: "--s3-stall-timeout must be 1…86400."),
        Refusal(
            change: { $0.maximumAspectRatio = 0.5 }, option: "--max-aspect-ratio",
            message: "--max-aspect-ratio must be at least 1 (the longer side over the shorter)."),
        Refusal(
            change: { $0.userAgentToken = "bot: x" }, option: "--user-agent-token",
            message: "--user-agent-token takes a name without ':', ';' or line breaks."),
        Refusal(
            change: {
                $0.disallowedHeaderDirectives = ["noai"]
                $0.ignoresRobotsTag = true
            }, option: "--disallowed-header-directives",
            message: "--disallowed-header-directives and --ignore-robots-tag exclude each other."),
        Refusal(
            change: {
                $0.verifyHashColumn = "sha"
                $0.hashAlgorithm = nil
            }, option: "--verify-hash",
            message: "--verify-hash checks the --compute-hash digest: it needs one other than none."),
        Refusal(
            change: { $0.savedColumns = ["id", "status"] }, option: "--save-cols",
            message: "--save-cols cannot keep 'status': the record has a field of that name "
                + "(\(BulkSampleRecord.fieldNames.sorted().joined(separator: ", ")))."),
        Refusal(
            change: {
                $0.resizeMode = nil
                $0.resizeOnlyIfBigger = true
            }, option: "--resize-only-if-bigger",
            message: "--resize-only-if-bigger needs a --resize-mode other than none."),
        Refusal(
            change: { $0.lossless = true }, option: "--lossless",
            message: "--lossless applies to --encode webp only, not jpeg."),
        Refusal(
            change: {
                $0.encoding = nil
                $0.optimizesJPEGHuffmanTables = true
            }, option: "--optimize-jpeg", message: "--optimize-jpeg applies to --encode jpeg only, not none."),
        Refusal(
            change: { $0.encoding = nil }, option: "--encode",
            message: "--encode none keeps the downloaded bytes: it needs --resize-mode none."),
        Refusal(
            change: { $0.allowedDestinations = ["10.0.0.0/33"] }, option: "--allow-destination",
            message: "--allow-destination takes a network such as 10.1.0.0/16 or ::1/128, got '10.0.0.0/33'."),
        Refusal(
            change: {
                $0.allowedDestinations = ["10.0.0.0/8"]
                $0.allowsPrivateDestinations = true
            }, option: "--allow-destination",
            message: "--allow-destination and --allow-private-destinations exclude each other."),
        Refusal(
            change: { $0.shards = [1, -2] }, option: "--shards", message: "--shards takes shard numbers, got '-2'."),
        Refusal(
            change: {
                $0.input = "urls.txt.gz"
                $0.captionColumn = "caption"
                $0.savedColumns = ["id"]
            }, option: "--caption-col",
            message: "--caption-col, --save-cols name a column, and a .txt input has none (one URL per line): use "
                + "a .csv, .tsv, .json, .jsonl or .parquet input."),
    ]

    @Test("each wrong choice is refused with the option and the sentence webimage bulk prints", arguments: refusals)
    func refusesWrongChoices(_ refusal: Refusal) {
        var job = BulkJob(input: "urls.csv", output: "out")
        #expect(throws: Never.self) { try job.validate() }
        refusal.change(&job)
        #expect(throws: BulkJobError(option: refusal.option, refusal.message)) { try job.validate() }
    }

    @Test("the settings carry the choices: encoder, resize, robots directives, User-Agent, destinations")
    func settingsCarryTheChoices() throws {
        var job = BulkJob(input: "urls.parquet", output: "out")
        #expect(try job.settings().download.destinationPolicy == .publicOnly)
        job.encoding = .webp
        job.lossless = true
        job.resizeMode = .border
        job.size = 64
        job.userAgentToken = " MyBot "
        job.disallowedHeaderDirectives = [" NoAI", "", "noindex"]
        job.allowedDestinations = ["127.0.0.0/8"]
        job.perHost = 3
        let settings = try job.settings()
        #expect(settings.encoder is WebPEncoder)
        #expect(settings.resize == BulkResize(mode: .border, size: 64, onlyIfBigger: false, borderColor: .clear))
        #expect(settings.disallowedHeaderDirectives == ["noai", "noindex"] && settings.userAgentToken == "mybot")
        let config = settings.downloaderConfig()
        #expect(config.headers["User-Agent"] == "\(BulkDownloadSettings.defaultUserAgent) (compatible; MyBot)")
        #expect(config.destinationPolicy == DestinationPolicy.publicOnly.allowing(["127.0.0.0/8"]))
        #expect(config.maximumConnectionsPerHost == 3 && config.maximumTotalConnections == 64)
        job.allowedDestinations = []
        job.allowsPrivateDestinations = true
        #expect(try job.settings().downloaderConfig().destinationPolicy == .allowAll)
    }

    @Test("the default downloader configuration refuses private addresses and keeps no cookies")
    func defaultDownloaderConfiguration() {
        let config = BulkSettings().downloaderConfig()
        #expect(config.destinationPolicy == .publicOnly)
        #expect(config.cookieStorage == nil)
        #expect(config.maxConcurrentDownloads == 64 * BulkSettings.rowsPerConnection)
        #expect(config.retryPolicy.maximumAttempts == 1)
    }

    // MARK: Shard assignment

    @Test("the index comes from Kubernetes, Slurm (less its minimum) or AWS Batch; the options win")
    func assignmentFromArrayJobs() throws {
        let kubernetes = try BulkShardAssignment.resolve(
            index: nil, count: 4, environment: ["JOB_COMPLETION_INDEX": "3"])
        #expect(kubernetes == BulkShardAssignment(index: 3, count: 4))
        let slurm = try BulkShardAssignment.resolve(
            index: nil, count: nil,
            environment: ["SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "8"])
        #expect(slurm == BulkShardAssignment(index: 4, count: 8))
        let batch = try BulkShardAssignment.resolve(
            index: nil, count: 3, environment: ["AWS_BATCH_JOB_ARRAY_INDEX": "2"])
        #expect(batch == BulkShardAssignment(index: 2, count: 3))
        // Kubernetes' variable is read first; an index given wins over every variable.
        let both = ["JOB_COMPLETION_INDEX": "1", "AWS_BATCH_JOB_ARRAY_INDEX": "2"]
        #expect(try BulkShardAssignment.resolve(index: nil, count: 3, environment: both).index == 1)
        #expect(try BulkShardAssignment.resolve(index: 0, count: 3, environment: both).index == 0)
        #expect(try BulkShardAssignment.resolve(index: nil, count: nil, environment: [:]) == .all)

        var job = BulkJob(input: "urls.csv", output: "out")
        job.shardCount = 2
        let assignment = try job.assignment(environment: ["JOB_COMPLETION_INDEX": "1"])
        let plan = BulkPlan(input: "urls.csv", inputBytes: 1, rows: 50, shardSize: 10, shards: 5, format: "webdataset")
        #expect(plan.assigned(assignment) == [1, 3])
        job.shardCount = nil
        job.shards = [4, 9, 0]
        #expect(plan.assigned(try job.assignment(environment: [:])) == [0, 4])
    }

    @Test("a count without an index, an index without a count, and one out of range are refused")
    func assignmentRefusals() {
        #expect(
            throws: BulkJobError(option: "--shard-count", "--shard-count needs --shard-index (or an engine's index).")
        ) { try BulkShardAssignment.resolve(index: nil, count: 2, environment: [:]) }
        #expect(
            throws: BulkJobError(
                option: "--shard-index", "a shard index (2) needs --shard-count N (or SLURM_ARRAY_TASK_COUNT).")
        ) { try BulkShardAssignment.resolve(index: nil, count: nil, environment: ["AWS_BATCH_JOB_ARRAY_INDEX": "2"]) }
        #expect(throws: BulkJobError(option: "--shard-index", "shard index 3 is outside 0..<3.")) {
            try BulkShardAssignment.resolve(
                index: nil, count: nil,
                environment: [
                    "SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3",
                ])
        }
    }

    // MARK: A job end to end

    /// Runs a job over one row, the server's PNG, into a new directory; the row's record.
    static func runOneRow(_ change: (inout BulkJob) -> Void) async throws -> BulkSampleRecord {
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        let png = try PNGEncoder().encode(
            ImageFrame(width: 4, height: 4, bytesPerRow: 16, pixels: [UInt8](repeating: 200, count: 64)))
        server.route("/img.png") { _ in
            LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/png")], body: .data(png))
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-job-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("urls.csv")
        try "url\n\(server.url("/img.png").absoluteString)\n".write(to: input, atomically: true, encoding: .utf8)

        var job = BulkJob(input: input.path, output: folder.appendingPathComponent("out").path)
        job.resizeMode = nil
        job.encoding = .png
        change(&job)
        try job.validate()
        let workspace = try await job.open(environment: [:])
        defer { workspace.removeTemporaryFiles() }
        let plan = try await job.plan(in: workspace)
        let engine = try await job.makeEngine(
            plan: plan, assigned: plan.assigned(try job.assignment(environment: [:])), in: workspace)
        let summary = try await engine.run()
        #expect(summary.written == 1)
        let line = try String(contentsOf: workspace.directory.appendingPathComponent("00000.jsonl"), encoding: .utf8)
        return try JSONDecoder().decode(BulkSampleRecord.self, from: Data(line.utf8))
    }

    @Test("by default a row on a loopback address fails with destinationNotAllowed; an allowed network is fetched")
    func defaultJobRefusesLoopback() async throws {
        let refused = try await Self.runOneRow { _ in }
        #expect(refused.status == .failedToDownload)
        #expect(refused.failure == .download(code: "destinationNotAllowed"))

        let allowed = try await Self.runOneRow { $0.allowedDestinations = ["127.0.0.0/8"] }
        #expect(allowed.status == .success && allowed.width == 4)
    }

    @Test("an engine made from default settings refuses a loopback row as the job does")
    func engineWithDefaultSettingsRefusesLoopback() async throws {
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        server.route("/img.png") { _ in .text("not reached", status: 200) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-safe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("urls.txt")
        try server.url("/img.png").absoluteString.write(to: input, atomically: true, encoding: .utf8)
        let plan = try BulkPlan.settle(
            try BulkPlan.make(
                input: input.path, columns: BulkColumns(), maxLineBytes: 1000, shardSize: 10, format: "webdataset"),
            in: folder)
        let engine = BulkEngine(
            input: input.path, plan: plan, assigned: [0], directory: folder, settings: BulkSettings(),
            columns: BulkColumns())
        let summary = try await engine.run()
        #expect(
            summary
                == BulkRunSummary(
                    written: 1, skipped: 0, busy: 0, succeeded: 0, failed: 1, failures: ["destinationNotAllowed": 1]))
        let line = try String(contentsOf: folder.appendingPathComponent("00000.jsonl"), encoding: .utf8)
        let record = try JSONDecoder().decode(BulkSampleRecord.self, from: Data(line.utf8))
        #expect(record.failure == .download(code: "destinationNotAllowed"))
        #expect(server.requests(for: "/img.png").isEmpty)
    }

    // MARK: Stats totals

    @Test(
        "stats totals sum the shards (img2dataset's fields and the older ones), count retries apart, and span the first start to the last end"
    )
    func statsTotals() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-totals-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func write(_ name: String, _ stats: BulkShardStats) throws {
            try JSONEncoder().encode(stats).write(to: folder.appendingPathComponent(name))
        }
        var first = BulkShardStats(shard: 0)
        for _ in 0..<8 { first.tally(nil) }
        first.tally(.tooSmall)
        first.tally(.download(code: "invalidDownloadStatusCode"))
        (first.bytes, first.duration) = (1000, 2)
        (first.startTime, first.endTime) = (100, 102)
        var retry = BulkShardStats(shard: 0)
        retry.tally(nil)
        (retry.startTime, retry.endTime) = (110, 111)
        try write("00000_stats.json", first)
        // A shard of a run before img2dataset's field names.
        let old =
            #"{"shard":1,"count":5,"successes":4,"failures":{"tooSmall":1},"bytes":500,"duration":3,"#
            + #""started":101,"finished":104}"#
        try Data(old.utf8).write(to: folder.appendingPathComponent("00001_stats.json"))
        try write("00000-retry1_stats.json", retry)
        try Data("not json".utf8).write(to: folder.appendingPathComponent("00002_stats.json"))
        let plan = BulkPlan(input: "urls.csv", inputBytes: 1, rows: 25, shardSize: 10, shards: 3, format: "webdataset")
        try JSONEncoder().encode(plan).write(to: folder.appendingPathComponent("plan.json"))

        let totals = try BulkStatsTotals.sum(directory: folder.path)
        #expect(totals.shards == 2 && totals.plannedShards == 3)
        #expect(totals.total.count == 15 && totals.total.successes == 12 && totals.total.bytes == 1500)
        #expect(totals.total.failures == ["tooSmall": 2, "invalidDownloadStatusCode": 1])
        #expect(totals.total.statusDict == ["success": 12, "tooSmall": 2, "invalidDownloadStatusCode": 1])
        #expect(totals.total.failedToResize == 2 && totals.total.failedToDownload == 1)
        #expect(totals.total.duration == 5)
        #expect(totals.retried == 1 && totals.recovered == 1)
        #expect(totals.wallSeconds == 11)
    }

    @Test("stats totals refuse counts that overflow or are negative, and a path that is not a directory")
    func statsTotalsRefusals() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-forged-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var huge = BulkShardStats(shard: 0)
        huge.count = Int.max
        try JSONEncoder().encode(huge).write(to: folder.appendingPathComponent("00000_stats.json"))
        var more = BulkShardStats(shard: 1)
        more.count = 1
        try JSONEncoder().encode(more).write(to: folder.appendingPathComponent("00001_stats.json"))
        #expect(throws: BulkInputError.self) { try BulkStatsTotals.sum(directory: folder.path) }
        do {
            _ = try BulkStatsTotals.sum(directory: folder.path)
        } catch let error as BulkInputError {
            #expect(error.description == "00001_stats.json: counts out of range (1)")
        }
        let missing = folder.appendingPathComponent("missing").path
        do {
            _ = try BulkStatsTotals.sum(directory: missing)
            Issue.record("a missing directory was summed")
        } catch let error as BulkInputError {
            #expect(error.description == "'\(missing)' is not a directory")
        }
    }
}
