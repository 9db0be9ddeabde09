import Foundation
import Logging

/// The disk tier of `HTTPCache`: a SQLite index (WAL mode) of stored responses plus one body file
/// per response.
///
/// Crash safety comes from ordering: a body is written and renamed into place before the index row
/// that names it is committed, and a replaced or evicted body is deleted only after the commit that
/// stopped naming it. A killed process therefore leaves at worst an unreferenced body file (swept
/// at the next open, after a grace period), never a row naming a missing or partial body; and a
/// body that changed anyway (disk damage, someone truncating it) fails the length and checksum
/// check on read and is dropped.
///
/// Several processes may share the directory: SQLite serializes the writers (`BEGIN IMMEDIATE` with
/// a busy timeout), readers never block in WAL mode, and body names are never reused.
final class HTTPCacheDiskStore: Sendable {
    /// How long an unreferenced body file may exist before a sweep deletes it.
    static let orphanGracePeriod: TimeInterval = 10 * 60

    let directory: URL
    let capacity: Int
    private let files: HTTPCacheBodyFiles
    private let logger: Logger
    private let index: CacheIndex

    /// One row of the index.
    struct Record: Sendable {
        var fileName: String
        var bodySize: Int
        var checksum: UInt64
        var head: CachedHTTPResponse  // with an empty body
    }

    /// Opens or creates the store under `directory`. Problems are logged, never thrown: a store that
    /// cannot open its index answers every lookup with a miss and retries opening on later calls.
    init(directory: URL, capacity: Int, synchronousWrites: Bool, logger: Logger) {
        self.directory = directory
        self.capacity = max(0, capacity)
        self.files = HTTPCacheBodyFiles(directory: directory, synchronousWrites: synchronousWrites)
        self.logger = logger
        self.index = CacheIndex(
            directory: directory, files: files, schema: Self.schema, schemaVersion: Self.schemaVersion,
            tables: ["entries"], logger: logger)
        let referenced = withIndex("open") { database throws(SQLiteError) in
            try Set(Self.allFileNames(database))
        }
        if let referenced {
            _ = files.removeUnreferenced(keeping: referenced, olderThan: Self.orphanGracePeriod, now: Date())
        }
    }

    // MARK: - Operations

    /// The stored response for `key` with its verified body, recording `accessDate` for LRU order.
    func load(key: String, accessDate: Date) -> CachedHTTPResponse? {
        let found = withIndex("load") { database throws(SQLiteError) in try Self.record(forKey: key, in: database) }
        guard let found, let record = found else { return nil }
        guard let body = files.read(named: record.fileName) else {
            // Another process may have replaced the entry and deleted this body between our two reads;
            // dropping the row only if it still names this file leaves such a newer entry alone.
            drop(key: key, fileName: record.fileName)
            return nil
        }
        guard body.count == record.bodySize, BodyChecksum.hash(body) == record.checksum else {
            logger.warning(
                """
                dropping \(key): body file \(record.fileName) has \(body.count) bytes \
                (index says \(record.bodySize)) or a wrong checksum
                """)
            drop(key: key, fileName: record.fileName)
            return nil
        }
        touch(key: key, accessDate: accessDate)
        var cached = record.head
        cached.body = body
        return cached
    }

    /// Stores `cached` (head and body) for `key`, evicting least recently used entries beyond capacity.
    func save(_ cached: CachedHTTPResponse, key: String, accessDate: Date) {
        guard cached.body.count <= capacity else {
            remove(key: key)
            return
        }
        // Without a usable index a body file would only become an orphan.
        guard withIndex("save", { _ throws(SQLiteError) in true }) != nil else { return }
        let fileName = HTTPCacheBodyFiles.newFileName(forKey: key)
        do {
            try files.write(cached.body, named: fileName)
        } catch {
            logger.warning("could not write a body for \(key): \(error)")
            return
        }
        let obsolete = withIndex("save") { database throws(SQLiteError) in
            try database.transaction(immediate: true) { () throws(SQLiteError) -> [String] in
                var obsolete = try Self.fileName(forKey: key, in: database).map { [$0] } ?? []
                try Self.insert(cached, key: key, fileName: fileName, accessDate: accessDate, into: database)
                obsolete += try self.evict(keeping: key, in: database)
                return obsolete
            }
        }
        // Deleted only now that the commit no longer names them; on failure the new body is unnamed.
        files.remove(obsolete ?? [fileName])
    }

    /// Replaces the head (status, fields, dates) of the entry for `key`, but only if that entry still
    /// holds `cached.body` — another process may have stored a different body meanwhile, and this
    /// head must not be attached to it. Returns whether a row was updated.
    @discardableResult
    func updateHead(_ cached: CachedHTTPResponse, key: String, accessDate: Date) -> Bool {
        withIndex("update") { database throws(SQLiteError) in
            try database.withStatement(
                """
                UPDATE entries SET status = ?, http_version = ?, response_url = ?, headers = ?, vary = ?,
                    request_date = ?, response_date = ?, last_access = ?
                WHERE key = ? AND body_size = ? AND checksum = ?
                """
            ) { statement throws(SQLiteError) in
                try statement.bind(
                    .integer(Int64(cached.response.statusCode)), .text(cached.response.httpVersion),
                    .text(cached.response.url.absoluteString), .text(HeaderCoding.encode(cached.response.headers)),
                    .text(HeaderCoding.encode(cached.varyingRequestHeaders)),
                    .real(cached.requestDate.timeIntervalSince1970), .real(cached.responseDate.timeIntervalSince1970),
                    .real(accessDate.timeIntervalSince1970), .text(key), .integer(Int64(cached.body.count)),
                    .integer(Int64(bitPattern: BodyChecksum.hash(cached.body))))
                try statement.run()
            }
            return database.changes > 0
        } ?? false
    }

    /// Records an access for LRU order.
    func touch(key: String, accessDate: Date) {
        _ = withIndex("touch") { database throws(SQLiteError) in
            try database.withStatement("UPDATE entries SET last_access = ? WHERE key = ?") {
                statement throws(SQLiteError) in
                try statement.bind(.real(accessDate.timeIntervalSince1970), .text(key))
                try statement.run()
            }
        }
    }

    /// Removes the entry for `key`.
    func remove(key: String) {
        let removed = withIndex("remove") { database throws(SQLiteError) in
            try database.transaction(immediate: true) { () throws(SQLiteError) -> String? in
                let fileName = try Self.fileName(forKey: key, in: database)
                try database.withStatement("DELETE FROM entries WHERE key = ?") { statement throws(SQLiteError) in
                    try statement.bind(.text(key))
                    try statement.run()
                }
                return fileName
            }
        }
        if let removed, let removed { files.remove([removed]) }
    }

    /// Removes every entry.
    func removeAll() {
        let removed = withIndex("removeAll") { database throws(SQLiteError) in
            try database.transaction(immediate: true) { () throws(SQLiteError) -> [String] in
                let names = try Self.allFileNames(database)
                try database.execute("DELETE FROM entries")
                return names
            }
        }
        files.remove(removed ?? [])
    }

    /// The sum of the stored body sizes.
    var totalBodySize: Int {
        withIndex("size") { database throws(SQLiteError) in
            try database.withStatement("SELECT total(body_size) FROM entries") { statement throws(SQLiteError) in
                try statement.step() ? Int(statement.double(at: 0)) : 0
            }
        } ?? 0
    }

    /// Every stored key, least recently used first.
    var keysByLastAccess: [String] {
        withIndex("keys") { database throws(SQLiteError) in
            try database.withStatement("SELECT key FROM entries ORDER BY last_access, rowid") {
                statement throws(SQLiteError) in
                var keys: [String] = []
                while try statement.step() { keys.append(statement.string(at: 0)) }
                return keys
            }
        } ?? []
    }

    /// The body file name the index holds for `key` (tests and diagnostics).
    func fileName(forKey key: String) -> String? {
        withIndex("file name") { database throws(SQLiteError) in try Self.fileName(forKey: key, in: database) } ?? nil
    }

    /// The body directory, for tests that damage bodies behind the cache's back.
    var bodiesDirectory: URL { files.bodiesDirectory }

    /// Runs `body` on the index exactly as the store's own operations do, errors and corruption
    /// recovery included; lets tests drive the failure paths.
    func withIndexForTesting<T: Sendable>(_ body: (SQLiteDatabase) throws(SQLiteError) -> T) -> T? {
        withIndex("test", body)
    }

    // MARK: - Eviction

    /// Deletes least recently used rows (never `keeping`) until the bodies fit in `capacity`;
    /// returns their file names. Runs inside the writer's transaction.
    private func evict(keeping key: String, in database: SQLiteDatabase) throws(SQLiteError) -> [String] {
        var total = try database.withStatement("SELECT total(body_size) FROM entries") {
            statement throws(SQLiteError) in
            try statement.step() ? Int(statement.double(at: 0)) : 0
        }
        guard total > capacity else { return [] }
        var victims: [(key: String, fileName: String)] = []
        try database.withStatement(
            "SELECT key, file, body_size FROM entries WHERE key != ? ORDER BY last_access, rowid"
        ) { statement throws(SQLiteError) in
            try statement.bind(.text(key))
            while total > capacity, try statement.step() {
                victims.append((statement.string(at: 0), statement.string(at: 1)))
                total -= Int(statement.int64(at: 2))
            }
        }
        for victim in victims {
            try database.withStatement("DELETE FROM entries WHERE key = ?") { statement throws(SQLiteError) in
                try statement.bind(.text(victim.key))
                try statement.run()
            }
        }
        return victims.map(\.fileName)
    }

    private func drop(key: String, fileName: String) {
        let deleted = withIndex("drop") { database throws(SQLiteError) in
            try database.withStatement("DELETE FROM entries WHERE key = ? AND file = ?") {
                statement throws(SQLiteError) in
                try statement.bind(.text(key), .text(fileName))
                try statement.run()
            }
            return database.changes > 0
        }
        if deleted == true { files.remove([fileName]) }
    }

    private func withIndex<T: Sendable>(
        _ operation: String, _ body: (SQLiteDatabase) throws(SQLiteError) -> T
    ) -> T? {
        index.withIndex(operation, body)
    }
}
