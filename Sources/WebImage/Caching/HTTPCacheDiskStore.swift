import Foundation
import Locking
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
    private let databasePath: String
    private let files: HTTPCacheBodyFiles
    private let logger: Logger
    private let index: Lock<IndexState>

    private struct IndexState {
        var database: SQLiteDatabase?
        /// The file the connection opened, to tell whether another process already replaced it.
        var identity: FileIdentity?
        var lastOpenFailure: String?
    }

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
        self.databasePath = directory.appendingPathComponent("index.sqlite").path
        self.files = HTTPCacheBodyFiles(directory: directory, synchronousWrites: synchronousWrites)
        self.logger = logger
        self.index = Lock(IndexState())
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

    // MARK: - Opening, corruption recovery

    /// Runs `body` against the open index under the lock. A SQLite error is logged and yields `nil`;
    /// a corruption error also moves the damaged database aside and opens a new one, so the next
    /// call works again.
    private func withIndex<T: Sendable>(
        _ operation: String, _ body: (SQLiteDatabase) throws(SQLiteError) -> T
    ) -> T? {
        index.withLock { state -> T? in
            if state.database == nil { open(&state) }
            guard let database = state.database else { return nil }
            do throws(SQLiteError) {
                return try body(database)
            } catch {
                if error.isCorruption {
                    logger.warning("the index at \(databasePath) is damaged (\(error)); rebuilding it")
                    recover(&state)
                } else {
                    logger.warning("\(operation) failed: \(error)")
                }
                return nil
            }
        }
    }

    private func open(_ state: inout IndexState) {
        do {
            try files.createDirectories()
        } catch {
            reportOpenFailure("cannot create \(directory.path)", error, &state)
            return
        }
        do throws(SQLiteError) {
            try openDatabase(&state)
        } catch  where error.isCorruption {
            logger.warning("the index at \(databasePath) is damaged (\(error)); rebuilding it")
            recover(&state)
        } catch {
            reportOpenFailure("cannot open the index at \(databasePath)", error, &state)
        }
    }

    /// Runs `body` again while it fails with `SQLITE_BUSY`, for up to 10 s (the connection's busy
    /// timeout). Switching a new index to WAL needs an exclusive lock, and when several connections (or
    /// processes) open a new index at once, SQLite may answer SQLITE_BUSY at once instead of waiting:
    /// a connection that holds a shared lock while another wants to write would deadlock in the busy
    /// handler, so SQLite skips it. Seen with four caches opening one new directory under ASan.
    private static func retryingBusy<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let deadline = ContinuousClock.now + .seconds(10)
        var pause: TimeInterval = 0.001
        while true {
            do {
                return try body()
            } catch  where error.isBusy && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: pause)
                pause = min(pause * 2, 0.05)
            }
        }
    }

    private func openDatabase(_ state: inout IndexState) throws(SQLiteError) {
        let database = try SQLiteDatabase(path: databasePath)
        state.identity = FileIdentity(path: databasePath)
        let journalMode = try Self.retryingBusy { () throws(SQLiteError) in
            try database.withStatement("PRAGMA journal_mode = WAL") { statement throws(SQLiteError) in
                try statement.step() ? statement.string(at: 0) : ""
            }
        }
        if journalMode.lowercased() != "wal" {
            logger.warning("SQLite kept journal mode \(journalMode) for \(databasePath)")
        }
        // NORMAL in WAL mode: a killed process loses nothing committed; power loss may lose the last
        // transactions, never consistency.
        try database.execute("PRAGMA synchronous = NORMAL")
        let check = try database.withStatement("PRAGMA quick_check(1)") { statement throws(SQLiteError) in
            try statement.step() ? statement.string(at: 0) : "no result"
        }
        guard check == "ok" else {
            throw SQLiteError.corrupt("quick_check: \(check)", operation: "open \(databasePath)")
        }
        try database.transaction(immediate: true) { () throws(SQLiteError) in
            let version = try database.withStatement("PRAGMA user_version") { statement throws(SQLiteError) in
                try statement.step() ? statement.int64(at: 0) : 0
            }
            if version != 0, version != Self.schemaVersion {
                // An index from another version of this cache: start over (its bodies become orphans).
                try database.execute("DROP TABLE IF EXISTS entries")
            }
            try database.execute(Self.schema)
        }
        state.database = database
        state.lastOpenFailure = nil
    }

    private func recover(_ state: inout IndexState) {
        // Close first: the damaged file must not stay open under its old name.
        let openedIdentity = state.identity
        state.database = nil
        state.identity = nil
        let currentIdentity = FileIdentity(path: databasePath)
        // If another process already replaced the damaged file, the file at the path is new: use it.
        if openedIdentity == nil || openedIdentity == currentIdentity {
            do {
                try moveDatabaseAside(databasePath, suffix: ".corrupt")
            } catch {
                reportOpenFailure("cannot move the damaged index aside", error, &state)
                return
            }
        }
        do {
            try openDatabase(&state)
            logger.warning("moved the damaged index to \(databasePath).corrupt and created a new one")
        } catch {
            reportOpenFailure("cannot create a new index at \(databasePath)", error, &state)
        }
    }

    private func reportOpenFailure(_ what: String, _ error: any Error, _ state: inout IndexState) {
        // Every call retries the open; say so once per distinct problem rather than on every lookup.
        // The key leaves out the error's description: an NSError prints its userInfo dictionary in
        // an order that can differ between two otherwise identical failures.
        let nsError = error as NSError
        let key = "\(what) [\(nsError.domain) \(nsError.code) \(Self.underlyingCode(of: nsError))]"
        guard state.lastOpenFailure != key else { return }
        state.lastOpenFailure = key
        logger.warning("\(what): \(error); the disk tier is unavailable")
    }

    private static func underlyingCode(of error: NSError) -> String {
        guard let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError else { return "-" }
        return "\(underlying.domain) \(underlying.code)"
    }
}
