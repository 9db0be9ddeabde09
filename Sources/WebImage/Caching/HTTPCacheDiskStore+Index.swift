import Foundation

/// The index schema and its row queries. Runs under the disk store's lock, inside its transactions.
extension HTTPCacheDiskStore {
    /// Bumped when the schema changes; an index with another version is dropped and recreated.
    static let schemaVersion: Int64 = 1

    static let schema = """
        CREATE TABLE IF NOT EXISTS entries (
            key TEXT PRIMARY KEY NOT NULL,
            file TEXT NOT NULL,
            body_size INTEGER NOT NULL,
            checksum INTEGER NOT NULL,
            status INTEGER NOT NULL,
            http_version TEXT NOT NULL,
            response_url TEXT NOT NULL,
            headers TEXT NOT NULL,
            vary TEXT NOT NULL,
            request_date REAL NOT NULL,
            response_date REAL NOT NULL,
            last_access REAL NOT NULL
        );
        CREATE INDEX IF NOT EXISTS entries_by_last_access ON entries (last_access);
        PRAGMA user_version = \(schemaVersion);
        """

    static func record(forKey key: String, in database: SQLiteDatabase) throws(SQLiteError) -> Record? {
        try database.withStatement(
            """
            SELECT file, body_size, checksum, status, http_version, response_url, headers, vary,
                request_date, response_date FROM entries WHERE key = ?
            """
        ) { statement throws(SQLiteError) -> Record? in
            try statement.bind(.text(key))
            guard try statement.step() else { return nil }
            // A row whose URL no longer parses is treated like a missing one; it will be replaced.
            guard let url = URL(string: statement.string(at: 5)) else { return nil }
            let response = TransferResponse(
                url: url, statusCode: Int(statement.int64(at: 3)),
                headers: HeaderCoding.decode(statement.string(at: 6)),
                httpVersion: statement.string(at: 4))
            let head = CachedHTTPResponse(
                response: response, body: Data(),
                requestDate: Date(timeIntervalSince1970: statement.double(at: 8)),
                responseDate: Date(timeIntervalSince1970: statement.double(at: 9)),
                varyingRequestHeaders: HeaderCoding.decodeDictionary(statement.string(at: 7)))
            return Record(
                fileName: statement.string(at: 0), bodySize: Int(statement.int64(at: 1)),
                checksum: UInt64(bitPattern: statement.int64(at: 2)), head: head)
        }
    }

    static func fileName(forKey key: String, in database: SQLiteDatabase) throws(SQLiteError) -> String? {
        try database.withStatement("SELECT file FROM entries WHERE key = ?") { statement throws(SQLiteError) in
            try statement.bind(.text(key))
            return try statement.step() ? statement.string(at: 0) : nil
        }
    }

    static func allFileNames(_ database: SQLiteDatabase) throws(SQLiteError) -> [String] {
        try database.withStatement("SELECT file FROM entries") { statement throws(SQLiteError) in
            var names: [String] = []
            while try statement.step() { names.append(statement.string(at: 0)) }
            return names
        }
    }

    static func insert(
        _ cached: CachedHTTPResponse, key: String, fileName: String, accessDate: Date, into database: SQLiteDatabase
    ) throws(SQLiteError) {
        try database.withStatement(
            """
            INSERT OR REPLACE INTO entries (key, file, body_size, checksum, status, http_version, response_url,
                headers, vary, request_date, response_date, last_access)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        ) { statement throws(SQLiteError) in
            try statement.bind(
                .text(key), .text(fileName), .integer(Int64(cached.body.count)),
                .integer(Int64(bitPattern: BodyChecksum.hash(cached.body))),
                .integer(Int64(cached.response.statusCode)),
                .text(cached.response.httpVersion), .text(cached.response.url.absoluteString),
                .text(HeaderCoding.encode(cached.response.headers)),
                .text(HeaderCoding.encode(cached.varyingRequestHeaders)),
                .real(cached.requestDate.timeIntervalSince1970), .real(cached.responseDate.timeIntervalSince1970),
                .real(accessDate.timeIntervalSince1970))
            try statement.run()
        }
    }
}

/// Header fields as text in the index: one `name: value` per line. Field values cannot contain
/// CR or LF (RFC 9110 §5.5), so a line break is an unambiguous separator.
enum HeaderCoding {
    static func encode(_ headers: HTTPHeaders) -> String {
        headers.fields.map { "\($0.name): \(sanitized($0.value))" }.joined(separator: "\n")
    }

    static func encode(_ dictionary: [String: String]) -> String {
        encode(
            HTTPHeaders(dictionary.sorted { $0.key < $1.key }.map { HTTPHeaders.Field(name: $0.key, value: $0.value) }))
    }

    static func decode(_ text: String) -> HTTPHeaders {
        HTTPHeaders(
            text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                let value = line[line.index(after: colon)...]
                return HTTPHeaders.Field(
                    name: String(line[..<colon]), value: String(value.hasPrefix(" ") ? value.dropFirst() : value))
            })
    }

    static func decodeDictionary(_ text: String) -> [String: String] {
        var dictionary: [String: String] = [:]
        for field in decode(text) { dictionary[field.name] = field.value }
        return dictionary
    }

    private static func sanitized(_ value: String) -> String {
        value.contains(where: \.isNewline) ? String(value.map { $0.isNewline ? " " : $0 }) : value
    }
}
