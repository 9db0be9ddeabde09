import Foundation
import WebImageObjectStore

/// `--output s3://bucket/prefix`: the shards go to an object store, each object written whole (one PUT,
/// or a multipart upload past ``S3Configuration/multipartThreshold``), a shard's stats object last.
///
/// The engine makes each shard in a local working directory, as it does on disk; ``publish(names:stats:in:)``
/// then uploads the shard's objects and removes the local copies. Resume works as on disk: before a run,
/// ``prepare(in:assigned:keys:includingRecords:)`` lists the prefix (ListObjectsV2) and copies the stats of
/// the assigned shards already published into the working directory, so the engine skips them; for
/// `--retry-failed` it copies their jsonl files too.
///
/// The working directory's locks exclude only the processes of one machine: processes on several
/// machines must be handed disjoint shards (`--shard-index`/`--shard-count`, `--shards`), as the deploy
/// examples do. Two writers of one shard still leave whole objects, each a complete version.
public struct S3ShardOutput: ShardPublishing {
    /// The store.
    public let client: S3Client
    /// The prefix the shards' objects go under (`prefix/00000.tar`).
    public let prefix: S3Location

    /// Shards of `prefix`, through `client`.
    public init(client: S3Client, prefix: S3Location) {
        self.client = client
        self.prefix = prefix
    }

    /// Settles the plan as ``BulkPlan/settle(_:in:)`` does against the store: the prefix's `plan.json`,
    /// when there is one, must equal `plan`; else `plan` is written there.
    public func settle(_ plan: BulkPlan, in directory: URL) async throws -> BulkPlan {
        let location = prefix.child("plan.json")
        // A GET rather than a HEAD: a refusal then comes with the store's code and message.
        let existing = try await S3Client.detached { [client] () throws -> Data? in
            do {
                return try client.data(location)
            } catch let error as S3Error where error.kind == .notFound {
                return nil
            }
        }
        if let existing {
            do {
                try existing.write(to: directory.appendingPathComponent("plan.json"))
            } catch {
                throw BulkFileError("cannot write \(directory.path)/plan.json: \(error.localizedDescription)")
            }
        }
        do {
            let settled = try BulkPlan.settle(plan, in: directory)
            if existing == nil {
                let file = directory.appendingPathComponent("plan.json")
                try await S3Client.detached { [client] in try client.upload(file: file, to: location) }
            }
            return settled
        } catch let error as BulkInputError {
            // The message names the local copy; the user knows the store's address.
            throw BulkInputError(
                error.description.replacingOccurrences(
                    of: directory.appendingPathComponent("plan.json").path, with: location.description))
        }
    }

    /// Copies into `directory` the stats objects (`{shard:05}_stats.json`, `{shard:05}-retryN_stats.json`,
    /// the shard numbered as `keys` numbers it) of the `assigned` shards, and with `includingRecords` their
    /// jsonl objects too.
    ///
    /// - Returns: how many objects it copied.
    @discardableResult
    public func prepare(
        in directory: URL, assigned: [Int], keys: BulkKeyFormat, includingRecords: Bool
    ) async throws -> Int {
        let shards = Set(assigned)
        let base = prefix.child("").key
        let objects = try await S3Client.detached { [client, prefix] in
            try client.list(prefix: prefix.child(""), delimiter: "/")
        }
        var wanted: [String] = []
        for object in objects where object.key.hasPrefix(base) {
            let name = String(object.key.dropFirst(base.count))
            guard !name.contains("/"), let shard = keys.shard(ofFileName: name), shards.contains(shard)
            else { continue }
            if name.hasSuffix("_stats.json") || (includingRecords && name.hasSuffix(".jsonl")) {
                wanted.append(name)
            }
        }
        for name in wanted {
            let file = directory.appendingPathComponent(name)
            let location = prefix.child(name)
            try await S3Client.detached { [client] in try client.download(location, to: file) }
        }
        return wanted.count
    }

    /// Uploads at once, of one shard's files (a `files` shard has three per sample).
    static let uploadsAtOnce = 8

    /// Uploads the shard's files, ``uploadsAtOnce`` at a time, then its stats, and removes the uploaded
    /// files but the stats.
    public func publish(names: [String], stats: String, in directory: URL) async throws {
        func upload(_ name: String) async throws {
            let file = directory.appendingPathComponent(name)
            let location = prefix.child(name)
            try await S3Client.detached { [client] in try client.upload(file: file, to: location) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var pending = names[...]
            while let name = pending.popFirst() {
                if names.count - pending.count > Self.uploadsAtOnce { try await group.next() }
                group.addTask { try await upload(name) }
            }
            try await group.waitForAll()
        }
        // Last: the stats object says the shard is done.
        try await upload(stats)
        let manager = FileManager.default
        for name in names { try? manager.removeItem(at: directory.appendingPathComponent(name)) }
        // A `files` shard's folder, now empty.
        for folder in Set(names.compactMap { $0.split(separator: "/").count > 1 ? $0.split(separator: "/")[0] : nil }) {
            try? manager.removeItem(at: directory.appendingPathComponent(String(folder)))
        }
    }
}
