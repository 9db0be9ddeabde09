import Foundation
import LocalImageServer
import Testing
import WebImage

@testable import WebImageDataset

/// ``BulkEngine`` driven from Swift against the loopback server: its events, summaries, skips and retries.
@Suite("BulkEngine", .timeLimit(.minutes(5)))
struct BulkEngineTests {
    /// `/img/N.png` is a small PNG, except `/img/3.png`, a 404.
    static func server() throws -> LocalImageServer {
        let server = LocalImageServer(root: nil)
        try server.start()
        var pixels: [UInt8] = []
        for index in 0..<(12 * 8) { pixels += [UInt8(index % 256), 80, 160, 255] }
        let png = try PNGEncoder().encode(ImageFrame(width: 12, height: 8, bytesPerRow: 48, pixels: pixels))
        server.route("/img/") { request in
            if request.path.hasSuffix("/3.png") { return .text("gone", status: 404) }
            return LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/png")], body: .data(png))
        }
        return server
    }

    static func engine(input: URL, directory: URL, plan: BulkPlan) -> BulkEngine {
        var config = ImageDownloaderConfig()
        config.destinationPolicy = DestinationPolicy.publicOnly.allowing(["127.0.0.0/8"])
        var settings = BulkSettings()
        settings.concurrency = 4
        settings.encoder = PNGEncoder()
        return BulkEngine(
            input: input.path, plan: plan, assigned: Array(0..<plan.shards), directory: directory,
            downloader: ImageDownloader(config: config), settings: settings, columns: BulkColumns())
    }

    /// The events of `body`'s run, collected until the stream ends.
    static func collect<T: Sendable>(
        _ engine: BulkEngine, _ body: @Sendable () async throws -> T
    ) async throws -> (T, [BulkEvent]) {
        let collecting = Task {
            var events: [BulkEvent] = []
            for await event in engine.events { events.append(event) }
            return events
        }
        let result = try await body()
        return (result, await collecting.value)
    }

    static func finishedStats(_ events: [BulkEvent]) -> [BulkShardStats] {
        events.compactMap { event in
            if case .shardFinished(let stats) = event { return stats }
            return nil
        }
    }

    @Test("a run reports each finished shard, a rerun skips them, a retry runs only the failed row again")
    func runRerunAndRetry() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-engine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("list.txt")
        try (0..<7).map { server.url("/img/\($0).png").absoluteString }.joined(separator: "\n").write(
            to: input, atomically: true, encoding: .utf8)
        let directory = folder.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let plan = try BulkPlan.settle(
            try BulkPlan.make(
                input: input.path, columns: BulkColumns(), maxLineBytes: 1000, shardSize: 3, format: "webdataset"),
            in: directory)
        #expect(plan.rows == 7 && plan.shards == 3)

        let first = Self.engine(input: input, directory: directory, plan: plan)
        let (summary, events) = try await Self.collect(first) { try await first.run() }
        #expect(
            summary
                == BulkRunSummary(
                    written: 3, skipped: 0, busy: 0, succeeded: 6, failed: 1, failures: ["invalidDownloadStatusCode": 1]
                ))
        let stats = Self.finishedStats(events).sorted { $0.shard < $1.shard }
        #expect(stats.map(\.shard) == [0, 1, 2] && stats.map(\.count) == [3, 3, 1])
        #expect(stats[1].failures == ["invalidDownloadStatusCode": 1] && stats[1].successes == 2)
        #expect(stats[1].statusDict == ["success": 2, "invalidDownloadStatusCode": 1])
        #expect(stats[1].failedToDownload == 1 && stats[1].failedToResize == 0)
        let now = Date().timeIntervalSince1970
        for shard in stats {
            let (started, finished) = (try #require(shard.startTime), try #require(shard.endTime))
            #expect(now - 300 < started && started <= finished && finished <= now + 1)
        }
        let snapshot = first.progressSnapshot()
        #expect(snapshot.images == 7 && snapshot.shardsDone == 3 && snapshot.successRate == 6.0 / 7)
        for name in ["00000.tar", "00001.jsonl", "00001.parquet", "00002_stats.json"] {
            #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path), "\(name)")
        }

        let second = Self.engine(input: input, directory: directory, plan: plan)
        let (rerun, rerunEvents) = try await Self.collect(second) { try await second.run() }
        #expect(rerun == BulkRunSummary(written: 0, skipped: 3, busy: 0))
        #expect(Self.finishedStats(rerunEvents).isEmpty)

        let third = Self.engine(input: input, directory: directory, plan: plan)
        let (retry, retryEvents) = try await Self.collect(third) { try await third.retryFailed() }
        #expect(retry == BulkRetrySummary(retriedRows: 1, busy: 0, succeeded: 0, failed: 1))
        #expect(Self.finishedStats(retryEvents).map(\.shard) == [1])
        let line = try String(
            contentsOf: directory.appendingPathComponent("00001-retry1.jsonl"), encoding: .utf8)
        let record = try JSONDecoder().decode(BulkSampleRecord.self, from: Data(line.utf8))
        #expect(record.key == "000010" && record.failure == .download(code: "invalidDownloadStatusCode"))
    }

    @Test("a retry keeps a Parquet input's kept columns' types: FLOAT stays float, a whole DOUBLE stays double")
    func retryKeepsKeptColumnTypes() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-types-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Rows 3 (a 404) and 4 (refused: not http) fail; 3 is retried. Their floats and doubles are
        // whole numbers and decimals, as JSON prints them alike whatever their width.
        let input = folder.appendingPathComponent("list.parquet")
        let writer = try ParquetWriter(
            path: input.path,
            schema: ParquetSchema(columns: [
                ParquetColumn(name: "url", type: .string, isNullable: false),
                ParquetColumn(name: "punsafe", type: .float, isNullable: true),
                ParquetColumn(name: "similarity", type: .double, isNullable: true),
                ParquetColumn(name: "WIDTH", type: .int32, isNullable: true),
            ]))
        try writer.writeRowGroup([
            (0..<5).map { .string($0 == 4 ? "ftp://x/4.png" : server.url("/img/\($0).png").absoluteString) },
            [.float(0.5), .float(0.25), .null, .float(0.1), .float(1)],
            [.double(0.5), .double(0.3), .double(2), .double(1), .double(0.1)],
            [.int32(1), .int32(2), .int32(3), .int32(4), .null],
        ])
        try writer.close()
        let columns = BulkColumns(saved: ["punsafe", "similarity", "WIDTH"])
        let directory = folder.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let plan = try BulkPlan.settle(
            try BulkPlan.make(
                input: input.path, columns: columns, maxLineBytes: 1000, shardSize: 10, format: "webdataset"),
            in: directory)
        func engine() -> BulkEngine {
            var config = ImageDownloaderConfig()
            config.destinationPolicy = DestinationPolicy.publicOnly.allowing(["127.0.0.0/8"])
            var settings = BulkSettings()
            settings.encoder = PNGEncoder()
            settings.savedColumns = columns.saved
            return BulkEngine(
                input: input.path, plan: plan, assigned: [0], directory: directory,
                downloader: ImageDownloader(config: config), settings: settings, columns: columns)
        }
        _ = try await engine().run()
        let retry = try await engine().retryFailed()
        #expect(retry == BulkRetrySummary(retriedRows: 1, busy: 0, succeeded: 0, failed: 1))

        // The retry's record of row 3 prints its kept columns as the first run's did.
        func line(_ name: String, key: String) throws -> Substring? {
            try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
                .split(separator: "\n").first { $0.contains("\"key\":\"\(key)\"") }
        }
        let keptFields = { (line: Substring?) in
            line.map { line in
                line.dropFirst().dropLast().split(separator: ",").filter { field in
                    ["punsafe", "similarity", "WIDTH"].contains { field.hasPrefix("\"\($0)\":") }
                }
            }
        }
        let first = try #require(try line("00000.jsonl", key: "000003"))
        let again = try #require(try line("00000-retry1.jsonl", key: "000003"))
        #expect(keptFields(again) == keptFields(first))
        #expect(keptFields(first) == ["\"WIDTH\":4", "\"punsafe\":0.1", "\"similarity\":1"])

        // And its Parquet file has them with the input's types.
        for name in ["00000.parquet", "00000-retry1.parquet"] {
            let reader = try ParquetReader(path: directory.appendingPathComponent(name).path)
            let types = ["punsafe", "similarity", "WIDTH"].map { reader.schema.column(named: $0)?.type }
            #expect(types == [.float, .double, .int64], "\(name)")
        }
        let group = try ParquetReader(path: directory.appendingPathComponent("00000-retry1.parquet").path)
            .readRowGroup(0, columns: ["punsafe", "similarity"])
        #expect(group.row(0) == [.float(0.1), .double(1)])
    }

    @Test("shards not run or already done are read past: every sample keeps its own row and key")
    func skippedShardsAreReadPast() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-skip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("list.txt")
        try (0..<8).map { server.url("/img/\($0).png").absoluteString }.joined(separator: "\n").write(
            to: input, atomically: true, encoding: .utf8)
        let plan = try BulkPlan.make(
            input: input.path, columns: BulkColumns(), maxLineBytes: 1000, shardSize: 3, format: "webdataset")
        func engine(_ assigned: [Int]) -> BulkEngine {
            var config = ImageDownloaderConfig()
            config.destinationPolicy = DestinationPolicy.publicOnly.allowing(["127.0.0.0/8"])
            var settings = BulkSettings()
            settings.encoder = PNGEncoder()
            return BulkEngine(
                input: input.path, plan: plan, assigned: assigned, directory: folder,
                downloader: ImageDownloader(config: config), settings: settings, columns: BulkColumns())
        }
        // Shard 1 alone (shard 0 read past, unassigned), then all three (shard 1 read past, done).
        #expect(
            try await engine([1]).run()
                == BulkRunSummary(
                    written: 1, skipped: 0, busy: 0, succeeded: 2, failed: 1, failures: ["invalidDownloadStatusCode": 1]
                ))
        #expect(try await engine([0, 1, 2]).run() == BulkRunSummary(written: 2, skipped: 1, busy: 0, succeeded: 5))
        var urls: [String: String] = [:]
        for shard in 0..<3 {
            let text = try String(
                contentsOf: folder.appendingPathComponent(plan.keys.stem(shard: shard) + ".jsonl"), encoding: .utf8)
            for line in text.split(separator: "\n") {
                let record = try JSONDecoder().decode(BulkSampleRecord.self, from: Data(line.utf8))
                urls[record.key] = record.url
            }
        }
        let expected = (0..<8).map { (plan.keys.key(shard: $0 / 3, index: $0 % 3), server.url("/img/\($0).png")) }
        #expect(urls == Dictionary(uniqueKeysWithValues: expected.map { ($0.0, $0.1.absoluteString) }))
    }

    @Test("progress events come at their interval while a run lasts, the first at once when asked")
    func progressEvents() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-engine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("list.txt")
        try server.url("/img/1.png").absoluteString.write(to: input, atomically: true, encoding: .utf8)
        let plan = try BulkPlan.make(
            input: input.path, columns: BulkColumns(), maxLineBytes: 1000, shardSize: 10, format: "webdataset")
        let engine = Self.engine(input: input, directory: folder, plan: plan)
        let (_, events) = try await Self.collect(engine) {
            try await engine.run(progress: BulkProgressTicks(interval: 60, startsImmediately: true))
        }
        // The run ends long before a second tick: exactly the immediate one, before the shard.
        guard case .progress(let first) = events.first else {
            Issue.record("the first event is not progress: \(events)")
            return
        }
        #expect(first.shards == 1 && first.expectedImages == 1)
        #expect(Self.finishedStats(events).count == 1)
    }

    /// A publisher that records what it is handed (and whether the files are there then), or fails.
    struct RecordingPublisher: ShardPublishing {
        actor Calls {
            var calls: [(names: [String], stats: String, present: Bool)] = []
            func append(_ call: (names: [String], stats: String, present: Bool)) { calls.append(call) }
        }
        /// The stats names already refused once (``failsOnce``).
        actor Refusals {
            var refused: Set<String> = []
            func first(_ stats: String) -> Bool { refused.insert(stats).inserted }
        }
        let calls = Calls()
        let refusals = Refusals()
        var fails = false
        /// The stats whose first publish is refused.
        var failsOnce: Set<String> = []

        struct Refused: Error {}

        func publish(names: [String], stats: String, in directory: URL) async throws {
            if fails { throw Refused() }
            if failsOnce.contains(stats), await refusals.first(stats) { throw Refused() }
            let present = (names + [stats]).allSatisfy {
                FileManager.default.fileExists(atPath: directory.appendingPathComponent($0).path)
            }
            await calls.append((names, stats, present))
        }
    }

    @Test("a publisher is handed each finished shard's files and stats before the shard counts as done")
    func publisherGetsEveryShard() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-publish-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("list.txt")
        try (0..<7).map { server.url("/img/\($0).png").absoluteString }.joined(separator: "\n").write(
            to: input, atomically: true, encoding: .utf8)
        let plan = try BulkPlan.make(
            input: input.path, columns: BulkColumns(), maxLineBytes: 1000, shardSize: 3, format: "webdataset")
        var config = ImageDownloaderConfig()
        config.destinationPolicy = DestinationPolicy.publicOnly.allowing(["127.0.0.0/8"])
        var settings = BulkSettings()
        settings.encoder = PNGEncoder()
        func engine(_ directory: URL, _ publisher: RecordingPublisher) throws -> BulkEngine {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return BulkEngine(
                input: input.path, plan: plan, assigned: Array(0..<plan.shards), directory: directory,
                downloader: ImageDownloader(config: config), settings: settings, columns: BulkColumns(),
                publisher: publisher)
        }

        let publisher = RecordingPublisher()
        let summary = try await engine(folder.appendingPathComponent("out"), publisher).run()
        #expect(
            summary
                == BulkRunSummary(
                    written: 3, skipped: 0, busy: 0, succeeded: 6, failed: 1, failures: ["invalidDownloadStatusCode": 1]
                ))
        let calls = await publisher.calls.calls.sorted { $0.stats < $1.stats }
        #expect(calls.map(\.stats) == ["00000_stats.json", "00001_stats.json", "00002_stats.json"])
        #expect(calls.allSatisfy { $0.present })
        #expect(
            calls.map { Set($0.names) }
                == (0..<3).map { Set(["0000\($0).tar", "0000\($0).jsonl", "0000\($0).parquet"]) })

        // A publisher that fails fails the run, after the one more pass img2dataset's max_shard_retry
        // gives by default: the shard is not counted done.
        var failing = RecordingPublisher()
        failing.fails = true
        await #expect(throws: RecordingPublisher.Refused.self) {
            _ = try await engine(folder.appendingPathComponent("failed"), failing).run()
        }

        // A shard whose publish fails once is run again in a second pass; the shards the first pass
        // finished are not run again, nor counted twice.
        var flaky = RecordingPublisher()
        flaky.failsOnce = ["00001_stats.json"]
        let retrying = try engine(folder.appendingPathComponent("flaky"), flaky)
        let (again, events) = try await Self.collect(retrying) { try await retrying.run() }
        #expect(again.written == 3 && again.skipped == 0 && again.succeeded + again.failed == 7, "\(again)")
        let retries = events.compactMap { event -> Int? in
            if case .retryingShards(_, let retry, let of) = event, of == 1 { return retry }
            return nil
        }
        #expect(retries == [1])
        let published = await flaky.calls.calls.map(\.stats)
        #expect(published.sorted() == ["00000_stats.json", "00001_stats.json", "00002_stats.json"], "\(published)")
        #expect(published.filter { $0 == "00001_stats.json" }.count == 1)

        // With no retry, the first failure ends the run.
        var once = RecordingPublisher()
        once.failsOnce = ["00001_stats.json"]
        settings.maxShardRetry = 0
        await #expect(throws: RecordingPublisher.Refused.self) {
            _ = try await engine(folder.appendingPathComponent("no-retry"), once).run()
        }
    }
}
