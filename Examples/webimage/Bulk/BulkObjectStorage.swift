import Foundation
import WebImageDataset

/// `webimage bulk`'s `s3://` input and output: the object store's client from the AWS variables, the
/// input downloaded to a local file, and a fresh working directory where the shards are made before
/// they are uploaded.
struct BulkObjectStorage {
    /// The input as a local path: the downloaded copy of an `s3://` input, else as given.
    var input: String
    /// The input's name for the plan: the key's last segment for an `s3://` input (its local copy is
    /// named by a hash), else nil (the file's own name).
    var inputName: String?
    /// Where the shards are written: the output directory, or the working directory for `s3://`.
    var directory: URL
    /// The store the shards go to; nil for a local output.
    var output: S3ShardOutput?
    /// The temporary directory to remove at the end; nil when nothing was downloaded or staged.
    private var temporary: URL?

    /// Resolves `input` and `output`: downloads an `s3://` input and makes the working directory of an
    /// `s3://` output, or creates the local output directory. `configure` adjusts the store's client
    /// (the download's size bound, the stall timeout).
    static func open(
        input: String, output: String, configure: (inout S3Configuration) -> Void = { _ in }
    ) async throws -> BulkObjectStorage {
        let inputLocation = try S3Location.parse(input)
        let outputLocation = try S3Location.parse(output)
        guard inputLocation != nil || outputLocation != nil else {
            let directory = URL(fileURLWithPath: output, isDirectory: true)
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw CLIError("cannot create '\(output)': \(error.localizedDescription)")
            }
            return BulkObjectStorage(input: input, inputName: nil, directory: directory, output: nil, temporary: nil)
        }
        var configuration = try S3Configuration.fromEnvironment()
        configure(&configuration)
        let client = S3Client(configuration: configuration)
        removeAbandonedWorkingDirectories()
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent(
            "\(workingPrefix)\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))")
        var storage = BulkObjectStorage(
            input: input, inputName: nil, directory: temporary, output: nil, temporary: temporary)
        do {
            try FileManager.default.createDirectory(
                at: temporary.appendingPathComponent("shards"), withIntermediateDirectories: true)
            if let inputLocation {
                // Named by a hash with the key's extension (which says the format): a key's last segment
                // may be longer than a file name may be.
                let file = temporary.appendingPathComponent(inputLocation.localFileName)
                try await S3Client.detached { try client.download(inputLocation, to: file) }
                storage.input = file.path
                storage.inputName = inputLocation.key.split(separator: "/").last.map(String.init) ?? ""
            }
            if let outputLocation {
                storage.directory = temporary.appendingPathComponent("shards", isDirectory: true)
                storage.output = S3ShardOutput(client: client, prefix: outputLocation)
            } else {
                storage.directory = URL(fileURLWithPath: output, isDirectory: true)
                try FileManager.default.createDirectory(at: storage.directory, withIntermediateDirectories: true)
            }
        } catch {
            storage.removeTemporaryFiles()
            throw error
        }
        return storage
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

    /// Removes the downloaded input and the working directory.
    func removeTemporaryFiles() {
        if let temporary { try? FileManager.default.removeItem(at: temporary) }
    }
}
