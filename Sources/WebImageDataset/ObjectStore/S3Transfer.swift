import CCurl
import Crypto
import Foundation
import WebImageTransport

/// One request to the store, signed by libcurl (`CURLOPT_AWS_SIGV4`), run to its end on the calling
/// thread. The only file of the object-store client that talks to C.
///
/// The body goes as `CURLOPT_POSTFIELDS` (whatever the method) with its SHA-256 in
/// `x-amz-content-sha256`: curl 7.88 hashes the post fields into the canonical request, and S3 wants the
/// same hash in that header; a newer curl reads the header. So the body is in memory: at most one part
/// (``S3Configuration/partSize``).
final class S3Transfer {
    /// Where the answer's body goes.
    enum Sink {
        /// Kept in memory, up to the configuration's ``S3Configuration/maximumResponseBytes``.
        case memory
        /// A 2xx answer's body is written to the file; an error's is kept in memory.
        case file(FileHandle)
    }

    struct Response {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]

        func header(_ name: String) -> String? {
            headers.last { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    private static let emptyHash = SHA256.hash(data: Data()).map { String(format: "%02x", $0) }.joined()

    private let sink: Sink
    private let limit: Int
    private let downloadLimit: Int64
    private var status = 0
    private var headers: [(name: String, value: String)] = []
    private var body: [UInt8] = []
    private var written: Int64 = 0
    private var failure: S3Error?

    private init(sink: Sink, limit: Int, downloadLimit: Int64) {
        self.sink = sink
        self.limit = limit
        self.downloadLimit = downloadLimit
    }

    /// Runs `method` on `url` with `body` and `extraHeaders`, signed with `configuration`'s credentials.
    ///
    /// - Throws: ``S3Error/Kind/network`` for a transfer curl could not finish, with curl's message;
    ///   ``S3Error/Kind/badResponse`` for an answer in memory over the size bound;
    ///   ``S3Error/Kind/tooLarge`` for a file's over ``S3Configuration/maximumDownloadBytes``;
    ///   ``S3Error/Kind/file`` when the sink's file cannot be written.
    static func perform(
        method: String, url: String, body: [UInt8]?, extraHeaders: [String] = [], sink: Sink = .memory,
        configuration: S3Configuration
    ) throws(S3Error) -> Response {
        do {
            try CurlRuntime.ensureInitialized()
        } catch {
            throw S3Error(.network, error.message)
        }
        guard let easy = S3HandlePool.shared.checkOut() else { throw S3Error(.network, "curl_easy_init failed") }
        var reusable = false
        defer { S3HandlePool.shared.checkIn(easy, reusable: reusable) }
        let transfer = S3Transfer(
            sink: sink, limit: configuration.maximumResponseBytes, downloadLimit: configuration.maximumDownloadBytes)
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errorBuffer.deallocate() }

        var headerLines = extraHeaders
        let payload = body ?? []
        let hash =
            body == nil || payload.isEmpty
            ? emptyHash : SHA256.hash(data: payload).map { String(format: "%02x", $0) }.joined()
        headerLines.append("x-amz-content-sha256: \(hash)")
        if let token = configuration.sessionToken { headerLines.append("x-amz-security-token: \(token)") }
        // No `Expect:` line to turn off curl's `Expect: 100-continue` (sent for bodies over 1 MiB): curl 7.88
        // signs every header line it is given, the empty one too, and then does not send it, so the
        // store's signature would differ.
        if body != nil, !extraHeaders.contains(where: { $0.lowercased().hasPrefix("content-type:") }) {
            headerLines.append("Content-Type: application/octet-stream")
        }
        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        for line in headerLines {
            guard let appended = curl_slist_append(list, line) else {
                throw S3Error(.network, "curl_slist_append failed")
            }
            list = appended
        }

        func check(_ code: CURLcode, _ what: String) throws(S3Error) {
            do {
                try CurlRuntime.check(code, what)
            } catch {
                throw S3Error(.network, error.message)
            }
        }
        try check(wi_easy_setopt_string(easy, CURLOPT_URL, url), "URL")
        // The key goes as written: without this curl removes `.` and `..` segments, and `a/../b` would
        // read (and sign) another object, or another bucket.
        try check(wi_easy_setopt_long(easy, CURLOPT_PATH_AS_IS, 1), "PATH_AS_IS")
        try check(wi_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"), "PROTOCOLS_STR")
        try check(wi_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1), "NOSIGNAL")
        try check(wi_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(configuration.requestTimeout * 1000)), "TIMEOUT")
        try check(
            wi_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout * 1000)),
            "CONNECTTIMEOUT")
        try check(wi_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, max(1, configuration.lowSpeedLimit)), "LOW_SPEED")
        // Whole seconds, at least one and at most a day (a NaN or an infinity is a day).
        let stallSeconds =
            configuration.stallTimeout.isFinite
            ? Int(min(max(configuration.stallTimeout, 1), 86_400).rounded(.up)) : 86_400
        try check(wi_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, stallSeconds), "LOW_SPEED_TIME")
        try check(
            wi_easy_setopt_string(easy, CURLOPT_AWS_SIGV4, "aws:amz:\(configuration.region):s3"), "AWS_SIGV4")
        try check(
            wi_easy_setopt_string(
                easy, CURLOPT_USERPWD, "\(configuration.accessKeyID):\(configuration.secretAccessKey)"),
            "USERPWD")
        try check(wi_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list), "HTTPHEADER")
        try check(wi_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer), "ERRORBUFFER")
        // The callbacks get the transfer unretained: `transfer` lives until this function returns, after
        // `curl_easy_perform`, the only call during which curl calls them.
        let me = Unmanaged.passUnretained(transfer).toOpaque()
        try check(wi_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me), "WRITEDATA")
        try check(wi_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me), "HEADERDATA")
        try check(wi_easy_setopt_write_function(easy, s3WriteCallback), "WRITEFUNCTION")
        try check(wi_easy_setopt_header_function(easy, s3HeaderCallback), "HEADERFUNCTION")
        if method == "HEAD" {
            try check(wi_easy_setopt_long(easy, CURLOPT_NOBODY, 1), "NOBODY")
        } else if method != "GET" {
            // The body goes as a POST's (below); CUSTOMREQUEST names the method sent.
            try check(wi_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method), "CUSTOMREQUEST")
        }

        // One byte so the pointer is never nil: curl then sends an empty body rather than none.
        var storage = payload.isEmpty ? [UInt8](repeating: 0, count: 1) : payload
        let code = storage.withUnsafeMutableBytes { bytes -> CURLcode in
            if body != nil {
                guard wi_easy_setopt_long(easy, CURLOPT_POST, 1) == CURLE_OK,
                    wi_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(payload.count)) == CURLE_OK,
                    wi_easy_setopt_pointer(easy, CURLOPT_POSTFIELDS, bytes.baseAddress) == CURLE_OK
                else { return CURLE_FAILED_INIT }
            }
            return withExtendedLifetime(transfer) { curl_easy_perform(easy) }
        }
        if let failure = transfer.failure { throw failure }
        // A handle whose transfer failed may hold a broken connection: it is not reused.
        reusable = code == CURLE_OK
        guard code == CURLE_OK else {
            let error = CurlRuntime.error(for: code, buffer: String(cString: errorBuffer), url: URL(string: url))
            throw S3Error(.network, "\(method) \(Self.redacted(url)): \(error.message)")
        }
        return Response(status: transfer.status, headers: transfer.headers, body: transfer.body)
    }

    /// The URL without its query (a continuation token, an upload id), for messages.
    static func redacted(_ url: String) -> String {
        String(url.prefix { $0 != "?" })
    }

    private func header(_ name: String) -> String? {
        headers.last { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    fileprivate func didReceiveHeader(_ bytes: UnsafeRawBufferPointer) -> Int {
        let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if line.hasPrefix("HTTP/") {
            // A new status line (after a 100 Continue, or a redirect) starts a new head.
            let parts = line.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            headers = []
        } else if let colon = line.firstIndex(of: ":") {
            headers.append(
                (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return bytes.count
    }

    fileprivate func didReceiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        if case .file(let handle) = sink, (200..<300).contains(status) {
            // The announced length fails at once; an answer without one (or longer than it said) fails
            // as it passes the bound.
            let announced = written == 0 ? header("Content-Length").flatMap { Int64($0) } ?? 0 : 0
            guard announced <= downloadLimit, Int64(bytes.count) <= downloadLimit - written else {
                failure = S3Error(
                    .tooLarge,
                    "the object is larger than the \(downloadLimit) bytes a download may have "
                        + (announced > downloadLimit ? "(Content-Length: \(announced))" : "(it went on past them)"))
                return 0
            }
            written += Int64(bytes.count)
            do {
                try handle.write(contentsOf: bytes)
            } catch {
                failure = S3Error(.file, "cannot write the downloaded object: \(error.localizedDescription)")
                return 0
            }
            return bytes.count
        }
        guard body.count + bytes.count <= limit else {
            failure = S3Error(.badResponse, "the store's answer is larger than \(limit) bytes")
            return 0
        }
        body += bytes
        return bytes.count
    }
}

// C entry points. `userdata` is the unretained S3Transfer set in `perform`.
private let s3WriteCallback: wi_data_callback = { pointer, size, count, userdata in
    guard let userdata else { return 0 }
    let transfer = Unmanaged<S3Transfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.didReceiveBody(UnsafeRawBufferPointer(start: pointer, count: size * count))
}

private let s3HeaderCallback: wi_data_callback = { pointer, size, count, userdata in
    guard let userdata else { return 0 }
    let transfer = Unmanaged<S3Transfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.didReceiveHeader(UnsafeRawBufferPointer(start: pointer, count: size * count))
}
