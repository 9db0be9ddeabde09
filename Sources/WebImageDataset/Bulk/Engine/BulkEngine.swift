import Foundation
import WebImage
import WebImageObjectStore

/// The end of a ``BulkEngine/run(progress:)``.
public struct BulkRunSummary: Sendable, Equatable {
    /// Shards this run wrote.
    public var written: Int
    /// Assigned shards an earlier run had finished.
    public var skipped: Int
    /// Assigned shards skipped because another live process writes them: a rerun may finish them.
    public var busy: Int
    /// Rows of the shards this run wrote that gave an image.
    public var succeeded = 0
    /// Rows of the shards this run wrote that did not.
    public var failed = 0
    /// Those rows per ``BulkFailure/code``.
    public var failures: [String: Int] = [:]
}

/// The end of a ``BulkEngine/retryFailed()``.
public struct BulkRetrySummary: Sendable, Equatable {
    /// Failed rows run again.
    public var retriedRows: Int
    /// Shards skipped because another live process writes their next retry.
    public var busy: Int
    /// Retried rows that gave an image.
    public var succeeded = 0
    /// Retried rows that failed again.
    public var failed = 0
}

/// Runs a plan's assigned shards into a directory: reads the input a shard at a time, downloads, filters,
/// resizes and encodes each row, and writes each shard's files (``SampleWriter``, jsonl, Parquet) and its
/// stats, last. A shard with stats is done, and a later run skips it.
///
/// One run per engine: ``run(progress:)`` or ``retryFailed()``; ``events`` ends when it returns.
///
/// The engine makes its own downloader from ``BulkSettings/downloaderConfig()``: public addresses only
/// unless ``BulkSettings/download`` allows others, no cookie store; it is stopped when the run ends.
/// ``BulkJob/makeEngine(plan:assigned:in:retrying:)`` makes one from `webimage bulk`'s choices.
///
/// ```swift
/// let columns = BulkColumns(url: "url", caption: "caption")
/// let plan = try BulkPlan.settle(
///     try BulkPlan.make(input: "urls.parquet", columns: columns, maxLineBytes: 1 << 20, shardSize: 10_000,
///                       format: "webdataset"),
///     in: directory)
/// var settings = BulkSettings()
/// settings.download.userAgent = "my-dataset/1.0 (+https://example.com/crawler)"
/// let engine = BulkEngine(
///     input: "urls.parquet", plan: plan, assigned: Array(0..<plan.shards), directory: directory,
///     settings: settings, columns: columns)
/// let summary = try await engine.run()
/// ```
public final class BulkEngine: Sendable {
    /// What the run reports as it goes; finished when the run returns or throws.
    public let events: AsyncStream<BulkEvent>
    private let continuation: AsyncStream<BulkEvent>.Continuation
    private let input: String
    private let plan: BulkPlan
    private let assigned: Set<Int>
    private let directory: URL
    private let runner: BulkShardRunner
    private let columns: BulkColumns
    private let maxLineBytes: Int
    private let progress: BulkProgress
    /// ``BulkSettings/maxShardRetry``.
    private let maxShardRetry: Int
    /// The downloader the engine made (and stops when its run ends); nil when the caller gave one.
    private let ownDownloader: ImageDownloader?

    /// An engine for the shards `assigned` of `plan` (made from `input` and `columns`), written into
    /// `directory` with `settings`, downloading through a downloader of its own configured by
    /// ``BulkSettings/downloaderConfig()`` (``BulkSettings/download``'s destination policy, public addresses
    /// only by default, and no cookie store), stopped when the run ends. With `publisher`, each finished
    /// shard's files then go there (an object store), and `directory` is only where they are made: it must
    /// hold the stats (and, for ``retryFailed()``, the jsonl files) of the shards already published.
    public convenience init(
        input: String, plan: BulkPlan, assigned: [Int], directory: URL, settings: BulkSettings,
        columns: BulkColumns, maxLineBytes: Int = TextRowReader.defaultMaxLineBytes,
        publisher: (any ShardPublishing)? = nil
    ) {
        var config = settings.downloaderConfig()
        config.hostAddresses = settings.download.makeHostResolver()
        let downloader = ImageDownloader(config: config)
        self.init(
            input: input, plan: plan, assigned: assigned, directory: directory, downloader: downloader,
            ownsDownloader: true, settings: settings, columns: columns, maxLineBytes: maxLineBytes,
            publisher: publisher)
    }

    /// An engine as ``init(input:plan:assigned:directory:settings:columns:maxLineBytes:publisher:)`` makes it,
    /// downloading through `downloader`, which the caller configures and stops. `settings.download` is not
    /// used: the downloader's own configuration decides the destinations, the connections and the cookies
    /// (``BulkSettings/downloaderConfig()`` gives the bulk defaults to start from).
    public convenience init(
        input: String, plan: BulkPlan, assigned: [Int], directory: URL, downloader: ImageDownloader,
        settings: BulkSettings, columns: BulkColumns, maxLineBytes: Int = TextRowReader.defaultMaxLineBytes,
        publisher: (any ShardPublishing)? = nil
    ) {
        self.init(
            input: input, plan: plan, assigned: assigned, directory: directory, downloader: downloader,
            ownsDownloader: false, settings: settings, columns: columns, maxLineBytes: maxLineBytes,
            publisher: publisher)
    }

    private init(
        input: String, plan: BulkPlan, assigned: [Int], directory: URL, downloader: ImageDownloader,
        ownsDownloader: Bool, settings: BulkSettings, columns: BulkColumns, maxLineBytes: Int,
        publisher: (any ShardPublishing)?
    ) {
        ownDownloader = ownsDownloader ? downloader : nil
        (events, continuation) = AsyncStream.makeStream(of: BulkEvent.self)
        self.input = input
        self.plan = plan
        self.assigned = Set(assigned)
        self.directory = directory
        self.columns = columns
        self.maxLineBytes = maxLineBytes
        maxShardRetry = settings.maxShardRetry
        let rows = self.assigned.reduce(0) { $0 + max(0, min(plan.shardSize, plan.rows - $1 * plan.shardSize)) }
        progress = BulkProgress(shards: self.assigned.count, expectedImages: rows)
        var runner = BulkShardRunner(downloader: downloader, settings: settings, directory: directory)
        runner.progress = progress
        runner.publisher = publisher
        runner.hostResolver = downloader.config.hostAddresses as? BulkHostResolver
        if BulkInputFormat(path: input) == .webdataset { runner.rowSlots = BulkShardRunner.embeddedRowSlots }
        switch settings.deduplication {
        case .exact?:
            // An s3:// output keeps the index in the store, where every worker of the prefix finds it.
            runner.deduplicationIndex =
                (publisher as? S3ShardOutput).map { S3DeduplicationIndex(output: $0) }
                ?? BulkDeduplicationIndex(directory: directory)
        case .phash?:
            let threshold = settings.deduplicationThreshold
            runner.perceptualIndex =
                (publisher as? S3ShardOutput).map { S3PerceptualIndex(output: $0, threshold: threshold) }
                ?? BulkPerceptualIndex(directory: directory, threshold: threshold)
        case nil: break
        }
        self.runner = runner
    }

    /// The totals now.
    public func progressSnapshot() -> BulkProgressSnapshot { progress.snapshot() }

    /// Runs the assigned shards not done yet, in one pass over the input: a shard's rows are read as they
    /// start, once the shard may open; other shards' rows are read past. With `progress`, ``events`` carries
    /// ``BulkEvent/progress(_:)`` at its pace.
    ///
    /// A shard that fails (its files, its publisher: any error but the input's) stops the pass, whose other
    /// open shards are dropped unfinished; the shards still not done then run in another pass, up to
    /// ``BulkSettings/maxShardRetry`` more (img2dataset's `max_shard_retry`), each announced by
    /// ``BulkEvent/retryingShards(reason:retry:of:)``. Shards a pass finished stay done.
    ///
    /// - Throws: ``BulkInputError`` for damaged input, ``BulkFileError`` for the output's files.
    public func run(progress ticks: BulkProgressTicks? = nil) async throws -> BulkRunSummary {
        try await stoppingDownloader {
            let ticker = ticks.map { startTicking($0) }
            defer {
                ticker?.cancel()
                continuation.finish()
            }
            var record = RunRecord()
            var retry = 0
            while true {
                do {
                    try await runShards(&record)
                    return record.summary
                } catch  where retry < maxShardRetry && Self.isShardFailure(error) {
                    retry += 1
                    record.summary.busy = 0
                    continuation.yield(.retryingShards(reason: "\(error)", retry: retry, of: maxShardRetry))
                }
            }
        }
    }

    /// Whether another pass may get past `error`: not the input's, a cancellation or a store's refusal.
    private static func isShardFailure(_ error: any Error) -> Bool {
        if error is BulkInputError || error is CancellationError { return false }
        if let error = error as? S3Error { return !error.isPermanent }
        return true
    }

    /// What the passes of one ``run(progress:)`` have done.
    private struct RunRecord {
        var summary = BulkRunSummary(written: 0, skipped: 0, busy: 0)
        /// The shards a pass finished and counted.
        var written: Set<Int> = []
        /// The shards a pass started.
        var started: Set<Int> = []

        mutating func count(_ stats: BulkShardStats) {
            written.insert(stats.shard)
            summary.written += 1
            summary.succeeded += stats.successes
            summary.failed += stats.count - stats.successes
            for (code, rows) in stats.failures { summary.failures[code, default: 0] += rows }
        }
    }

    /// One pass: the assigned shards without stats run.
    private func runShards(_ record: inout RunRecord) async throws {
        let reader = try BulkInput.open(path: input, columns: columns, maxLineBytes: maxLineBytes)
        var shard = 0
        func nextJob() throws -> ShardJob? {
            while shard < plan.shards {
                let current = shard
                shard += 1
                // The rows of a shard not run here are read past; those of the one returned, by its job.
                func skipRows() throws { _ = try reader.skip(plan.shardSize) }
                guard assigned.contains(current) else {
                    try skipRows()
                    continue
                }
                if isDone(current, &record) {
                    try skipRows()
                    continue
                }
                guard let lock = try lock(plan.keys.stem(shard: current)) else {
                    record.summary.busy += 1
                    try skipRows()
                    continue
                }
                // Checked again under the lock: another process may have finished the shard since.
                if isDone(current, &record) {
                    lock.finish()
                    try skipRows()
                    continue
                }
                record.started.insert(current)
                var read = 0
                let shardSize = plan.shardSize
                let typed = plan.typed
                return BulkShardRunner.job(shard: current, keys: plan.keys, lock: lock) {
                    guard read < shardSize, let row = try reader.next() else { return nil }
                    read += 1
                    return typed(row)
                }
            }
            return nil
        }
        try await runner.run(jobs: nextJob) { stats in
            record.count(stats)
            progress.recordShard()
            continuation.yield(.shardFinished(stats))
        }
    }

    /// Whether `shard` has its stats: counted as skipped (an earlier run's), or as written when a pass of
    /// this run started it and finished it as another shard's failure ended the pass.
    private func isDone(_ shard: Int, _ record: inout RunRecord) -> Bool {
        let statsURL = directory.appendingPathComponent(BulkShardRunner.names(stem: plan.keys.stem(shard: shard)).stats)
        guard FileManager.default.fileExists(atPath: statsURL.path) else { return false }
        guard !record.written.contains(shard) else { return true }
        let done = (try? Data(contentsOf: statsURL)).flatMap {
            try? JSONDecoder().decode(BulkShardStats.self, from: $0)
        }
        if record.started.contains(shard), let done {
            record.count(done)
            progress.recordShard()
            continuation.yield(.shardFinished(done))
        } else {
            record.summary.skipped += 1
            progress.recordShard(skipped: done)
        }
        return true
    }

    /// `--retry-failed`: for each assigned finished shard, the rows that failed in it and in its earlier
    /// retries (their latest outcome), unless ``BulkFailure/isPermanent``, run again into
    /// `{shard:05}-retryN.*`, keys unchanged.
    public func retryFailed() async throws -> BulkRetrySummary {
        try await stoppingDownloader { try await retryShards() }
    }

    /// A webdataset input's rows carry their images: its records keep only the URL, and its rows failed on
    /// the bytes the shards hold, which fail the same way again. `--retry-failed` has nothing to do there.
    private func refuseRetryOfCarriedImages() throws {
        guard BulkInputFormat(path: input) == .webdataset else { return }
        throw BulkInputError(
            "--retry-failed downloads failed rows again, and a webdataset input's rows are its shards' own images: "
                + "run it again into a new output instead")
    }

    private func retryShards() async throws -> BulkRetrySummary {
        defer { continuation.finish() }
        try refuseRetryOfCarriedImages()
        var summary = BulkRetrySummary(retriedRows: 0, busy: 0)
        var remaining = assigned.sorted()[...]
        // The jsonl keeps neither the boxes to blur nor the expected digest: those rows come from the
        // input again, read once, front to back, as the shards are taken in order.
        let source =
            columns.boxes != nil || columns.verifyHash != nil
            ? try BulkInput.open(path: input, columns: columns, maxLineBytes: maxLineBytes) : nil
        // A jsonl's numbers carry no width: a Parquet input's kept columns get their types back from its
        // schema, a CSV or JSON input's from the plan, so a retry's Parquet file has the shard's column types.
        let savedTypes =
            BulkInputFormat(fileName: input) == .parquet
            ? try ParquetRowReader(path: input, columns: columns).savedTypes
            : plan.columnTypes?.mapValues(\.parquetType) ?? [:]
        var inputPosition = 0
        func inputRows(shard: Int) throws -> [BulkRow] {
            guard let source else { return [] }
            inputPosition += try source.skip(max(0, shard * plan.shardSize - inputPosition))
            var rows: [BulkRow] = []
            while rows.count < plan.shardSize, let row = try source.next() { rows.append(row) }
            inputPosition += rows.count
            return rows
        }
        func nextJob() throws -> ShardJob? {
            while let shard = remaining.popFirst() {
                let stem = plan.keys.stem(shard: shard)
                guard
                    FileManager.default.fileExists(atPath: directory.appendingPathComponent(stem + "_stats.json").path)
                else { continue }
                let (latest, attempt) = latestRecords(shard: shard)
                let original = try inputRows(shard: shard)
                let rows = try latest.values.filter { record in
                    record.status != .success && !(record.failure?.isPermanent ?? false)
                }.sorted { $0.key < $1.key }.map { record -> (key: String, row: BulkRow) in
                    let saved = columns.saved.map { name in
                        let value = record.saved.first { $0.name == name }?.value ?? .null
                        return BulkColumnValue(
                            name: name, value: savedTypes[name].map { ParquetRowReader.value(value, as: $0) } ?? value)
                    }
                    var row = BulkRow(url: record.url, caption: record.caption, saved: saved)
                    if source != nil {
                        guard let index = plan.keys.index(ofKey: record.key, shard: shard), index < original.count
                        else {
                            throw BulkInputError("the input has no row for key \(record.key): it changed since the run")
                        }
                        row.boxes = original[index].boxes
                        row.expectedHash = original[index].expectedHash
                    }
                    return (record.key, row)
                }
                guard !rows.isEmpty else { continue }
                let retryStem = "\(stem)-retry\(attempt + 1)"
                guard let lock = try lock(retryStem) else {
                    summary.busy += 1
                    continue
                }
                // Checked again under the lock: another process may have finished this retry since.
                let retryStats = directory.appendingPathComponent(BulkShardRunner.names(stem: retryStem).stats)
                if FileManager.default.fileExists(atPath: retryStats.path) {
                    lock.finish()
                    continue
                }
                summary.retriedRows += rows.count
                return ShardJob(stem: retryStem, shard: shard, rows: rows, lock: lock)
            }
            return nil
        }
        try await runner.run(jobs: nextJob) { stats in
            summary.succeeded += stats.successes
            summary.failed += stats.count - stats.successes
            continuation.yield(.shardFinished(stats))
        }
        return summary
    }

    /// Runs `body`, then stops the engine's own downloader (its transport thread closes its connections)
    /// whether `body` returned or threw: a command that exits right after the run would otherwise end
    /// while connections are still being closed.
    private func stoppingDownloader<T>(_ body: () async throws -> T) async throws -> T {
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        await ownDownloader?.invalidate()
        return try result.get()
    }

    /// The latest record per key of a finished shard: its jsonl, then each finished retry's in order; and
    /// the number of finished retries.
    private func latestRecords(shard: Int) -> (records: [String: BulkSampleRecord], retries: Int) {
        let stem = plan.keys.stem(shard: shard)
        var latest: [String: BulkSampleRecord] = [:]
        var attempt = 0
        var jsonlNames = [stem + ".jsonl"]
        while FileManager.default.fileExists(
            atPath: directory.appendingPathComponent("\(stem)-retry\(attempt + 1)_stats.json").path)
        {
            attempt += 1
            jsonlNames.append("\(stem)-retry\(attempt).jsonl")
        }
        let decoder = JSONDecoder()
        for name in jsonlNames {
            let text = (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") {
                // The key names files, so it is taken from the shard's own numbering: a line whose key is
                // not one of this shard's is ignored.
                guard var record = try? decoder.decode(BulkSampleRecord.self, from: Data(line.utf8)),
                    let index = plan.keys.index(ofKey: record.key, shard: shard)
                else { continue }
                record.key = plan.keys.key(shard: shard, index: index)
                latest[record.key] = record
            }
        }
        return (latest, attempt)
    }

    /// Locks the files named `stem` for this process; nil, after an event saying so, when another process
    /// holds them (it is writing that shard).
    private func lock(_ stem: String) throws -> ShardLock? {
        switch try ShardLock.acquire(stem: stem, in: directory) {
        case .acquired(let lock):
            return lock
        case .held(let owner):
            continuation.yield(.shardBusy(stem: stem, owner: owner))
            return nil
        }
    }

    private func startTicking(_ ticks: BulkProgressTicks) -> Task<Void, Never> {
        let nanoseconds = UInt64(max(ticks.interval, 0.01) * 1e9)
        // The first event is yielded here, not in the task, so it comes before any shard's.
        if ticks.startsImmediately { continuation.yield(.progress(progress.snapshot())) }
        return Task { [progress, continuation] in
            while !Task.isCancelled {
                do { try await Task.sleep(nanoseconds: nanoseconds) } catch { return }
                continuation.yield(.progress(progress.snapshot()))
            }
        }
    }
}
