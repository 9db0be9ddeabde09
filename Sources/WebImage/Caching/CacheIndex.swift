import Foundation
import Locking
import Logging

/// The SQLite index of a disk cache (`index.sqlite` in WAL mode beside the cache's body files), with
/// what every disk cache needs around it: opening it on first use and again after a failure, creating
/// or replacing its schema, moving a damaged file aside and starting over, and reporting each problem
/// once. `HTTPCacheDiskStore` and `ImageDiskCache` each own one; their rows and queries are their own.
///
/// The connection lives behind one lock: every operation of a cache is one call of `withIndex`.
final class CacheIndex: Sendable {
    let directory: URL
    let databasePath: String
    private let files: HTTPCacheBodyFiles
    private let schema: String
    private let schemaVersion: Int64
    private let tables: [String]
    private let logger: Logger
    private let state: Lock<State>

    private struct State {
        var database: SQLiteDatabase?
        /// The file the connection opened, to tell whether another process already replaced it.
        var identity: FileIdentity?
        var lastOpenFailure: String?
    }

    /// Describes the index under `directory`; nothing is opened until the first `withIndex`.
    ///
    /// - Parameters:
    ///   - schema: statements that create the tables if needed and set `PRAGMA user_version` to
    ///     `schemaVersion`.
    ///   - tables: dropped when an index carries another non-zero `user_version` (its bodies then
    ///     become orphans for the owner's sweep).
    init(
        directory: URL, files: HTTPCacheBodyFiles, schema: String, schemaVersion: Int64, tables: [String],
        logger: Logger
    ) {
        self.directory = directory
        self.databasePath = directory.appendingPathComponent("index.sqlite").path
        self.files = files
        self.schema = schema
        self.schemaVersion = schemaVersion
        self.tables = tables
        self.logger = logger
        self.state = Lock(State())
    }

    /// Runs `body` against the open index under the lock. A SQLite error is logged and yields `nil`;
    /// a corruption error also moves the damaged database aside and opens a new one, so the next
    /// call works again.
    func withIndex<T: Sendable>(_ operation: String, _ body: (SQLiteDatabase) throws(SQLiteError) -> T) -> T? {
        state.withLock { state -> T? in
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

    // MARK: - Opening, corruption recovery

    private func open(_ state: inout State) {
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

    private func openDatabase(_ state: inout State) throws(SQLiteError) {
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
            if version != 0, version != schemaVersion {
                // An index from another version of this cache: start over (its bodies become orphans).
                for table in tables { try database.execute("DROP TABLE IF EXISTS \(table)") }
            }
            try database.execute(schema)
        }
        state.database = database
        state.lastOpenFailure = nil
    }

    private func recover(_ state: inout State) {
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

    private func reportOpenFailure(_ what: String, _ error: any Error, _ state: inout State) {
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
