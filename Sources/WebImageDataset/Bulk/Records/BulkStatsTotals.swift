import Foundation

/// The totals of a bulk output directory's finished shards: every `{shard:05}_stats.json` summed, a
/// `--retry-failed` run's (`{shard:05}-retryN_stats.json`) counted apart, as `webimage bulk-stats` prints
/// them. Stats in img2dataset's fields and in the older ones (`failures`, `started`, `finished`) both
/// count (``BulkShardStats/init(from:)``).
///
/// ```swift
/// let totals = try BulkStatsTotals.sum(directory: "dataset")
/// print("\(totals.shards) shards, \(totals.total.successes) of \(totals.total.count) images")
/// ```
public struct BulkStatsTotals: Sendable, Equatable {
    /// The finished shards (not counting retries).
    public var shards = 0
    /// The plan's shard count; nil without a readable `plan.json`.
    public var plannedShards: Int?
    /// The shards' stats summed (its `shard` is -1): rows, successes, the two failure counts, rows per
    /// outcome, bytes, and the durations summed over shards that may have run side by side.
    public var total = BulkShardStats(shard: -1)
    /// Rows retried by `--retry-failed` runs (each already counted as a failure of its shard).
    public var retried = 0
    /// Retried rows that gave an image.
    public var recovered = 0
    /// Seconds from the first shard's start to the last one's end, retries included; nil when no stats
    /// record their times.
    public var wallSeconds: Double?

    /// Empty totals.
    public init() {}

    /// The totals of the stats files in `directory` (a path as the user gave it, which the errors quote).
    /// A stats file that cannot be read or decoded is passed over, as a shard not finished.
    ///
    /// - Throws: ``BulkInputError`` when `directory` is not a readable directory, or when a file's counts
    ///   are negative or overflow an `Int` (a damaged or forged file): never zeros, never a crash.
    public static func sum(directory: String) throws -> BulkStatsTotals {
        let url = URL(fileURLWithPath: directory, isDirectory: true)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue
        else { throw BulkInputError("'\(directory)' is not a directory") }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: url.path)
        } catch {
            throw BulkInputError("cannot read '\(directory)': \(error.localizedDescription)")
        }
        var totals = BulkStatsTotals()
        // Wall time: from the first shard's start to the last one's end, retries included; shards run
        // side by side, so the sum of their durations overstates it.
        var firstStart: Double?
        var lastEnd: Double?
        for name in names.sorted() where name.hasSuffix("_stats.json") {
            guard let data = try? Data(contentsOf: url.appendingPathComponent(name)) else { continue }
            let stats: BulkShardStats
            do {
                stats = try JSONDecoder().decode(BulkShardStats.self, from: data)
            } catch let error as BulkInputError {
                throw BulkInputError("\(name): \(error.description)")
            } catch {
                continue
            }
            if let started = stats.startTime, let finished = stats.endTime, started.isFinite, finished.isFinite,
                started <= finished
            {
                firstStart = min(firstStart ?? started, started)
                lastEnd = max(lastEnd ?? finished, finished)
            }
            func add(_ value: Int, to sum: inout Int) throws {
                let (result, overflow) = sum.addingReportingOverflow(value)
                guard !overflow, value >= 0 else { throw BulkInputError("\(name): counts out of range (\(value))") }
                sum = result
            }
            if name.contains("-retry") {
                // A retry's rows were already counted as failures of their shard.
                try add(stats.count, to: &totals.retried)
                try add(stats.successes, to: &totals.recovered)
                continue
            }
            totals.shards += 1
            try add(stats.count, to: &totals.total.count)
            try add(stats.successes, to: &totals.total.successes)
            try add(stats.bytes, to: &totals.total.bytes)
            try add(stats.bytesDownloaded, to: &totals.total.bytesDownloaded)
            totals.total.duration += stats.duration
            try add(stats.failedToDownload, to: &totals.total.failedToDownload)
            try add(stats.failedToResize, to: &totals.total.failedToResize)
            for (status, count) in stats.statusDict {
                try add(count, to: &totals.total.statusDict[status, default: 0])
            }
        }
        totals.plannedShards =
            (try? Data(contentsOf: url.appendingPathComponent("plan.json")))
            .flatMap { try? JSONDecoder().decode(BulkPlan.self, from: $0) }?.shards
        totals.wallSeconds = firstStart.flatMap { start in lastEnd.map { $0 - start } }
        return totals
    }
}
