import CSQLite
import Foundation

/// A SQLite failure: the library's (extended) result code, its message, and what we were doing.
struct SQLiteError: Error, CustomStringConvertible {
    /// The extended result code, e.g. `SQLITE_BUSY_SNAPSHOT`.
    let code: Int32
    /// `sqlite3_errmsg` for the connection, or `sqlite3_errstr` when there is none.
    let message: String
    /// The statement or step that failed.
    let operation: String

    /// The primary result code (the low byte of the extended code).
    var primaryCode: Int32 { code & 0xFF }

    /// Whether another connection held a lock this one needed.
    var isBusy: Bool { primaryCode == SQLITE_BUSY }

    /// Whether the database file is damaged or is not a database at all.
    var isCorruption: Bool { primaryCode == SQLITE_CORRUPT || primaryCode == SQLITE_NOTADB }

    /// A corruption error found by our own checks (e.g. `PRAGMA quick_check`).
    static func corrupt(_ message: String, operation: String) -> SQLiteError {
        SQLiteError(code: SQLITE_CORRUPT, message: message, operation: operation)
    }

    var description: String { "SQLite error \(code) (\(message)) during \(operation)" }
}

/// One SQLite connection. Every C call into SQLite lives in this file, and every result code goes
/// through `check(_:_:)`, which turns a failure into a `SQLiteError`.
///
/// Not thread-safe: the connection is opened with `SQLITE_OPEN_NOMUTEX` and its owner keeps it
/// inside a `Lock` (one lock for the disk index), so SQLite's own mutexes would only add cost.
final class SQLiteDatabase {
    private let handle: OpaquePointer
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens (creating if needed) the database at `path` with `busyTimeout` for lock waits, so
    /// several processes can share the file.
    init(path: String, busyTimeout: Duration = .seconds(10)) throws(SQLiteError) {
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &opened, flags, nil)
        guard let opened else {
            throw SQLiteError(code: code, message: String(cString: sqlite3_errstr(code)), operation: "open \(path)")
        }
        guard code == SQLITE_OK else {
            let error = SQLiteError(
                code: code, message: String(cString: sqlite3_errmsg(opened)), operation: "open \(path)")
            // A handle is allocated even when opening fails and must be closed.
            sqlite3_close_v2(opened)
            throw error
        }
        handle = opened
        sqlite3_extended_result_codes(handle, 1)
        let milliseconds =
            busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        try check(sqlite3_busy_timeout(handle, Int32(clamping: milliseconds)), "busy_timeout")
    }

    deinit {
        // Statements must be finalized before the connection can close.
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Turns a SQLite result code into a `SQLiteError` unless it is `OK`, `ROW` or `DONE`.
    @discardableResult
    func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(SQLiteError) -> Int32 {
        switch code & 0xFF {
        case SQLITE_OK, SQLITE_ROW, SQLITE_DONE:
            return code
        default:
            // The connection's message describes the latest failure; sqlite3_errstr is the fallback
            // when it describes something else (e.g. after a reset that reported an older error).
            let connectionCode = sqlite3_extended_errcode(handle)
            let message =
                connectionCode == code ? String(cString: sqlite3_errmsg(handle)) : String(cString: sqlite3_errstr(code))
            throw SQLiteError(code: code, message: message, operation: operation())
        }
    }

    /// Runs one or more statements that return no rows of interest.
    func execute(_ sql: String) throws(SQLiteError) {
        try check(sqlite3_exec(handle, sql, nil, nil, nil), sql)
    }

    /// Runs `body` with the prepared statement for `sql` (prepared once per connection, then
    /// reused) and resets it afterwards. The reset matters: a SELECT left on a row keeps its read
    /// transaction open, which pins an old WAL snapshot (writes of other processes stay invisible)
    /// and stops checkpoints.
    func withStatement<T>(_ sql: String, _ body: (SQLiteStatement) throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let statement = try statement(sql)
        defer { statement.reset() }
        return try body(statement)
    }

    private func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] {
            return cached
        }
        var prepared: OpaquePointer?
        try check(sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil), sql)
        guard let prepared else {
            throw SQLiteError(code: SQLITE_MISUSE, message: "empty statement", operation: sql)
        }
        let statement = SQLiteStatement(handle: prepared, database: self, sql: sql)
        statements[sql] = statement
        return statement
    }

    /// Runs `body` in a transaction. `immediate` takes the write lock at `BEGIN`, so a writer waits
    /// for other writers through the busy timeout instead of failing when it upgrades a read.
    func transaction<T>(immediate: Bool, _ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            // If the rollback fails too, the original error is still the one to report.
            _ = try? check(sqlite3_exec(handle, "ROLLBACK", nil, nil, nil), "ROLLBACK")
            throw error
        }
    }

    /// Rows changed by the latest INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// The SQLite library version, e.g. "3.40.1".
    static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}

/// A prepared statement of a `SQLiteDatabase`. Bind with 1-based indexes, then `step()` through rows.
final class SQLiteStatement {
    private let handle: OpaquePointer
    private unowned let database: SQLiteDatabase  // the database owns its statements
    private let sql: String

    fileprivate init(handle: OpaquePointer, database: SQLiteDatabase, sql: String) {
        self.handle = handle
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    fileprivate func reset() {
        // reset returns the error of the previous step, which was already reported there.
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func bind(_ value: String, at index: Int32) throws(SQLiteError) {
        try database.check(sqlite3_bind_text(handle, index, value, -1, wi_sqlite_transient()), "bind \(index): \(sql)")
    }

    func bind(_ value: Int64, at index: Int32) throws(SQLiteError) {
        try database.check(sqlite3_bind_int64(handle, index, value), "bind \(index): \(sql)")
    }

    func bind(_ value: Double, at index: Int32) throws(SQLiteError) {
        try database.check(sqlite3_bind_double(handle, index, value), "bind \(index): \(sql)")
    }

    func bind(_ value: Data, at index: Int32) throws(SQLiteError) {
        let code = value.withUnsafeBytes { buffer in
            // TRANSIENT: SQLite copies the bytes before this call returns, so the buffer may go.
            sqlite3_bind_blob64(handle, index, buffer.baseAddress, sqlite3_uint64(buffer.count), wi_sqlite_transient())
        }
        try database.check(code, "bind \(index): \(sql)")
    }

    /// Binds each value in order from index 1.
    func bind(_ values: SQLiteValue...) throws(SQLiteError) {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .text(let text): try bind(text, at: index)
            case .integer(let integer): try bind(integer, at: index)
            case .real(let real): try bind(real, at: index)
            case .blob(let blob): try bind(blob, at: index)
            }
        }
    }

    /// Advances to the next row; `false` when the statement is done.
    @discardableResult
    func step() throws(SQLiteError) -> Bool {
        try database.check(sqlite3_step(handle), sql) == SQLITE_ROW
    }

    /// Runs a statement that returns no rows.
    func run() throws(SQLiteError) {
        while try step() {}
    }

    func int64(at column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func double(at column: Int32) -> Double { sqlite3_column_double(handle, column) }

    func string(at column: Int32) -> String {
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        return String(cString: text)
    }

    func data(at column: Int32) -> Data {
        // column_blob before column_bytes, as SQLite documents; the pointer lives until the next step.
        guard let bytes = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: bytes, count: Int(sqlite3_column_bytes(handle, column)))
    }
}

/// A value to bind to a statement parameter.
enum SQLiteValue {
    case text(String)
    case integer(Int64)
    case real(Double)
    case blob(Data)
}
