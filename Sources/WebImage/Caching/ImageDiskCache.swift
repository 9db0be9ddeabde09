import Foundation
import Logging

/// The default `ProcessedImageCaching`: encoded images on disk, in a SQLite index (WAL mode) plus
/// one file per entry under `directory`, as `HTTPCache`'s disk tier keeps responses.
///
/// - **Byte limit**: stored bytes stay within `byteLimit`; storing evicts the entries read (or
///   stored) least recently first. An entry larger than the whole limit is not stored.
/// - **Maximum age**: an entry older than `maximumAge` (counted from when it was stored, whatever
///   HTTP headers the source had) is a miss and is removed.
/// - **Crash and process safety**: as `HTTPCache`'s disk tier — a file is written and renamed into
///   place before the index row naming it is committed, and deleted only after the commit that
///   stopped naming it, so a process killed at any point never leaves an entry that reads torn; a
///   file changed behind the cache's back fails its length and checksum check and is dropped; a
///   damaged index is moved aside to `index.sqlite.corrupt` and rebuilt empty. Several processes may
///   share the directory.
///
/// Problems are reported to `logger`, never thrown: a cache whose directory is unusable answers
/// every lookup with a miss.
///
/// ```swift
/// let cache = ImageDiskCache(byteLimit: 200 * 1024 * 1024, maximumAge: 24 * 60 * 60)
/// let key = ProcessedImageKey(url: url, transformerKey: transformer.key, encoder: JPEGEncoder(quality: 80))
/// if let jpeg = cache.data(for: key) {
///     print("served \(jpeg.count) bytes without decoding")
/// }
/// ```
public final class ImageDiskCache: ProcessedImageCaching {
    /// `processed` inside `HTTPCache.defaultDirectory` (`$XDG_CACHE_HOME/webimage/processed` or
    /// `~/.cache/webimage/processed`); the default directory.
    public static var defaultDirectory: URL {
        HTTPCache.defaultDirectory.appendingPathComponent("processed", isDirectory: true)
    }

    /// Where the index and the files live.
    public let directory: URL
    /// The most bytes of encoded images kept. 500 MB by default.
    public let byteLimit: Int
    /// How long after being stored an entry may be served; nil keeps entries until they are evicted.
    /// 7 days by default.
    public let maximumAge: TimeInterval?

    private let files: HTTPCacheBodyFiles
    private let index: CacheIndex
    private let logger: Logger

    /// Creates a cache; nothing is opened until its first use, and opening never fails the initializer.
    ///
    /// - Parameters:
    ///   - directory: created if needed. `ImageDiskCache.defaultDirectory` by default.
    ///   - byteLimit: the most bytes kept. 500 MB by default.
    ///   - maximumAge: seconds an entry may be served after it was stored; nil for no limit. 7 days by
    ///     default.
    ///   - synchronousWrites: `fsync` each file before indexing it (survives power loss, slower).
    ///     `false` by default; process crashes are safe either way.
    ///   - logger: receives the cache's warnings (a damaged index or file, failed I/O) at `.warning`. A
    ///     logger labelled `WebImage.ImageDiskCache` by default.
    public init(
        directory: URL = ImageDiskCache.defaultDirectory, byteLimit: Int = 500 * 1024 * 1024,
        maximumAge: TimeInterval? = 7 * 24 * 60 * 60, synchronousWrites: Bool = false,
        logger: Logger = Logger(label: "WebImage.ImageDiskCache")
    ) {
        self.directory = directory
        self.byteLimit = max(0, byteLimit)
        self.maximumAge = maximumAge.map { max(0, $0) }
        self.files = HTTPCacheBodyFiles(directory: directory, synchronousWrites: synchronousWrites)
        self.logger = logger
        self.index = CacheIndex(
            directory: directory, files: files, schema: Self.schema, schemaVersion: Self.schemaVersion,
            tables: ["images"], logger: logger)
        let referenced = index.withIndex("open") { database throws(SQLiteError) in
            try Set(Self.allFileNames(database))
        }
        if let referenced {
            _ = files.removeUnreferenced(
                keeping: referenced, olderThan: HTTPCacheDiskStore.orphanGracePeriod, now: Date())
        }
    }

    /// Bytes stored now (across all processes sharing the directory).
    public var currentByteCount: Int {
        index.withIndex("size") { database throws(SQLiteError) in try Self.totalSize(database) } ?? 0
    }

    // MARK: - ProcessedImageCaching

    /// The bytes stored for `key` if they are younger than `maximumAge`; records the read for eviction.
    public func data(for key: ProcessedImageKey) -> Data? {
        data(for: key, now: Date())
    }

    /// Stores `data` for `key`, evicting least recently used entries beyond `byteLimit`.
    public func store(_ data: Data, for key: ProcessedImageKey) {
        store(data, for: key, now: Date())
    }

    /// Removes the entry for `key`.
    public func remove(_ key: ProcessedImageKey) {
        remove(key: key.stringValue)
    }

    /// Removes every entry (for every process sharing the directory).
    public func removeAll() {
        let removed = index.withIndex("removeAll") { database throws(SQLiteError) in
            try database.transaction(immediate: true) { () throws(SQLiteError) -> [String] in
                let names = try Self.allFileNames(database)
                try database.execute("DELETE FROM images")
                return names
            }
        }
        files.remove(removed ?? [])
    }

    // MARK: - Operations with a clock

    func data(for key: ProcessedImageKey, now: Date) -> Data? {
        let key = key.stringValue
        let found = index.withIndex("load") { database throws(SQLiteError) in
            try database.withStatement("SELECT file, size, checksum, stored_at FROM images WHERE key = ?") {
                statement throws(SQLiteError) -> Row? in
                try statement.bind(.text(key))
                guard try statement.step() else { return nil }
                return Row(
                    fileName: statement.string(at: 0), size: Int(statement.int64(at: 1)),
                    checksum: UInt64(bitPattern: statement.int64(at: 2)),
                    storedAt: Date(timeIntervalSince1970: statement.double(at: 3)))
            }
        }
        guard let found, let row = found else { return nil }
        if let maximumAge, now.timeIntervalSince(row.storedAt) > maximumAge {
            drop(key: key, fileName: row.fileName)
            return nil
        }
        guard let data = files.read(named: row.fileName) else {
            // Another process may have replaced the entry and deleted this file between our two reads;
            // dropping the row only if it still names this file leaves such a newer entry alone.
            drop(key: key, fileName: row.fileName)
            return nil
        }
        guard data.count == row.size, BodyChecksum.hash(data) == row.checksum else {
            logger.warning(
                "dropping \(key): \(row.fileName) has \(data.count) bytes (index says \(row.size)) or a wrong checksum"
            )
            drop(key: key, fileName: row.fileName)
            return nil
        }
        _ = index.withIndex("touch") { database throws(SQLiteError) in
            try database.withStatement("UPDATE images SET last_access = ? WHERE key = ? AND file = ?") {
                statement throws(SQLiteError) in
                try statement.bind(.real(now.timeIntervalSince1970), .text(key), .text(row.fileName))
                try statement.run()
            }
        }
        return data
    }

    func store(_ data: Data, for key: ProcessedImageKey, now: Date) {
        let key = key.stringValue
        guard data.count <= byteLimit else {
            remove(key: key)
            return
        }
        // Without a usable index the file would only become an orphan.
        guard index.withIndex("store", { _ throws(SQLiteError) in true }) != nil else { return }
        let fileName = HTTPCacheBodyFiles.newFileName(forKey: key)
        do {
            try files.write(data, named: fileName)
        } catch {
            logger.warning("could not write a file for \(key): \(error)")
            return
        }
        let obsolete = index.withIndex("store") { database throws(SQLiteError) in
            try database.transaction(immediate: true) { () throws(SQLiteError) -> [String] in
                var obsolete = try Self.fileName(forKey: key, in: database).map { [$0] } ?? []
                try database.withStatement(
                    """
                    INSERT OR REPLACE INTO images (key, file, size, checksum, stored_at, last_access)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """
                ) { statement throws(SQLiteError) in
                    try statement.bind(
                        .text(key), .text(fileName), .integer(Int64(data.count)),
                        .integer(Int64(bitPattern: BodyChecksum.hash(data))), .real(now.timeIntervalSince1970),
                        .real(now.timeIntervalSince1970))
                    try statement.run()
                }
                obsolete += try self.evict(keeping: key, now: now, in: database)
                return obsolete
            }
        }
        // Deleted only now that the commit no longer names them; on failure the new file is unnamed.
        files.remove(obsolete ?? [fileName])
    }

    /// Every stored key (`ProcessedImageKey.stringValue`), least recently used first.
    var keysByLastAccess: [String] {
        index.withIndex("keys") { database throws(SQLiteError) in
            try database.withStatement("SELECT key FROM images ORDER BY last_access, rowid") {
                statement throws(SQLiteError) in
                var keys: [String] = []
                while try statement.step() { keys.append(statement.string(at: 0)) }
                return keys
            }
        } ?? []
    }

    /// The file directory, for tests that look at the files behind the cache's back.
    var filesDirectory: URL { files.bodiesDirectory }

    // MARK: - Index

    private struct Row: Sendable {
        var fileName: String
        var size: Int
        var checksum: UInt64
        var storedAt: Date
    }

    /// Bumped when the schema changes; an index with another version is dropped and recreated.
    static let schemaVersion: Int64 = 1

    static let schema = """
        CREATE TABLE IF NOT EXISTS images (
            key TEXT PRIMARY KEY NOT NULL,
            file TEXT NOT NULL,
            size INTEGER NOT NULL,
            checksum INTEGER NOT NULL,
            stored_at REAL NOT NULL,
            last_access REAL NOT NULL
        );
        CREATE INDEX IF NOT EXISTS images_by_last_access ON images (last_access);
        CREATE INDEX IF NOT EXISTS images_by_stored_at ON images (stored_at);
        PRAGMA user_version = \(schemaVersion);
        """

    /// Deletes the rows older than `maximumAge`, then the least recently used rows until the rest fit
    /// in `byteLimit`, never `keeping`; returns their file names. Runs inside the writer's transaction.
    private func evict(keeping key: String, now: Date, in database: SQLiteDatabase) throws(SQLiteError) -> [String] {
        var victims: [(key: String, fileName: String)] = []
        if let maximumAge {
            try database.withStatement("SELECT key, file FROM images WHERE stored_at < ? AND key != ?") {
                statement throws(SQLiteError) in
                try statement.bind(.real(now.timeIntervalSince1970 - maximumAge), .text(key))
                while try statement.step() { victims.append((statement.string(at: 0), statement.string(at: 1))) }
            }
            try deleteRows(victims.map(\.key), in: database)
        }
        var total = try Self.totalSize(database)
        if total > byteLimit {
            var evicted: [(key: String, fileName: String)] = []
            try database.withStatement(
                "SELECT key, file, size FROM images WHERE key != ? ORDER BY last_access, rowid"
            ) { statement throws(SQLiteError) in
                try statement.bind(.text(key))
                while total > byteLimit, try statement.step() {
                    evicted.append((statement.string(at: 0), statement.string(at: 1)))
                    total -= Int(statement.int64(at: 2))
                }
            }
            try deleteRows(evicted.map(\.key), in: database)
            victims += evicted
        }
        return victims.map(\.fileName)
    }

    private func deleteRows(_ keys: [String], in database: SQLiteDatabase) throws(SQLiteError) {
        for key in keys {
            try database.withStatement("DELETE FROM images WHERE key = ?") { statement throws(SQLiteError) in
                try statement.bind(.text(key))
                try statement.run()
            }
        }
    }

    private func remove(key: String) {
        let removed = index.withIndex("remove") { database throws(SQLiteError) in
            try database.transaction(immediate: true) { () throws(SQLiteError) -> String? in
                let fileName = try Self.fileName(forKey: key, in: database)
                try deleteRows([key], in: database)
                return fileName
            }
        }
        if let removed, let removed { files.remove([removed]) }
    }

    /// Deletes the row for `key` only if it still names `fileName`, then the file.
    private func drop(key: String, fileName: String) {
        let deleted = index.withIndex("drop") { database throws(SQLiteError) in
            try database.withStatement("DELETE FROM images WHERE key = ? AND file = ?") {
                statement throws(SQLiteError) in
                try statement.bind(.text(key), .text(fileName))
                try statement.run()
            }
            return database.changes > 0
        }
        if deleted == true { files.remove([fileName]) }
    }

    private static func fileName(forKey key: String, in database: SQLiteDatabase) throws(SQLiteError) -> String? {
        try database.withStatement("SELECT file FROM images WHERE key = ?") { statement throws(SQLiteError) in
            try statement.bind(.text(key))
            return try statement.step() ? statement.string(at: 0) : nil
        }
    }

    private static func allFileNames(_ database: SQLiteDatabase) throws(SQLiteError) -> [String] {
        try database.withStatement("SELECT file FROM images") { statement throws(SQLiteError) in
            var names: [String] = []
            while try statement.step() { names.append(statement.string(at: 0)) }
            return names
        }
    }

    private static func totalSize(_ database: SQLiteDatabase) throws(SQLiteError) -> Int {
        try database.withStatement("SELECT total(size) FROM images") { statement throws(SQLiteError) in
            try statement.step() ? Int(statement.double(at: 0)) : 0
        }
    }
}
