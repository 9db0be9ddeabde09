import CCurl
import Foundation
import Synchronization

/// One HTTP transfer: a curl easy handle plus the memory curl points into (header list, error buffer).
///
/// Life cycle: created and configured on the caller's thread, then handed to `CurlTransport`; from
/// then on only the transport thread touches it until `transferDidComplete` has been delivered.
/// The header list and the error buffer are freed in `deinit`, after the transport has removed the
/// handle from its multi handle (the transport keeps a strong reference until then); the easy handle
/// then goes back to the transport's pool, which resets it for the next transfer or frees it.
final class CurlTransfer: TransportTransfer, @unchecked Sendable {
    // @unchecked Sendable: the mutable state below is written on the caller's thread only before the
    // transfer is submitted (the submit goes through the transport's mutex, which publishes it), and
    // afterwards only on the transport thread.
    let request: TransferRequest
    let easy: UnsafeMutableRawPointer
    /// The handle served an earlier transfer (it came from the pool, reset).
    private let isReusedHandle: Bool
    private let pool: EasyHandlePool
    private let share: CurlShare
    private var delegate: (any TransferDelegate)?
    /// The header fields of the current hop; replaced (and the old list freed) when a hop changes them.
    var headerList: UnsafeMutablePointer<curl_slist>?
    /// The current hop's `CURLOPT_RESOLVE` entries (``TransferRequest/hostAddresses``), freed with the
    /// transfer or when the next hop replaces them.
    var resolveList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>

    // Transport-thread state (and, before submission, the caller's thread; see the class comment).
    /// The URL of the current hop: the request's URL until a redirect is followed.
    var currentURL: URL
    /// Redirects followed so far, and what the earlier hops measured.
    var redirectsFollowed = 0
    var earlierHops = EarlierHops()
    /// Whether the current hop's response is a redirect to follow, once decided for this hop.
    var hopRedirect: HopRedirect = .undecided
    var head = ResponseHeadParser()
    var responseDelivered = false
    var abortError: TransportError?
    var received: Int64 = 0
    private var isFinished = false
    /// A cancel reached the transport thread before the transfer was added to the multi handle (see
    /// `TransportLoop`'s `.cancel`); set and read on the transport thread only.
    var cancelledBeforeAdd = false
    /// When the total timeout runs out, set when the first hop starts (nil before, or without a limit).
    var deadline: ContinuousClock.Instant?
    /// What the destination policy decided about the current hop's connection attempts.
    var destinations = DestinationAttempts()

    init(request: TransferRequest, pool: EasyHandlePool, share: CurlShare, delegate: any TransferDelegate)
        throws(TransportError)
    {
        try CurlRuntime.ensureInitialized()
        guard let handle = pool.checkOut() else {
            throw TransportError(.setupFailed, "curl_easy_init failed", url: request.url)
        }
        self.request = request
        self.currentURL = request.url
        self.easy = handle.easy
        self.isReusedHandle = handle.isReused
        self.pool = pool
        self.share = share
        self.delegate = delegate
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        try configure()
    }

    deinit {
        // A handle that ran the cookie engine is not reused (see EasyHandlePool).
        pool.checkIn(easy, reusable: !request.handlesCookies)
        curl_slist_free_all(headerList)
        curl_slist_free_all(resolveList)
        errorBuffer.deallocate()
    }

    // MARK: Configuration

    /// The options that stay the same for every hop of a redirect chain; `applyHop()` sets the rest.
    private func configure() throws(TransportError) {
        let r = request
        let protocols = r.allowedProtocols.sorted().joined(separator: ",")
        try setString(CURLOPT_PROTOCOLS_STR, protocols, "PROTOCOLS_STR")
        try setLong(CURLOPT_NOSIGNAL, 1, "NOSIGNAL")
        // Redirects are followed here, hop by hop (CurlTransfer+Redirects.swift), not by curl: curl would
        // send every custom header field (an API key, say) to whatever host a redirect names.
        try setLong(CURLOPT_FOLLOWLOCATION, 0, "FOLLOWLOCATION")
        // Idle, not total, timeout: fail when under 1 byte/s for `idleTimeout` seconds.
        let idle = max(1, Self.curlTime(r.idleTimeout, unitsPerSecond: 1))
        try setLong(CURLOPT_LOW_SPEED_LIMIT, 1, "LOW_SPEED_LIMIT")
        try setLong(CURLOPT_LOW_SPEED_TIME, idle, "LOW_SPEED_TIME")
        try setLong(
            CURLOPT_CONNECTTIMEOUT_MS, max(1, Self.curlTime(r.connectTimeout, unitsPerSecond: 1000)),
            "CONNECTTIMEOUT_MS")
        try setOff(CURLOPT_MAXFILESIZE_LARGE, r.maximumResponseSize, "MAXFILESIZE_LARGE")
        try setString(CURLOPT_ACCEPT_ENCODING, "", "ACCEPT_ENCODING")  // every encoding this curl has
        try setReceiveBufferSize()
        try setLong(CURLOPT_SSL_VERIFYPEER, r.verifiesTLS ? 1 : 0, "SSL_VERIFYPEER")
        try setLong(CURLOPT_SSL_VERIFYHOST, r.verifiesTLS ? 2 : 0, "SSL_VERIFYHOST")
        if let ca = r.caBundlePath { try setString(CURLOPT_CAINFO, ca, "CAINFO") }
        try CurlRuntime.check(wi_easy_setopt_share(easy, share.handle), "SHARE")
        if r.handlesCookies {
            try setString(CURLOPT_COOKIEFILE, "", "COOKIEFILE")  // "" turns the cookie engine on, reading no file
        }
        try CurlRuntime.check(wi_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer), "ERRORBUFFER")
        try applyHop()

        // The callbacks get `self` unretained: the transport holds a strong reference for as long as the
        // handle is in its multi handle, which is the only time curl calls them.
        let me = Unmanaged.passUnretained(self).toOpaque()
        try CurlRuntime.check(wi_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me), "WRITEDATA")
        try CurlRuntime.check(wi_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me), "HEADERDATA")
        try CurlRuntime.check(wi_easy_setopt_write_function(easy, curlWriteCallback), "WRITEFUNCTION")
        try CurlRuntime.check(wi_easy_setopt_header_function(easy, curlHeaderCallback), "HEADERFUNCTION")
        try installDestinationCheck(userdata: me)
    }

    /// Asks for 64 KB reads instead of curl's 16 KB: four times fewer write callbacks on large bodies. Kept
    /// under glibc's 128 KB mmap threshold, so the per-handle buffer comes from the heap, not mmap/munmap.
    ///
    /// A pooled handle may refuse it, and that is fine. curl 7.88 allocates the receive buffer
    /// (`state.buffer`) when a transfer connects and frees it at the end of `multi_done()`. But when the
    /// transfer was one stream of a multiplexed HTTP/2 connection that other streams still use,
    /// `multi_done()` returns early ("Connection still in use") before that free, and `curl_easy_reset`
    /// never frees it either. `CURLOPT_BUFFERSIZE` refuses any change while the buffer exists
    /// (`CURLE_BAD_FUNCTION_ARGUMENT`, lib/setopt.c), so every reused handle that had served such a
    /// stream failed here: 6 of 200 downloads succeeded against nginx over h2 at concurrency 6. The
    /// retained buffer is at least as large as the size curl reads with after the reset (it was made
    /// with our 64 KB, or the reset's 16 KB default), so the transfer runs with curl's default read size
    /// until a transfer on this handle ends cleanly and frees the buffer. Freeing such handles instead
    /// of pooling them was measured slower over h2 (7,312 vs 8,331 files/s, 152 vs 138 µs CPU per file,
    /// median of 12 alternating runs of 2,000 × 20 KB at concurrency 6). A fresh handle has no buffer,
    /// so there the refusal cannot happen and any failure is an error.
    private func setReceiveBufferSize() throws(TransportError) {
        let code = wi_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, 64 * 1024)
        if code == CURLE_BAD_FUNCTION_ARGUMENT && isReusedHandle { return }
        try CurlRuntime.check(code, "BUFFERSIZE")
    }

    /// `seconds` in whole units (`unitsPerSecond` of them a second) for one of curl's time options, rounded
    /// up: 0 for NaN or a value not above 0, and at most `Int32.max` (a `long` everywhere curl runs), so a
    /// configured time of any size is a long wait rather than an overflow.
    static func curlTime(_ seconds: TimeInterval, unitsPerSecond: Double) -> Int {
        let units = (seconds * unitsPerSecond).rounded(.up)
        guard units > 0 else { return 0 }
        return units >= Double(Int32.max) ? Int(Int32.max) : Int(units)
    }

    func setLong(_ option: CURLoption, _ value: Int, _ name: String) throws(TransportError) {
        try CurlRuntime.check(wi_easy_setopt_long(easy, option, value), name)
    }
    private func setOff(_ option: CURLoption, _ value: Int64, _ name: String) throws(TransportError) {
        try CurlRuntime.check(wi_easy_setopt_off(easy, option, curl_off_t(value)), name)
    }
    func setString(_ option: CURLoption, _ value: String, _ name: String) throws(TransportError) {
        // curl copies string options (since 7.17), so the temporary C string may go away afterwards.
        try CurlRuntime.check(value.withCString { wi_easy_setopt_string(easy, option, $0) }, name)
    }

    // MARK: Transport-thread events

    /// The transport added the handle to its multi handle.
    func didStart() {
        // Capped at about 31 years: `Duration` traps on a larger count of seconds.
        if request.totalTimeout > 0 { deadline = .now + .seconds(min(request.totalTimeout, 1e9)) }
        delegate?.transferDidStart()
    }

    /// The host the connection limits count this transfer against: its URL's scheme, name and port.
    var hostKey: String {
        let url = request.url
        return "\(url.scheme?.lowercased() ?? "")://\(url.host?.lowercased() ?? ""):\(url.port ?? -1)"
    }

    fileprivate func didReceiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Int {
        head.consume(line: line)
        return line.count
    }

    fileprivate func didReceiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        // curl skips the body of a 401 before its authenticated retry; a redirect's body is skipped here,
        // since this transfer follows redirects itself. Otherwise the first body byte belongs to the
        // final response: its head is complete now.
        if !responseDelivered {
            if isRedirect { return skipRedirectBody(bytes.count) }
            if let error = deliverResponse() {
                abortError = error
                return 0
            }
        }
        received += Int64(bytes.count)
        if received > request.maximumResponseSize {
            abortError = TransportError(
                .responseTooLarge, "the body exceeds the maximum response size of \(request.maximumResponseSize) bytes",
                url: request.url, response: head.response(url: effectiveURL))
            return 0
        }
        if let reason = delegate?.transferDidReceiveData(bytes, totalReceived: received) {
            abortError = .aborted(by: reason, url: request.url)
            return 0
        }
        return bytes.count
    }

    /// Hands the final head to the delegate once; returns the delegate's verdict.
    private func deliverResponse() -> TransportError? {
        responseDelivered = true
        var response = head.response(url: effectiveURL)
        if response == nil {
            // file: and other header-less schemes: synthesize a 200 so callers see one shape.
            var code = 0
            _ = wi_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &code)
            response = TransferResponse(
                url: effectiveURL, statusCode: code == 0 ? 200 : code, headers: HTTPHeaders())
        }
        guard let response else { return nil }
        return delegate?.transferDidReceiveResponse(response).map { .aborted(by: $0, url: request.url) }
    }

    /// The URL the response came from: the last hop's.
    var effectiveURL: URL { currentURL }

    /// Called by the transport once the handle left the multi handle: with curl's result, or with
    /// `cancelled` when the transfer was removed early. Reports exactly once, then drops the delegate.
    func finish(code: CURLcode?, cancelled: Bool = false) {
        guard !isFinished else { return }
        isFinished = true
        let result: Result<ImageDownloadMetrics, TransportError>
        if cancelled {
            result = .failure(TransportError(.cancelled, "the download was cancelled", url: request.url))
        } else if let abortError {
            // Our own abort (validation, size limit) wins over curl's CURLE_WRITE_ERROR.
            result = .failure(abortError)
        } else if let code, code != CURLE_OK {
            let text = String(cString: errorBuffer)
            var error = CurlRuntime.error(for: code, buffer: text, url: request.url)
            if code == CURLE_COULDNT_CONNECT { explainRefusedDestinations(in: &error) }
            error.response = head.response(url: effectiveURL)
            result = .failure(error)
        } else if !responseDelivered, let error = deliverResponse() {
            result = .failure(error)
        } else {
            result = .success(metrics())
        }
        let delegate = self.delegate
        self.delegate = nil
        delegate?.transferDidComplete(result)
    }

    /// Ends the transfer with a failure of the transport itself (not of this transfer's curl result),
    /// after the transport removed it from its multi handle.
    func fail(_ error: TransportError) {
        var error = error
        if error.url == nil { error.url = request.url }
        if abortError == nil { abortError = error }
        finish(code: nil)
    }

    /// A `CURLINFO_*_TIME_T` value of the current hop in seconds (0 when curl has none).
    func seconds(_ info: CURLINFO) -> TimeInterval {
        var value: curl_off_t = 0
        return wi_easy_getinfo_off(easy, info, &value) == CURLE_OK ? TimeInterval(value) / 1_000_000 : 0
    }

    /// A long `CURLINFO_*` value of the current hop (0 when curl has none).
    func long(_ info: CURLINFO) -> Int {
        var value = 0
        return wi_easy_getinfo_long(easy, info, &value) == CURLE_OK ? value : 0
    }

    private func metrics() -> ImageDownloadMetrics {
        var m = ImageDownloadMetrics()
        m.nameLookupTime = seconds(CURLINFO_NAMELOOKUP_TIME_T)
        m.connectTime = seconds(CURLINFO_CONNECT_TIME_T)
        m.tlsHandshakeTime = seconds(CURLINFO_APPCONNECT_TIME_T)
        m.firstByteTime = seconds(CURLINFO_STARTTRANSFER_TIME_T)
        // Timings before the first byte are the final hop's; the total and the connections add every hop.
        m.totalTime = earlierHops.totalTime + seconds(CURLINFO_TOTAL_TIME_T)
        m.redirectCount = redirectsFollowed
        m.newConnections = earlierHops.newConnections + long(CURLINFO_NUM_CONNECTS)
        m.bytesReceived = received
        switch long(CURLINFO_HTTP_VERSION) {
        case CURL_HTTP_VERSION_1_0: m.httpVersion = "1.0"
        case CURL_HTTP_VERSION_1_1: m.httpVersion = "1.1"
        case CURL_HTTP_VERSION_2_0: m.httpVersion = "2"
        case CURL_HTTP_VERSION_3: m.httpVersion = "3"
        default: m.httpVersion = head.httpVersion
        }
        return m
    }
}

// C entry points. `userdata` is the unretained CurlTransfer set in `configure()`.
private let curlWriteCallback: wi_data_callback = { pointer, size, count, userdata in
    guard let userdata else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.didReceiveBody(UnsafeRawBufferPointer(start: pointer, count: size * count))
}

private let curlHeaderCallback: wi_data_callback = { pointer, size, count, userdata in
    guard let userdata else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.didReceiveHeaderLine(UnsafeRawBufferPointer(start: pointer, count: size * count))
}
