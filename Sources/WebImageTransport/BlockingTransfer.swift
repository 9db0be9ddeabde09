import CCurl
import Foundation

/// One HTTP request run to its end on the calling thread (`curl_easy_perform`), for a client that sends
/// one request at a time and waits for the answer (the object-store client). `CurlTransport` is the
/// other way in: many transfers on one thread, reported to delegates.
///
/// A request has a method, header fields, an optional body in memory, and a sink for the answer's body:
/// memory, or a file for a 2xx answer, each with a size cap. It may ask libcurl to sign it with AWS
/// Signature Version 4 (``Request/signature``). It follows no redirect (a 3xx is the answer) and judges
/// no destination address: the caller names the host, such as a configured endpoint.
///
/// The easy handles come from one process-wide pool and keep their connections (and TLS sessions)
/// across `curl_easy_reset`, so a run's many small requests reuse a few connections; a handle whose
/// transfer failed may hold a broken connection and is freed instead.
///
/// ```swift
/// var request = BlockingTransfer.Request(method: "GET", url: url)
/// request.totalTimeout = 60
/// let response = try BlockingTransfer(request).perform()
/// ```
package final class BlockingTransfer {
    /// Where the answer's body goes.
    package enum Sink {
        /// Kept in memory, up to ``Request/maximumResponseSize`` bytes.
        case memory
        /// A 2xx answer's body is written to the file, up to `maximumSize` bytes; any other answer's body
        /// (an error's) is kept in memory, as for ``memory``, so its caller can read it.
        case file(FileHandle, maximumSize: Int64)
    }

    /// AWS Signature Version 4, computed by libcurl (`CURLOPT_AWS_SIGV4`) over the method, the URL, the
    /// header fields and the body, and sent as the `Authorization` and `x-amz-date` fields.
    ///
    /// curl 7.88 signs every header field it is given, an empty one too (which it then does not send),
    /// so a field that removes one of curl's own (`Expect:`) makes the signature differ from the store's.
    package struct AWSSignature: Sendable {
        /// curl's provider string, `aws:amz:REGION:SERVICE` (for S3, `aws:amz:us-east-1:s3`).
        package var provider: String
        /// The access key id.
        package var accessKeyID: String
        /// The secret access key.
        package var secretAccessKey: String

        /// A signature of `provider` with these credentials.
        package init(provider: String, accessKeyID: String, secretAccessKey: String) {
            self.provider = provider
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
        }
    }

    /// What to send and how long to wait for it.
    package struct Request {
        /// The method, as sent: `GET`, `HEAD`, `PUT`, `POST`, `DELETE`…
        package var method: String
        /// The URL, sent as its `absoluteString`.
        package var url: URL
        /// Header fields to send, in order. A body without `Content-Type` goes as
        /// `application/octet-stream` (not curl's form type).
        package var headers = HTTPHeaders()
        /// The body, sent whatever the method; an empty one goes as `Content-Length: 0`. nil sends none.
        package var body: [UInt8]?
        /// Where the answer's body goes; memory by default.
        package var sink = Sink.memory
        /// The largest body kept in memory; a longer one fails the transfer with `responseTooLarge`.
        /// 16 MiB by default.
        package var maximumResponseSize = 16 << 20
        /// Seconds the whole request may take; 0 for no limit (the default).
        package var totalTimeout: TimeInterval = 0
        /// Seconds to connect (TCP and TLS); 15 by default.
        package var connectTimeout: TimeInterval = 15
        /// A transfer moving fewer than ``lowSpeedLimit`` bytes a second, in either direction, for this
        /// many seconds fails with `timedOut`: in whole seconds, at least 1 and at most a day (NaN or an
        /// infinity is a day). 60 by default.
        package var stallTimeout: TimeInterval = 60
        /// The speed, in bytes a second, under which ``stallTimeout`` counts; at least 1. 1 by default.
        package var lowSpeedLimit = 1
        /// Whether `.` and `..` path segments go as written (`CURLOPT_PATH_AS_IS`) instead of being
        /// removed: a store's key `a/../b` is a name, not a path to another object. false by default.
        package var keepsDotSegments = false
        /// Schemes the URL may have, lower-case; http and https by default.
        package var allowedProtocols = TransferRequest.defaultAllowedProtocols
        /// Signs the request when set; nil by default.
        package var signature: AWSSignature?

        /// A request of `method` for `url`, every other field at its default.
        package init(method: String, url: URL) {
            self.method = method
            self.url = url
        }
    }

    /// The final answer: the head of the last response (after a `100 Continue`) and its body, when the
    /// sink kept it in memory.
    package struct Response: Sendable {
        /// The HTTP status code, e.g. 200; 0 when no status line arrived.
        package var statusCode: Int
        /// The header fields in the order received.
        package var headers: HTTPHeaders
        /// The body kept in memory; empty when it went to a file.
        package var body: [UInt8]
    }

    /// The handles of every blocking transfer of the process.
    static let handles = EasyHandlePool(share: nil, capacity: 8)

    private let request: Request
    private let easy: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// The body, copied where curl can read it during `perform()` (`CURLOPT_POSTFIELDS` is not copied).
    private var bodyStorage: UnsafeMutableRawBufferPointer?
    /// Set when `perform()` ended with `CURLE_OK`: only then is the handle's connection known to be sound.
    private var reusable = false
    private var performed = false
    private var head = ResponseHeadParser()
    private var body: [UInt8] = []
    private var written: Int64 = 0
    /// Why a callback ended the transfer (a size cap, a file that cannot be written); wins over curl's
    /// `CURLE_WRITE_ERROR`.
    private var abortError: TransportError?

    /// A handle configured for `request`; nothing is sent until ``perform()``.
    ///
    /// - Throws: `setupFailed` when curl refuses an option, a header field holds CR, LF or NUL, or a handle
    ///   or header list cannot be made; `failed` when libcurl did not initialise.
    package init(_ request: Request) throws(TransportError) {
        try CurlRuntime.ensureInitialized()
        guard let handle = Self.handles.checkOut() else {
            throw TransportError(.setupFailed, "curl_easy_init failed", url: request.url)
        }
        self.request = request
        easy = handle.easy
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        try configure()
    }

    deinit {
        // The reset (or cleanup) comes first: no idle handle keeps a pointer to the memory freed below.
        Self.handles.checkIn(easy, reusable: reusable)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
        bodyStorage?.deallocate()
    }

    // MARK: Configuration

    private func configure() throws(TransportError) {
        let r = request
        try setString(CURLOPT_URL, r.url.absoluteString, "URL")
        if r.keepsDotSegments { try setLong(CURLOPT_PATH_AS_IS, 1, "PATH_AS_IS") }
        try setString(CURLOPT_PROTOCOLS_STR, r.allowedProtocols.sorted().joined(separator: ","), "PROTOCOLS_STR")
        try setLong(CURLOPT_NOSIGNAL, 1, "NOSIGNAL")
        try setLong(CURLOPT_FOLLOWLOCATION, 0, "FOLLOWLOCATION")
        try setLong(CURLOPT_TIMEOUT_MS, CurlTransfer.curlTime(r.totalTimeout, unitsPerSecond: 1000), "TIMEOUT_MS")
        try setLong(
            CURLOPT_CONNECTTIMEOUT_MS, CurlTransfer.curlTime(r.connectTimeout, unitsPerSecond: 1000),
            "CONNECTTIMEOUT_MS")
        try setLong(CURLOPT_LOW_SPEED_LIMIT, max(1, r.lowSpeedLimit), "LOW_SPEED_LIMIT")
        try setLong(CURLOPT_LOW_SPEED_TIME, Self.stallSeconds(r.stallTimeout), "LOW_SPEED_TIME")
        if let signature = r.signature {
            try setString(CURLOPT_AWS_SIGV4, signature.provider, "AWS_SIGV4")
            try setString(CURLOPT_USERPWD, "\(signature.accessKeyID):\(signature.secretAccessKey)", "USERPWD")
        }
        try setHeaderFields()
        try CurlRuntime.check(wi_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer), "ERRORBUFFER")
        // The callbacks get `self` unretained: `perform()` keeps `self` alive across `curl_easy_perform`,
        // the only call during which curl calls them, and `deinit` resets the handle before it is reused.
        let me = Unmanaged.passUnretained(self).toOpaque()
        try CurlRuntime.check(wi_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me), "WRITEDATA")
        try CurlRuntime.check(wi_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me), "HEADERDATA")
        try CurlRuntime.check(wi_easy_setopt_write_function(easy, blockingWriteCallback), "WRITEFUNCTION")
        try CurlRuntime.check(wi_easy_setopt_header_function(easy, blockingHeaderCallback), "HEADERFUNCTION")
        if r.method == "HEAD" {
            try setLong(CURLOPT_NOBODY, 1, "NOBODY")
        } else if r.method != "GET" || r.body != nil {
            // A body goes as a POST's (below); CUSTOMREQUEST names the method sent.
            try setString(CURLOPT_CUSTOMREQUEST, r.method, "CUSTOMREQUEST")
        }
        if let payload = r.body {
            // At least one byte, so the pointer is never nil: curl then sends an empty body rather than none.
            let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, payload.count), alignment: 1)
            bodyStorage = storage
            storage.copyBytes(from: payload)
            try setLong(CURLOPT_POST, 1, "POST")
            try CurlRuntime.check(
                wi_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(payload.count)), "POSTFIELDSIZE")
            try CurlRuntime.check(wi_easy_setopt_pointer(easy, CURLOPT_POSTFIELDS, storage.baseAddress), "POSTFIELDS")
        }
    }

    /// `seconds` of ``Request/stallTimeout`` as `CURLOPT_LOW_SPEED_TIME` takes it.
    static func stallSeconds(_ seconds: TimeInterval) -> Int {
        seconds.isFinite ? Int(min(max(seconds, 1), 86_400).rounded(.up)) : 86_400
    }

    private func setHeaderFields() throws(TransportError) {
        var fields = request.headers
        if request.body != nil, !fields.contains("Content-Type") {
            fields.add(name: "Content-Type", value: "application/octet-stream")
        }
        if fields.firstInvalidField() != nil {
            throw TransportError(
                .setupFailed, "refusing to send a header field with CR, LF, NUL or an invalid name", url: request.url)
        }
        for field in fields {
            // "Name:" removes a field curl would add itself.
            let line = field.value.isEmpty ? "\(field.name):" : "\(field.name): \(field.value)"
            guard let appended = curl_slist_append(headerList, line) else {
                throw TransportError(.setupFailed, "curl_slist_append failed", url: request.url)
            }
            headerList = appended
        }
        try CurlRuntime.check(wi_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList), "HTTPHEADER")
    }

    private func setLong(_ option: CURLoption, _ value: Int, _ name: String) throws(TransportError) {
        try CurlRuntime.check(wi_easy_setopt_long(easy, option, value), name)
    }

    private func setString(_ option: CURLoption, _ value: String, _ name: String) throws(TransportError) {
        // curl copies string options (since 7.17), so the temporary C string may go away afterwards.
        try CurlRuntime.check(value.withCString { wi_easy_setopt_string(easy, option, $0) }, name)
    }

    // MARK: Running

    /// Sends the request and waits for the whole answer, on the calling thread. Once per transfer.
    ///
    /// - Throws: `responseTooLarge` when the body passes its sink's cap (a file's fails at once when its
    ///   `Content-Length` says so), with the answer's head as `response`; `aborted`, with the file
    ///   system's error as `reason`, when the sink's file cannot be written; for a transfer curl could not
    ///   finish, the kind of curl's code (`timedOut` for the total and stall timeouts) with curl's message.
    package func perform() throws(TransportError) -> Response {
        guard !performed else {
            throw TransportError(.setupFailed, "the transfer was already performed", url: request.url)
        }
        performed = true
        let code = withExtendedLifetime(self) { curl_easy_perform(easy) }
        if let abortError { throw abortError }
        guard code == CURLE_OK else {
            var error = CurlRuntime.error(for: code, buffer: String(cString: errorBuffer), url: request.url)
            error.response = head.response(url: request.url)
            throw error
        }
        reusable = true
        return Response(statusCode: head.statusCode, headers: head.headers, body: body)
    }

    fileprivate func didReceiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Int {
        // A new status line (after a 100 Continue) starts a new head.
        head.consume(line: line)
        return line.count
    }

    fileprivate func didReceiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        if case .file(let handle, let limit) = request.sink, (200..<300).contains(head.statusCode) {
            // The announced length fails at once; an answer without one (or longer than it said) fails as
            // it passes the cap.
            let announced =
                written == 0 ? head.headers.values(for: "Content-Length").last.flatMap { Int64($0) } ?? 0 : 0
            guard announced <= limit, Int64(bytes.count) <= limit - written else {
                abortError = TransportError(
                    .responseTooLarge,
                    announced > limit
                        ? "the body is larger than the \(limit) bytes allowed (Content-Length: \(announced))"
                        : "the body went on past the \(limit) bytes allowed",
                    url: request.url, response: head.response(url: request.url))
                return 0
            }
            written += Int64(bytes.count)
            do {
                try handle.write(contentsOf: bytes)
            } catch {
                abortError = .aborted(by: error, url: request.url)
                return 0
            }
            return bytes.count
        }
        guard bytes.count <= request.maximumResponseSize - body.count else {
            abortError = TransportError(
                .responseTooLarge, "the body is larger than the \(request.maximumResponseSize) bytes allowed",
                url: request.url, response: head.response(url: request.url))
            return 0
        }
        body.append(contentsOf: bytes)
        return bytes.count
    }
}

// C entry points. `userdata` is the unretained BlockingTransfer set in `configure()`.
private let blockingWriteCallback: wi_data_callback = { pointer, size, count, userdata in
    guard let userdata else { return 0 }
    let transfer = Unmanaged<BlockingTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.didReceiveBody(UnsafeRawBufferPointer(start: pointer, count: size * count))
}

private let blockingHeaderCallback: wi_data_callback = { pointer, size, count, userdata in
    guard let userdata else { return 0 }
    let transfer = Unmanaged<BlockingTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.didReceiveHeaderLine(UnsafeRawBufferPointer(start: pointer, count: size * count))
}
