import Foundation
import WebImageObjectStore

/// Where a bulk run reads and writes: the input as a local file (an `s3://` input downloaded under
/// `TMPDIR`), and the directory its shards are made in (the output directory, or for an `s3://` output a
/// working directory under `TMPDIR` whose finished shards ``output`` uploads).
///
/// ```swift
/// let workspace = try await BulkWorkspace.open(input: "s3://data/urls.parquet", output: "s3://data/run-1")
/// defer { workspace.removeTemporaryFiles() }
/// ```
public struct BulkWorkspace: Sendable {
    /// The input as a local path: the downloaded copy of an `s3://` input, else as given.
    public private(set) var input: String
    /// The input's name for the plan: the key's last segment for an `s3://` input (its local copy is
    /// named by a hash), else nil (the file's own name).
    public private(set) var inputName: String?
    /// Where the shards are written: the output directory, or the working directory for `s3://`.
    public private(set) var directory: URL
    /// The store the shards go to; nil for a local output.
    public private(set) var output: S3ShardOutput?
    /// The temporary directory to remove at the end; nil when nothing was downloaded or staged.
    private var temporary: URL?
    /// The local output directory and the parents of it that ``open(input:output:environment:configure:)``
    /// created, the outermost first: what ``removeCreatedDirectories()`` removes when they stayed empty.
    private var created: [URL] = []

    /// Resolves `input` and `output`: downloads an `s3://` input and makes the working directory of an
    /// `s3://` output, or creates the local output directory. The store's client comes from
    /// `environment`'s AWS variables (``S3Configuration/fromEnvironment(_:)``), then `configure` adjusts it
    /// (the download's size bound, the stall timeout).
    ///
    /// - Throws: ``BulkFileError`` when the output directory cannot be made, ``S3Error`` for the store.
    public static func open(
        input: String, output: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        configure: (inout S3Configuration) -> Void = { _ in }
    ) async throws -> BulkWorkspace {
        let inputLocation = try S3Location.parse(input)
        let outputLocation = try S3Location.parse(output)
        guard inputLocation != nil || outputLocation != nil else {
            let directory = URL(fileURLWithPath: output, isDirectory: true)
            let created = missingDirectories(directory)
            try createDirectory(directory, named: output)
            return BulkWorkspace(
                input: input, inputName: nil, directory: directory, output: nil, temporary: nil, created: created)
        }
        var configuration = try S3Configuration.fromEnvironment(environment)
        configure(&configuration)
        let client = S3Client(configuration: configuration)
        removeAbandonedWorkingDirectories()
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent(
            "\(workingPrefix)\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))")
        var workspace = BulkWorkspace(
            input: input, inputName: nil, directory: temporary, output: nil, temporary: temporary)
        do {
            try FileManager.default.createDirectory(
                at: temporary.appendingPathComponent("shards"), withIntermediateDirectories: true)
            if let inputLocation {
                // Named by a hash with the key's extension (which says the format): a key's last segment
                // may be longer than a file name may be.
                let file = temporary.appendingPathComponent(inputLocation.localFileName)
                try await S3Client.detached { try client.download(inputLocation, to: file) }
                workspace.input = file.path
                workspace.inputName = inputLocation.key.split(separator: "/").last.map(String.init) ?? ""
            }
            if let outputLocation {
                workspace.directory = temporary.appendingPathComponent("shards", isDirectory: true)
                workspace.output = S3ShardOutput(client: client, prefix: outputLocation)
            } else {
                workspace.directory = URL(fileURLWithPath: output, isDirectory: true)
                workspace.created = missingDirectories(workspace.directory)
                try FileManager.default.createDirectory(at: workspace.directory, withIntermediateDirectories: true)
            }
        } catch {
            workspace.removeTemporaryFiles()
            throw error
        }
        return workspace
    }

    /// Writes `plan` (named by ``inputName`` when there is one) where the output keeps it, or reads the
    /// one there, which must describe the same input and shard size (``BulkPlan/settle(_:in:)``;
    /// ``S3ShardOutput/settle(_:in:)`` for a store).
    public func settle(_ plan: BulkPlan) async throws -> BulkPlan {
        var plan = plan
        if let inputName { plan.input = inputName }
        if let output { return try await output.settle(plan, in: directory) }
        return try BulkPlan.settle(plan, in: directory)
    }

    /// Removes the downloaded input and the working directory.
    public func removeTemporaryFiles() {
        if let temporary { try? FileManager.default.removeItem(at: temporary) }
    }

    /// Removes the local output directory, and the parents of it, that opening the workspace created, as
    /// long as they are empty: a run whose plan failed (a missing input, a missing column) leaves no empty
    /// folders behind. A directory that existed before, or that holds anything, stays.
    public func removeCreatedDirectories() {
        // rmdir(2) removes only an empty directory: a file another process wrote meanwhile keeps it.
        for directory in created.reversed() where rmdir(directory.path) != 0 { return }
    }

    /// `directory` and those of its parents that do not exist, the outermost first.
    private static func missingDirectories(_ directory: URL) -> [URL] {
        var missing: [URL] = []
        var current = directory.standardizedFileURL
        while !FileManager.default.fileExists(atPath: current.path) {
            missing.insert(current, at: 0)
            let parent = current.deletingLastPathComponent()
            guard parent.path != current.path else { break }
            current = parent
        }
        return missing
    }

    private static func createDirectory(_ directory: URL, named name: String) throws {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw BulkFileError("cannot create '\(name)': \(error.localizedDescription)")
        }
    }

    /// `webimage-bulk-HOST-`: the working directories of this host's processes, each followed by its
    /// process id.
    private static let workingPrefix = "webimage-bulk-\(AtomicFile.host)-"

    /// Removes the working directories a killed process of this host left in `TMPDIR` (its process no
    /// longer runs). Other hosts' (a shared `TMPDIR`) stay.
    private static func removeAbandonedWorkingDirectories() {
        let temporary = FileManager.default.temporaryDirectory
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for entry in entries where entry.hasPrefix(workingPrefix) {
            guard let pid = pid_t(entry.dropFirst(workingPrefix.count).prefix { $0 != "-" }), pid > 0,
                pid != ProcessInfo.processInfo.processIdentifier, kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            try? FileManager.default.removeItem(at: temporary.appendingPathComponent(entry))
        }
    }
}

extension BulkJob {
    /// Opens this job's input and output (``BulkWorkspace/open(input:output:environment:configure:)``) with
    /// ``maxInputBytes`` and ``objectStoreStallTimeout`` applied to the store's client.
    public func open(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws -> BulkWorkspace {
        try await BulkWorkspace.open(input: input, output: output, environment: environment) { [self] in
            if let maxInputBytes { $0.maximumDownloadBytes = maxInputBytes }
            if let objectStoreStallTimeout { $0.stallTimeout = objectStoreStallTimeout }
        }
    }

    /// The plan of `workspace`'s input, settled where the output keeps it: made by one pass over the input
    /// (a damaged input throws ``BulkInputError`` here, before anything is downloaded), then written or
    /// checked against the one an earlier run wrote.
    public func plan(in workspace: BulkWorkspace) async throws -> BulkPlan {
        let made = try BulkPlan.make(
            input: workspace.input, columns: columns, maxLineBytes: maxLineBytes, shardSize: shardSize,
            format: format.rawValue, shardDigits: shardDigits)
        return try await workspace.settle(made)
    }

    /// The engine of the shards `assigned` of `plan` in `workspace`, with its own downloader configured by
    /// ``settings()`` (public addresses only unless the job allows others; no cookie store). For an
    /// `s3://` output the stats of the finished shards (and with `retrying`, their records) are fetched
    /// first, so the engine skips them (or retries their failed rows).
    public func makeEngine(
        plan: BulkPlan, assigned: [Int], in workspace: BulkWorkspace, retrying: Bool = false
    ) async throws -> BulkEngine {
        let settings = try settings()
        if settings.deduplication != nil, let output = workspace.output {
            try await S3DeduplicationIndex(output: output).checkConditionalWrites()
        }
        _ = try await workspace.output?.prepare(
            in: workspace.directory, assigned: assigned, keys: plan.keys, includingRecords: retrying)
        return BulkEngine(
            input: workspace.input, plan: plan, assigned: assigned, directory: workspace.directory,
            settings: settings, columns: columns, maxLineBytes: maxLineBytes, publisher: workspace.output)
    }
}
