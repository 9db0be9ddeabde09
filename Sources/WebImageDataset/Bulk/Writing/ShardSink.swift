import Foundation

/// The names of the files of one shard (or one retry of it).
struct ShardFileNames {
    var tar: String
    var tfrecord: String
    var jsonl: String
    var parquet: String
    var stats: String
    var folder: String

    /// The names of those files (a folder's files one by one, as `folder/name`) that are in `directory`,
    /// but the stats.
    func written(in directory: URL) -> [String] {
        let manager = FileManager.default
        var names = [tar, tfrecord, jsonl, parquet].filter {
            manager.fileExists(atPath: directory.appendingPathComponent($0).path)
        }
        let inFolder = (try? manager.contentsOfDirectory(atPath: directory.appendingPathComponent(folder).path)) ?? []
        names += inFolder.sorted().map { folder + "/" + $0 }
        return names
    }
}

/// The rows to run into the files named by `stem` (`00003`, or `00003-retry1` for a retry), each
/// sample under its key.
struct ShardJob {
    var stem: String
    var shard: Int
    /// This process's lock on the files of `stem`, removed once their stats are written.
    var lock: ShardLock?
    /// The next row and its key; nil after the last. Called by ``BulkShardRunner`` one row at a time as
    /// the rows start (reading ahead by one), and never after it returned nil: a job reading its rows
    /// from the input keeps none of them, and the input is read no further than the rows under way.
    var nextRow: () throws -> (key: String, row: BulkRow)?

    /// The job of `rows`, taken in their order.
    init(stem: String, shard: Int, rows: [(key: String, row: BulkRow)], lock: ShardLock?) {
        var remaining = rows[...]
        self.init(stem: stem, shard: shard, lock: lock) { remaining.popFirst() }
    }

    /// The job of the rows `nextRow` reads.
    init(
        stem: String, shard: Int, lock: ShardLock?, nextRow: @escaping () throws -> (key: String, row: BulkRow)?
    ) {
        self.stem = stem
        self.shard = shard
        self.lock = lock
        self.nextRow = nextRow
    }
}

/// A shard whose rows are under way: its sink, its totals so far, the next row to start, and how many
/// rows have started and finished. Used only by the task that runs ``BulkShardRunner/run(jobs:finished:)``.
final class OpenShard {
    let id: Int
    let job: ShardJob
    let names: ShardFileNames
    let sink: ShardSink
    let opened = DispatchTime.now().uptimeNanoseconds
    let openedAt = Date().timeIntervalSince1970
    var stats: BulkShardStats
    /// The row to start next, read ahead; nil once every row has started (the shard is done when they
    /// have all finished too).
    var upcoming: (key: String, row: BulkRow)?
    var started = 0
    var finished = 0

    /// Opens the shard's files, after removing whatever an interrupted run left under its names: a
    /// shard is always redone from scratch. The job's lock is held, so no live process of this host
    /// writes these files; the temporary files of dead ones are removed, other hosts' stay.
    init(id: Int, job: ShardJob, directory: URL, settings: BulkSettings) throws {
        self.id = id
        self.job = job
        upcoming = try job.nextRow()
        names = BulkShardRunner.names(stem: job.stem)
        let spill = names.parquet + ".pages"
        for name in [names.tar, names.tfrecord, names.jsonl, names.parquet, spill, names.stats, names.folder] {
            AtomicFile.removeAbandoned(in: directory, name: name)
        }
        for name in [names.tar, names.tfrecord, names.jsonl, names.parquet, names.folder] {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
        sink = try ShardSink(stem: job.stem, directory: directory, settings: settings)
        stats = BulkShardStats(shard: job.shard)
    }

    func record(_ sample: BulkSample) throws {
        finished += 1
        stats.bytesDownloaded += sample.downloadedBytes
        if sample.succeeded {
            stats.tally(nil)
            stats.bytes += sample.bytes?.count ?? 0
        } else {
            stats.tally(sample.failure ?? .download(code: "unknown"))
        }
        try sink.add(sample, key: sample.key)
    }
}

/// Where one shard's samples go: its ``SampleWriter`` (the tar, the folder, the Parquet file with the
/// images), the jsonl and the records-only Parquet file (as the format has them, see
/// ``SampleOutputFormat/writesJSONL``), under temporary names until `finish()` renames them.
final class ShardSink {
    private let settings: BulkSettings
    private let writer: any SampleWriter
    private let jsonlURL: URL
    private let jsonl: FileHandle?
    private let parquet: ShardParquetWriter?

    init(stem: String, directory: URL, settings: BulkSettings) throws {
        self.settings = settings
        let names = BulkShardRunner.names(stem: stem)
        let format = settings.outputFormat
        writer = try format.makeWriter(stem: stem, in: directory, settings: settings)
        jsonlURL = directory.appendingPathComponent(names.jsonl)
        jsonl = format.writesJSONL ? try AtomicFile.createEmpty(at: AtomicFile.temporaryURL(for: jsonlURL)) : nil
        parquet =
            settings.writesParquet && format.writesRecordParquet
            ? try ShardParquetWriter(
                url: directory.appendingPathComponent(names.parquet), savedColumns: settings.savedColumns,
                hashAlgorithm: settings.hashAlgorithm, recordsEXIF: settings.extractsEXIF,
                recordsPHash: settings.deduplication == .phash) : nil
    }

    func add(_ sample: BulkSample, key: String) throws {
        let record = sample.record(
            key: key, hashAlgorithm: settings.hashAlgorithm, recordsEXIF: settings.extractsEXIF,
            recordsPHash: settings.deduplication == .phash)
        let json = try record.jsonData()
        try jsonl?.write(contentsOf: json + Data("\n".utf8))
        try parquet?.append(record)
        let succeeded = sample.succeeded
        try writer.write(
            SampleRow(
                key: key, record: record, json: json, image: succeeded ? sample.bytes : nil,
                fileExtension: sample.fileExtension,
                caption: settings.writesCaptions && succeeded ? Data((sample.row.caption ?? "").utf8) : nil))
    }

    func finish() throws {
        try jsonl?.synchronize()
        try jsonl?.close()
        try writer.finish()
        try parquet?.finish()
        if jsonl != nil { try AtomicFile.commit(AtomicFile.temporaryURL(for: jsonlURL), to: jsonlURL) }
    }

    func abandon() {
        writer.abandon()
        parquet?.abandon()
        try? jsonl?.close()
        try? FileManager.default.removeItem(at: AtomicFile.temporaryURL(for: jsonlURL))
    }
}
