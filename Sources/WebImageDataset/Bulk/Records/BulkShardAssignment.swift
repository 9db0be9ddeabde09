/// Which shards of a plan one process runs: those with `shard % count == index`
/// (``BulkPlan/assigned(_:)``), `index` given or taken from an array job's environment.
///
/// ```swift
/// // In a Kubernetes Indexed Job of 8 completions:
/// let assignment = try BulkShardAssignment.resolve(
///     index: nil, count: 8, environment: ProcessInfo.processInfo.environment)
/// ```
public struct BulkShardAssignment: Sendable, Equatable {
    /// This process's index, `0..<count`.
    public var index: Int
    /// How many processes share the shards.
    public var count: Int
    /// Exactly these shards, whatever the index; nil to use the index.
    public var explicit: [Int]?

    /// One process running every shard.
    public static let all = BulkShardAssignment(index: 0, count: 1)

    /// Process `index` of `count`, or exactly the shards `explicit`.
    public init(index: Int, count: Int, explicit: [Int]? = nil) {
        self.index = index
        self.count = count
        self.explicit = explicit
    }

    /// The assignment `index` and `count` give, the index otherwise taken from `environment`: a
    /// Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`, a Slurm array's `SLURM_ARRAY_TASK_ID` (less
    /// `SLURM_ARRAY_TASK_MIN`, as arrays may start at 1; the count from `SLURM_ARRAY_TASK_COUNT` unless
    /// given), or an AWS Batch array job's `AWS_BATCH_JOB_ARRAY_INDEX`, in that order. Neither index nor
    /// count gives ``all``.
    ///
    /// - Throws: ``BulkJobError`` for a count without an index, an index without a count, or an index
    ///   outside `0..<count`.
    public static func resolve(
        index: Int?, count: Int?, explicit: [Int]? = nil, environment: [String: String]
    ) throws(BulkJobError) -> BulkShardAssignment {
        var index = index
        var count = count
        if index == nil {
            if let value = environment["JOB_COMPLETION_INDEX"] {
                index = Int(value)
            } else if let value = environment["SLURM_ARRAY_TASK_ID"] {
                index = Int(value)
                if count == nil, let total = environment["SLURM_ARRAY_TASK_COUNT"] { count = Int(total) }
                if let minimum = environment["SLURM_ARRAY_TASK_MIN"].flatMap(Int.init), let shifted = index {
                    index = shifted - minimum
                }
            } else if let value = environment["AWS_BATCH_JOB_ARRAY_INDEX"] {
                index = Int(value)
            }
        }
        guard let index else {
            if count != nil {
                throw BulkJobError(
                    option: "--shard-count", "--shard-count needs --shard-index (or an engine's index).")
            }
            return BulkShardAssignment(index: 0, count: 1, explicit: explicit)
        }
        guard let count, count >= 1 else {
            throw BulkJobError(
                option: "--shard-index",
                "a shard index (\(index)) needs --shard-count N (or SLURM_ARRAY_TASK_COUNT).")
        }
        guard (0..<count).contains(index) else {
            throw BulkJobError(option: "--shard-index", "shard index \(index) is outside 0..<\(count).")
        }
        return BulkShardAssignment(index: index, count: count, explicit: explicit)
    }
}

extension BulkPlan {
    /// The shards `assignment` gives this process: its explicit list (those in the plan), else those with
    /// `shard % count == index`.
    public func assigned(_ assignment: BulkShardAssignment) -> [Int] {
        assigned(index: assignment.index, count: assignment.count, explicit: assignment.explicit)
    }
}

extension BulkJob {
    /// This job's assignment: ``shardIndex``, ``shardCount`` and ``shards``, the index otherwise from an
    /// array job's `environment` (``BulkShardAssignment/resolve(index:count:explicit:environment:)``).
    public func assignment(environment: [String: String]) throws(BulkJobError) -> BulkShardAssignment {
        try BulkShardAssignment.resolve(
            index: shardIndex, count: shardCount, explicit: shards, environment: environment)
    }
}
