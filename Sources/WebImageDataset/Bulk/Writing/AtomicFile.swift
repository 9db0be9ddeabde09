import Foundation

/// Writes a file under a temporary name in the same directory, then renames it over the final name, so
/// a reader (or a rerun) never sees a partial file under the final name.
public enum AtomicFile {
    /// Writes `data` to `url` through a temporary file renamed over it.
    public static func write(_ data: Data, to url: URL) throws {
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
    public static func createEmpty(at url: URL) throws -> FileHandle {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw BulkFileError("cannot create '\(url.path)': \(String(cString: strerror(errno)))")
        }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// `.NAME.partial-HOST-PID` beside `url`: the host and process that write it, so that processes
    /// sharing an output directory (over NFS, or several on one machine) tell theirs apart.
    public static func temporaryURL(for url: URL) -> URL {
        url.deletingLastPathComponent().appendingPathComponent(
            ".\(url.lastPathComponent).partial-\(host)-\(ProcessInfo.processInfo.processIdentifier)")
    }

    /// This machine's name, as temporary and lock files carry it.
    public static let host: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "host" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let safe = name.filter { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }
        return safe.isEmpty ? "host" : safe
    }()

    /// Removes `.NAME.partial-HOST-PID` files that this host's processes left and that no running
    /// process owns any more. Files of other hosts, and of live processes, stay.
    public static func removeAbandoned(in directory: URL, name: String) {
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
    public static func commit(_ temporary: URL, to url: URL) throws {
        guard rename(temporary.path, url.path) == 0 else {
            throw BulkFileError("cannot rename \(temporary.path) to \(url.path): \(String(cString: strerror(errno)))")
        }
    }
}
