import Foundation

/// Where finished shards go when the output is not the working directory: an object store
/// (``S3ShardOutput``). The engine writes each shard into its directory as usual, then hands the
/// finished files over, the stats last, before it counts the shard done.
public protocol ShardPublishing: Sendable {
    /// Copies the finished files `names` (paths relative to `directory`; a `files` shard's folder is
    /// listed file by file) and then `stats`, last, out of `directory`. May remove the copied files but
    /// `stats` from `directory`. A throw fails the shard: its stats in `directory` are removed, and it has
    /// none at its destination, so another pass (``BulkSettings/maxShardRetry``) or a rerun redoes it.
    func publish(names: [String], stats: String, in directory: URL) async throws
}
