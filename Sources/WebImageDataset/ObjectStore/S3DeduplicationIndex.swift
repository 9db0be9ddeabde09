import Foundation
import WebImageObjectStore

/// `--dedup exact` with an `s3://` output: the index is in the output's prefix, one object per SHA-256
/// (`prefix/.dedup/ab/cdef…`) holding the key that kept the file, so every worker writing the prefix, on
/// any machine, deduplicates against the others. A claim is a conditional PUT (``S3Client/putIfAbsent(_:to:)``):
/// exactly one row wins each digest; the others read the winner's key. A row whose shard is redone finds
/// its own key and keeps its file. Each kept file costs one PUT, each duplicate a PUT and a GET.
struct S3DeduplicationIndex: BulkDeduplicationIndexing {
    let client: S3Client
    /// `prefix/.dedup/`.
    let folder: S3Location

    /// The index under `output`'s prefix.
    init(output: S3ShardOutput) {
        client = output.client
        folder = output.prefix.child(".dedup")
    }

    func claim(digest: String, key: String) async -> BulkDeduplicationClaim {
        let location = folder.child("\(digest.prefix(2))/\(digest.dropFirst(2))")
        do {
            return try await S3Client.detached { [client] () throws -> BulkDeduplicationClaim in
                if try client.putIfAbsent(Data(key.utf8), to: location) { return .kept }
                let holder = String(decoding: try client.data(location), as: UTF8.self)
                return holder == key ? .kept : .duplicate(of: holder)
            }
        } catch {
            return .failed("the deduplication index at \(location): \(error)")
        }
    }

    /// Checks that the store honours `If-None-Match: *` (a second conditional PUT of one key must be
    /// refused), with a probe object it then deletes: a store that ignored it would let every row keep
    /// its file, and the run would look deduplicated while it is not.
    func checkConditionalWrites() async throws {
        let probe = folder.child("probe-\(UUID().uuidString)")
        let (first, second) = try await S3Client.detached { [client] () throws -> (Bool, Bool) in
            let first = try client.putIfAbsent(Data("probe".utf8), to: probe)
            let second = try client.putIfAbsent(Data("probe".utf8), to: probe)
            try? client.delete(probe)
            return (first, second)
        }
        guard first, !second else {
            throw BulkJobError(
                option: "--dedup",
                "--dedup with an s3:// output needs a store that refuses a conditional PUT (If-None-Match: *) of an "
                    + "existing object; the store of s3://\(folder.bucket) (\(client.configuration.endpoint?.absoluteString ?? "AWS")) "
                    + "overwrote one")
        }
    }
}
