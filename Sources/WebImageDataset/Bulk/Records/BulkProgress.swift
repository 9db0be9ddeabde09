import Foundation
import Locking

/// What a bulk run reports as it goes, in order, through ``BulkEngine/events``.
public enum BulkEvent: Sendable {
    /// The totals so far, every ``BulkProgressTicks/interval`` seconds.
    case progress(BulkProgressSnapshot)
    /// This run finished a shard (or a retry of one, `--retry-failed`); its stats are written.
    case shardFinished(BulkShardStats)
    /// Another live process holds the lock of the files named `stem` (it is writing them): skipped.
    case shardBusy(stem: String, owner: String)
    /// A shard failed (`reason`) and stopped the pass: the shards not done run again, in pass `retry` of
    /// ``BulkSettings/maxShardRetry`` (`of`).
    case retryingShards(reason: String, retry: Int, of: Int)
}

/// When ``BulkEvent/progress(_:)`` events come.
public struct BulkProgressTicks: Sendable {
    /// Seconds between two events.
    public var interval: Double
    /// Whether the first event comes at once (a terminal line) or after one interval (a log line).
    public var startsImmediately: Bool

    /// Events every `interval` seconds, the first at once when `startsImmediately`.
    public init(interval: Double, startsImmediately: Bool) {
        self.interval = interval
        self.startsImmediately = startsImmediately
    }
}

/// The numbers a progress line shows.
///
/// Images/s counts only what this run downloaded (shards that an earlier run finished are in the image
/// and success counts, and in the ETA's remaining work, but not in the rate).
public struct BulkProgressSnapshot: Sendable, Equatable {
    /// Shards finished, by this run or an earlier one.
    public var shardsDone: Int
    /// Shards assigned to this process.
    public var shards: Int
    /// Rows done.
    public var images: Int
    /// Rows of the assigned shards.
    public var expectedImages: Int
    /// Rows this run did per second.
    public var imagesPerSecond: Double
    /// The share of rows done that gave an image; nil before the first.
    public var successRate: Double?
    /// Seconds left at the current rate; nil while unknown.
    public var etaSeconds: Double?
}

/// The counts behind ``BulkProgressSnapshot``, shared by the runner's tasks.
final class BulkProgress: Sendable {
    private struct State {
        var shardsDone = 0
        var images = 0
        var successes = 0
        /// Images this run processed (not counted from skipped shards' stats).
        var processed = 0
    }

    private let shards: Int
    private let expectedImages: Int
    private let started = DispatchTime.now().uptimeNanoseconds
    private let state = Lock(State())

    /// `shards` and `expectedImages`: what this process was assigned (skipped shards count as done).
    init(shards: Int, expectedImages: Int) {
        self.shards = shards
        self.expectedImages = expectedImages
    }

    func recordImage(succeeded: Bool) {
        state.withLock {
            $0.images += 1
            $0.processed += 1
            if succeeded { $0.successes += 1 }
        }
    }

    /// A shard finished; `skipped` is the stats of one found done by an earlier run.
    func recordShard(skipped: BulkShardStats? = nil) {
        state.withLock {
            $0.shardsDone += 1
            $0.images += skipped?.count ?? 0
            $0.successes += skipped?.successes ?? 0
        }
    }

    func snapshot() -> BulkProgressSnapshot {
        let current = state.withLock { $0 }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let rate = Double(current.processed) / max(seconds, 0.001)
        let remaining = max(0, expectedImages - current.images)
        return BulkProgressSnapshot(
            shardsDone: current.shardsDone, shards: shards, images: current.images, expectedImages: expectedImages,
            imagesPerSecond: rate,
            successRate: current.images > 0 ? Double(current.successes) / Double(current.images) : nil,
            etaSeconds: remaining == 0 ? 0 : (rate > 0 ? Double(remaining) / rate : nil))
    }
}
