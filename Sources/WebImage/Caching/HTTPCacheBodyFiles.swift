import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failed file-system call: the call, the path and `errno`.
struct CacheFileError: Error, CustomStringConvertible {
    let operation: String
    let path: String
    let errorNumber: Int32

    var description: String { "\(operation) \(path): \(String(cString: strerror(errorNumber))) (errno \(errorNumber))" }
}

/// The body files of the disk tier: `bodies/<name>` for committed bodies, `tmp/` for bodies being
/// written. The POSIX calls of the disk tier live here.
///
/// A body is written to a fresh temporary file (optionally `fsync`ed), then renamed to its final
/// name. rename(2) is atomic, so a body file is either absent or complete; names are never reused
/// (each write gets a random suffix), so a file is never replaced while another process reads it.
struct HTTPCacheBodyFiles: Sendable {
    let bodiesDirectory: URL
    let temporaryDirectory: URL
    /// Whether to `fsync` each body and its directory before the index refers to it. Off by default:
    /// a killed process cannot tear a renamed file either way; fsync adds protection against power
    /// loss, and the checksum check on read catches what it would have prevented.
    let synchronousWrites: Bool

    init(directory: URL, synchronousWrites: Bool) {
        bodiesDirectory = directory.appendingPathComponent("bodies", isDirectory: true)
        temporaryDirectory = directory.appendingPathComponent("tmp", isDirectory: true)
        self.synchronousWrites = synchronousWrites
    }

    /// Creates both directories if needed.
    func createDirectories() throws {
        for directory in [bodiesDirectory, temporaryDirectory] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
    }

    /// A new unique body file name for `key`: a hash of the key plus a random suffix.
    static func newFileName(forKey key: String) -> String {
        let keyHash = BodyChecksum.hash(Data(key.utf8))
        return hex(keyHash) + "-" + hex(UInt64.random(in: .min ... .max)) + ".body"
    }

    /// Writes `body` under `name` atomically (temporary file, then rename).
    func write(_ body: Data, named name: String) throws(CacheFileError) {
        let temporaryPath = temporaryDirectory.appendingPathComponent(name + ".tmp").path
        let finalPath = bodiesDirectory.appendingPathComponent(name).path
        let descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw CacheFileError(operation: "open", path: temporaryPath, errorNumber: errno) }
        do throws(CacheFileError) {
            try writeAll(body, to: descriptor, path: temporaryPath)
            if synchronousWrites, fsync(descriptor) != 0 {
                throw CacheFileError(operation: "fsync", path: temporaryPath, errorNumber: errno)
            }
        } catch {
            close(descriptor)
            unlink(temporaryPath)
            throw error
        }
        // The descriptor is released even when close reports an error, so it is closed exactly once.
        if close(descriptor) != 0 {
            let error = CacheFileError(operation: "close", path: temporaryPath, errorNumber: errno)
            unlink(temporaryPath)
            throw error
        }
        guard rename(temporaryPath, finalPath) == 0 else {
            let error = CacheFileError(operation: "rename", path: finalPath, errorNumber: errno)
            unlink(temporaryPath)
            throw error
        }
        if synchronousWrites { synchronizeDirectory(bodiesDirectory.path) }
    }

    /// The body stored under `name`, or `nil` when the file does not exist or cannot be read.
    func read(named name: String) -> Data? {
        try? Data(contentsOf: bodiesDirectory.appendingPathComponent(name))
    }

    /// Deletes the body files named, ignoring ones already gone.
    func remove(_ names: some Sequence<String>) {
        for name in names {
            unlink(bodiesDirectory.appendingPathComponent(name).path)
        }
    }

    /// Deletes body files not in `referenced` and temporary files, when older than `gracePeriod`.
    /// The grace period protects files another process has renamed but not yet committed.
    func removeUnreferenced(keeping referenced: Set<String>, olderThan gracePeriod: TimeInterval, now: Date) -> Int {
        var removed = 0
        for (directory, isTemporary) in [(bodiesDirectory, false), (temporaryDirectory, true)] {
            let contents =
                (try? FileManager.default.contentsOfDirectory(
                    at: directory, includingPropertiesForKeys: [.contentModificationDateKey])) ?? []
            for file in contents where isTemporary || !referenced.contains(file.lastPathComponent) {
                let modified = (try? file.resourceValues(forKeys: [.contentModificationDateKey]))?
                    .contentModificationDate
                guard let modified, now.timeIntervalSince(modified) > gracePeriod else { continue }
                if unlink(file.path) == 0 { removed += 1 }
            }
        }
        return removed
    }

    private func writeAll(_ body: Data, to descriptor: Int32, path: String) throws(CacheFileError) {
        let failure: Int32? = body.withUnsafeBytes { buffer in
            guard var pointer = buffer.baseAddress else { return nil }
            var remaining = buffer.count
            while remaining > 0 {
                let written = systemWrite(descriptor, pointer, remaining)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                remaining -= written
                pointer += written
            }
            return nil
        }
        if let failure { throw CacheFileError(operation: "write", path: path, errorNumber: failure) }
    }

    /// Makes a rename durable; best effort, as not every file system supports fsync on directories.
    private func synchronizeDirectory(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// write(2); a free function because `write` inside `HTTPCacheBodyFiles` names its own method.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.write(descriptor, bytes, count)
    #else
        Darwin.write(descriptor, bytes, count)
    #endif
}

/// The identity of a file (device and inode), to tell whether a path still names the file we opened.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    /// The identity of the file at `path`, or `nil` when there is none.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// Moves `path` aside to `path + suffix` (replacing an older one), with SQLite's `-wal` and `-shm`
/// companions, so a damaged database is kept for inspection and a new one can be created.
func moveDatabaseAside(_ path: String, suffix: String) throws(CacheFileError) {
    for companion in ["-wal", "-shm"] {
        // A WAL left beside a new database would be replayed into it; move it with the database.
        if rename(path + companion, path + suffix + companion) != 0, errno != ENOENT {
            unlink(path + companion)
        }
    }
    guard rename(path, path + suffix) == 0 || errno == ENOENT else {
        throw CacheFileError(operation: "rename", path: path, errorNumber: errno)
    }
}
