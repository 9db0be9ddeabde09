import Foundation

/// How the input is cut into shards: shard `i` holds input rows `i × shardSize ..< (i + 1) × shardSize`,
/// in input order. Written to `DIR/plan.json` on the first run; a later run checks it still describes
/// the same input (size and row count) and shard size, so the shards it skips and the ones it redoes
/// line up.
struct BulkPlan: Codable, Equatable {
    var input: String
    var inputBytes: Int
    var rows: Int
    var shardSize: Int
    var shards: Int
    var format: String

    /// The plan for `input`: one streaming pass counts its rows.
    /// A damaged input (see ``BulkRowReader``) throws here, before anything is downloaded.
    static func make(
        input: String, columns: BulkColumns, maxLineBytes: Int, shardSize: Int, format: String
    ) throws -> BulkPlan {
        let reader = try BulkRowReader(path: input, columns: columns, maxLineBytes: maxLineBytes)
        var rows = 0
        while try reader.next() != nil { rows += 1 }
        let size = (try? FileManager.default.attributesOfItem(atPath: input)[.size] as? Int) ?? 0
        return BulkPlan(
            input: URL(fileURLWithPath: input).lastPathComponent, inputBytes: size, rows: rows, shardSize: shardSize,
            shards: max(1, (rows + shardSize - 1) / shardSize), format: format)
    }

    /// Reads `DIR/plan.json`, or writes `plan` there; a plan already there must equal it.
    static func settle(_ plan: BulkPlan, in directory: URL) throws -> BulkPlan {
        let url = directory.appendingPathComponent("plan.json")
        // Every process of a job settles the plan, so no one of them owns its temporary files: each
        // removes only those its own host's dead processes left (a kill between write and rename).
        defer { AtomicFile.removeAbandoned(in: directory, name: "plan.json") }
        if let data = try? Data(contentsOf: url) {
            guard let existing = try? JSONDecoder().decode(BulkPlan.self, from: data) else {
                throw BulkInputError("\(url.path) is not a plan this version reads; use a new output directory")
            }
            guard existing == plan else {
                throw BulkInputError(
                    "\(url.path) describes another input or shard size (\(existing.rows) rows of \(existing.input), "
                        + "shards of \(existing.shardSize), \(existing.format)); use a new output directory")
            }
            return existing
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write(try encoder.encode(plan) + Data("\n".utf8), to: url)
        return plan
    }

    /// The shards this process runs: `--shards` when given, else those with `shard % count == index`.
    func assigned(index: Int, count: Int, explicit: [Int]?) -> [Int] {
        if let explicit { return explicit.filter { $0 >= 0 && $0 < shards }.sorted() }
        return (0..<shards).filter { $0 % count == index }
    }
}

/// Writes a file under a temporary name in the same directory, then renames it over the final name, so
/// a reader (or a rerun) never sees a partial file under the final name.
enum AtomicFile {
    static func write(_ data: Data, to url: URL) throws {
        let temporary = temporaryURL(for: url)
        do {
            try data.write(to: temporary)
            try commit(temporary, to: url)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }

    /// A new empty file at `url` (truncating one that is there), open for writing.
    ///
    /// Not `FileManager.createFile`: swift-corelibs-foundation writes it atomically, through a
    /// `.dat.nosync…` file of its own beside it, which a SIGKILL at that moment leaves behind in the
    /// output folder under a name no cleanup knows.
    static func createEmpty(at url: URL) throws -> FileHandle {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CLIError("cannot create '\(url.path)': \(String(cString: strerror(errno)))")
        }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// `.NAME.partial-HOST-PID` beside `url`: the host and process that write it, so that processes
    /// sharing an output directory (over NFS, or several on one machine) tell theirs apart.
    static func temporaryURL(for url: URL) -> URL {
        url.deletingLastPathComponent().appendingPathComponent(
            ".\(url.lastPathComponent).partial-\(host)-\(ProcessInfo.processInfo.processIdentifier)")
    }

    /// This machine's name, as temporary and lock files carry it.
    static let host: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "host" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let safe = name.filter { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }
        return safe.isEmpty ? "host" : safe
    }()

    /// Removes `.NAME.partial-HOST-PID` files that this host's processes left and that no running
    /// process owns any more. Files of other hosts, and of live processes, stay.
    static func removeAbandoned(in directory: URL, name: String) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        let prefix = ".\(name).partial-\(host)-"
        for entry in entries where entry.hasPrefix(prefix) {
            guard let pid = pid_t(entry.dropFirst(prefix.count)), pid > 0 else { continue }
            if pid == ProcessInfo.processInfo.processIdentifier { continue }
            if kill(pid, 0) == 0 || errno != ESRCH { continue }
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(entry))
        }
    }

    /// Renames `temporary` over `url` (atomic on one file system).
    static func commit(_ temporary: URL, to url: URL) throws {
        guard rename(temporary.path, url.path) == 0 else {
            throw CLIError("cannot rename \(temporary.path) to \(url.path): \(String(cString: strerror(errno)))")
        }
    }
}
