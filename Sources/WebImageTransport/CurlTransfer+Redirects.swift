import CCurl
import Foundation

/// Redirects, followed by the transfer itself rather than by curl (`CURLOPT_FOLLOWLOCATION` is off).
///
/// curl strips `Authorization` and `Cookie` fields and its own credentials when it follows a redirect to
/// another host, but sends every other custom field (an `X-Api-Key`, a signed token) to wherever the
/// `Location` points. So each hop is a fresh request that this file configures: the original host gets
/// every field and the credentials; any other origin (scheme, host or port), an https→http downgrade
/// included, gets neither the credentials nor the fields `TransferRequest.secretHeaderFields` matches.
///
/// On the transport thread: when a hop's transfer is DONE with a 301, 302, 303, 307 or 308 that names a
/// `Location`, the loop calls `prepareRedirect(after:)`; when it returns true the handle, already
/// removed from the multi handle, is configured for the next URL and added again.
extension CurlTransfer {
    /// Whether the current hop's response is a redirect to follow, decided once per hop (when its head is
    /// complete: at its first body byte, or when the hop ends).
    enum HopRedirect {
        case undecided
        case none
        case follow
        /// A redirect to follow whose body ran past `redirectBodyLimit`: the hop was ended early on purpose.
        case followCutShort
    }

    /// The most bytes of a redirect's body read (and dropped) before the hop is ended: enough for the short
    /// bodies redirects carry, so their connection stays reusable, and far from an endless one (a 302 whose
    /// body never ends would otherwise be read until the total timeout).
    static let redirectBodyLimit: Int64 = 64 * 1024

    /// What earlier hops measured, added into the final metrics.
    struct EarlierHops {
        var totalTime: TimeInterval = 0
        var newConnections = 0
    }

    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Whether the current hop's response is a redirect this transfer follows: a redirect status with a
    /// `Location`, and redirects allowed at all. Its body is then skipped.
    var isRedirect: Bool {
        if case .undecided = hopRedirect {
            let follows =
                request.maximumRedirects > 0 && Self.redirectStatuses.contains(head.statusCode)
                && head.headers["Location"]?.isEmpty == false
            hopRedirect = follows ? .follow : .none
        }
        switch hopRedirect {
        case .follow, .followCutShort: return true
        case .undecided, .none: return false
        }
    }

    /// Drops `count` bytes of a redirect's body; past `redirectBodyLimit`, returns 0 so curl ends the hop
    /// (and closes its connection) with CURLE_WRITE_ERROR, which `prepareRedirect` then accepts.
    func skipRedirectBody(_ count: Int) -> Int {
        received += Int64(count)
        guard received > Self.redirectBodyLimit else { return count }
        hopRedirect = .followCutShort
        return 0
    }

    /// Where the finished hop's redirect points: curl's resolution of the Location against the hop's URL
    /// (`CURLINFO_REDIRECT_URL`, set once the hop is done), else Foundation's.
    private func resolvedRedirectURL() -> URL? {
        var pointer: UnsafeMutablePointer<CChar>? = nil
        if wi_easy_getinfo_string(easy, CURLINFO_REDIRECT_URL, &pointer) == CURLE_OK, let pointer,
            let url = URL(string: String(cString: pointer))
        {
            return url
        }
        return head.headers["Location"].flatMap { URL(string: $0, relativeTo: currentURL)?.absoluteURL }
    }

    /// After a hop ended with `code`: when it was a redirect to follow, configures the handle for the next
    /// hop and returns true (the caller adds it to the multi handle again). Returns false when the
    /// transfer is over; a refused redirect (too many, or to a scheme other than http/https) is then
    /// reported through `abortError`.
    func prepareRedirect(after code: CURLcode) -> Bool {
        let cutShort = hopRedirect == .followCutShort && code == CURLE_WRITE_ERROR
        guard code == CURLE_OK || cutShort, abortError == nil, isRedirect else { return false }
        guard let target = resolvedRedirectURL() else {
            abortError = TransportError(
                .invalidURL, "the redirect's Location is not a usable URL", url: request.url,
                response: head.response(url: currentURL))
            return false
        }
        guard redirectsFollowed < request.maximumRedirects else {
            abortError = TransportError(
                .tooManyRedirects, "more than \(request.maximumRedirects) redirects", url: request.url,
                response: head.response(url: currentURL))
            return false
        }
        let scheme = target.scheme?.lowercased() ?? ""
        // Redirects never reach file: or any other scheme, even when file: is allowed for the first URL.
        guard scheme == "http" || scheme == "https", request.allowedProtocols.contains(scheme),
            target.host?.isEmpty == false
        else {
            abortError = TransportError(
                .unsupportedProtocol, "a redirect to the \"\(scheme)\" scheme is not followed", url: request.url,
                response: head.response(url: currentURL))
            return false
        }
        guard remainingTotalTimeout() != nil else {
            abortError = TransportError(
                .timedOut, "the total timeout of \(request.totalTimeout) s ran out during the redirects",
                url: request.url, response: head.response(url: currentURL))
            return false
        }
        earlierHops.totalTime += seconds(CURLINFO_TOTAL_TIME_T)
        earlierHops.newConnections += long(CURLINFO_NUM_CONNECTS)
        redirectsFollowed += 1
        currentURL = target.removingUserInfo  // a Location's `user:password@` is never sent
        head = ResponseHeadParser()
        hopRedirect = .undecided
        responseDelivered = false
        received = 0
        do {
            try applyHop()
        } catch {
            abortError = error
            return false
        }
        return true
    }

    /// What is left of the total timeout for the next hop, as `CURLOPT_TIMEOUT_MS` takes it (0: no limit);
    /// nil when nothing is left. Before the first hop starts, the whole of it.
    func remainingTotalTimeout() -> Int? {
        guard request.totalTimeout > 0 else { return 0 }
        guard let deadline else { return max(1, Self.curlTime(request.totalTimeout, unitsPerSecond: 1000)) }
        let left = ContinuousClock.now.duration(to: deadline).components
        let milliseconds = left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000
        return milliseconds > 0 ? Int(milliseconds) : nil
    }

    /// Sets what differs from hop to hop: the URL, the time left, PIPEWAIT, the header fields and the
    /// credentials.
    /// The hop's `CURLOPT_RESOLVE` entry from ``TransferRequest/hostAddresses`` (`+host:port:addresses`,
    /// expiring as curl's own cache entries do); an exclusive provider without addresses for the host
    /// fails the hop, naming the host. An address literal needs none.
    private func applyHostAddresses(for url: URL) throws(TransportError) {
        guard let provider = request.hostAddresses, let rawHost = url.host?.lowercased(), !rawHost.isEmpty else {
            return
        }
        let host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost
        if IPAddress(host) != nil { return }
        guard let addresses = provider.addresses(of: host), !addresses.isEmpty else {
            guard provider.isExclusive else { return }
            var error = TransportError(
                .cannotResolveHost,
                "the host '\(host.prefix(253))' was not resolved by the caller's resolver before its request",
                url: request.url)
            error.unresolvedHost = host
            throw error
        }
        // curl takes IPv6 addresses in brackets here, and a list separated by commas.
        let list = addresses.filter { IPAddress($0) != nil }.map { $0.contains(":") ? "[\($0)]" : $0 }
        guard !list.isEmpty else { return }
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        guard let entry = curl_slist_append(nil, "+\(host):\(port):\(list.joined(separator: ","))") else {
            throw TransportError(.setupFailed, "curl_slist_append failed", url: request.url)
        }
        let code = wi_easy_setopt_slist(easy, CURLOPT_RESOLVE, entry)
        let old = resolveList
        resolveList = entry
        curl_slist_free_all(old)
        try CurlRuntime.check(code, "RESOLVE")
    }

    func applyHop() throws(TransportError) {
        let url = currentURL
        // The first URL and each redirect's, before anything is sent to it.
        if let allowed = request.allowedURLs, !allowed.allows(url) {
            throw TransportError(
                .destinationNotAllowed,
                redirectsFollowed == 0
                    ? "the URL is not one of the allowed URL prefixes"
                    : "a redirect to a URL outside the allowed URL prefixes is not followed",
                url: request.url)
        }
        destinations = DestinationAttempts()
        try applyHostAddresses(for: url)
        let isOriginalOrigin = Self.sameOrigin(url, request.url)
        let isHTTPS = url.scheme?.lowercased() == "https"
        // Without userinfo: curl would send `user:password@` at once, without waiting for a challenge.
        try setString(CURLOPT_URL, url.removingUserInfo.absoluteString, "URL")
        // The total bound, for servers that dodge the idle one. curl starts CURLOPT_TIMEOUT_MS afresh for
        // every hop added again, so each hop gets only what the earlier ones left of it (prepareRedirect
        // stops when nothing is left).
        try setLong(CURLOPT_TIMEOUT_MS, remainingTotalTimeout() ?? 1, "TIMEOUT_MS")
        // PIPEWAIT lets HTTP/2 over TLS multiplex instead of opening parallel connections. Only for https:
        // on cleartext curl would hold every new transfer until the first response shows whether the
        // connection can multiplex (it cannot: h2c stays off, curl #10634), serializing a slow first batch.
        try setLong(CURLOPT_PIPEWAIT, isHTTPS ? 1 : 0, "PIPEWAIT")

        var list: UnsafeMutablePointer<curl_slist>? = nil
        for field in request.headers {
            // The downloader refuses such fields before queueing; this also covers fields added later
            // (cache validators copied from a server's ETag) and direct users of the transport.
            guard HTTPHeaders.isValidFieldName(field.name), HTTPHeaders.isValidFieldValue(field.value) else {
                curl_slist_free_all(list)
                throw TransportError(
                    .setupFailed, "refusing to send a header field with CR, LF, NUL or an invalid name",
                    url: request.url)
            }
            let name = field.name.lowercased()
            if !isOriginalOrigin && request.secretHeaderFields.contains(name) { continue }
            // Validators belong to the stored response of the first URL, not to whatever a redirect names.
            if redirectsFollowed > 0 && (name == "if-none-match" || name == "if-modified-since") { continue }
            // "Name;" sends an empty header, "Name:" removes one curl would add itself.
            let line = field.value.isEmpty ? "\(field.name):" : "\(field.name): \(field.value)"
            guard let appended = curl_slist_append(list, line) else {
                curl_slist_free_all(list)
                throw TransportError(.setupFailed, "curl_slist_append failed", url: request.url)
            }
            list = appended
        }
        let code = wi_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list)
        // The old list may go now: the handle is in no multi handle while a hop is configured.
        let old = headerList
        headerList = list
        curl_slist_free_all(old)
        try CurlRuntime.check(code, "HTTPHEADER")

        // Credentials go to the original origin only, and over plain http only when asked for.
        if let user = request.username, isOriginalOrigin, isHTTPS || request.allowsCredentialsOverPlainHTTP {
            try setString(CURLOPT_USERNAME, user, "USERNAME")
            try setString(CURLOPT_PASSWORD, request.password ?? "", "PASSWORD")
            // CURLAUTH_ANY sends nothing until the server's 401 names a scheme.
            try setLong(CURLOPT_HTTPAUTH, Int(bitPattern: UInt(wi_curlauth_any())), "HTTPAUTH")
            try setLong(CURLOPT_UNRESTRICTED_AUTH, 0, "UNRESTRICTED_AUTH")
        } else {
            try CurlRuntime.check(wi_easy_setopt_string(easy, CURLOPT_USERNAME, nil), "USERNAME")
            try CurlRuntime.check(wi_easy_setopt_string(easy, CURLOPT_PASSWORD, nil), "PASSWORD")
        }
    }

    /// RFC 6454 origins: scheme, host and port (the scheme's default when absent) all equal.
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func port(_ url: URL) -> Int? { url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80) }
        return a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && port(a) == port(b)
    }
}
