import Foundation

/// How a bulk run drops rows whose file another row already gave (`--dedup`).
public enum BulkDeduplication: String, Sendable, CaseIterable {
    /// The same bytes: the first row to download a file that passes the checks (digest, truncation, size
    /// filters) keeps it; a later row with the same file (its SHA-256) fails with error code `duplicate`,
    /// its `error_message` naming the kept row's key. A row that fails holds no claim.
    case exact
    /// The same picture: a row whose image's perceptual hash (``PerceptualHash``, the record's `phash`)
    /// is within ``BulkSettings/deduplicationThreshold`` bits of one another row kept fails with error
    /// code `duplicate`, as for ``exact``.
    case phash
}

/// What a claim in a deduplication index found.
enum BulkDeduplicationClaim: Equatable {
    /// The file is this row's (now, or since an earlier run of its shard).
    case kept
    /// Another row kept it: its key.
    case duplicate(of: String)
    /// The index could not be read or written.
    case failed(String)
}

/// Where a run claims files for ``BulkDeduplication/exact``: a folder of the output directory
/// (``BulkDeduplicationIndex``) or objects of an `s3://` output (``S3DeduplicationIndex``).
protocol BulkDeduplicationIndexing: Sendable {
    /// Claims `digest` (lowercase hex SHA-256) for the row `key`: kept when no other row holds it, or
    /// when `key` itself does (its shard redone).
    func claim(digest: String, key: String) async -> BulkDeduplicationClaim
}

/// The output's record of which row kept each file (``BulkDeduplication/exact``): under `.dedup/` in the
/// output directory, one file per SHA-256 (`.dedup/ab/cdef…`) holding the key that kept it. Every process
/// writing the output shares it (shards of one run, array-job workers on one file system): a claim makes
/// its file by `link(2)`, which fails when the file exists, so exactly one row wins each digest, and the
/// file appears whole. A row whose shard is redone finds its own key there and keeps its file.
final class BulkDeduplicationIndex: BulkDeduplicationIndexing {
    let folder: URL

    /// The index of the output directory `directory`.
    init(directory: URL) {
        folder = directory.appendingPathComponent(".dedup", isDirectory: true)
    }

    /// Claims `digest` (lowercase hex SHA-256) for the row `key`.
    func claim(digest: String, key: String) -> BulkDeduplicationClaim {
        let bucket = folder.appendingPathComponent(String(digest.prefix(2)), isDirectory: true)
        let entry = bucket.appendingPathComponent(String(digest.dropFirst(2)))
        do {
            try FileManager.default.createDirectory(at: bucket, withIntermediateDirectories: true)
        } catch {
            return .failed("cannot make \(bucket.path): \(error.localizedDescription)")
        }
        let temporary = bucket.appendingPathComponent(".\(entry.lastPathComponent).\(UUID().uuidString)")
        do {
            try Data(key.utf8).write(to: temporary)
        } catch {
            return .failed("cannot write \(temporary.path): \(error.localizedDescription)")
        }
        defer { unlink(temporary.path) }
        if link(temporary.path, entry.path) == 0 { return .kept }
        let failure = errno
        guard failure == EEXIST else {
            return .failed("cannot link \(entry.path): \(String(cString: strerror(failure)))")
        }
        guard let holder = try? String(contentsOf: entry, encoding: .utf8) else {
            return .failed("cannot read \(entry.path)")
        }
        return holder == key ? .kept : .duplicate(of: holder)
    }
}
