import Foundation

/// The RFC 9111 rules of a private cache as pure functions: what may be stored, how fresh a stored
/// response is, which validators to send, and how a 304 updates a stored head. No I/O, no clock —
/// every date is a parameter — so each rule is tested on its own.
enum HTTPCachePolicy {
    /// Heuristic freshness is this fraction of the time since `Last-Modified` (RFC 9111 §4.2.2).
    static let heuristicFraction = 0.1
    /// Heuristic freshness never exceeds one day.
    static let maximumHeuristicFreshness: TimeInterval = 24 * 60 * 60

    /// Status codes a cache may store and give heuristic freshness without explicit freshness
    /// (RFC 9110 §15.1).
    static let heuristicallyCacheableStatusCodes: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Status codes this cache stores: the heuristically cacheable ones, plus redirects that are
    /// stored only with explicit freshness.
    static let storableStatusCodes: Set<Int> = heuristicallyCacheableStatusCodes.union([302, 303, 307])

    /// Header fields never stored (RFC 9111 §3.1: connection-specific and proxy fields) plus
    /// `Set-Cookie`, which a shared image cache on disk should neither keep nor replay.
    static let unstoredFieldNames: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authentication-info",
        "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "set-cookie", "set-cookie2",
    ]

    /// The key a response to `url` is stored under: the absolute URL without its fragment.
    static func cacheKey(for url: URL) -> String {
        let text = url.absoluteString
        guard let hash = text.firstIndex(of: "#") else { return text }
        return String(text[..<hash])
    }

    // MARK: - Storing

    /// Whether a response may be stored, and with which selecting request headers.
    enum StoreDecision: Equatable {
        case store(varyingRequestHeaders: [String: String])
        /// `supersedesStored`: the response is a new representation that may not be stored (e.g. a
        /// 200 with `no-store`), so a response stored earlier for the URL is outdated and goes.
        case reject(reason: String, supersedesStored: Bool)
    }

    /// Decides whether `response` (with a body of `bodyLength` bytes) to `request` may be stored
    /// (RFC 9111 §3).
    static func storeDecision(
        for response: TransferResponse, bodyLength: Int, request: ImageDownloadRequest
    ) -> StoreDecision {
        let requestControl = CacheControl(request.headers)
        let responseControl = CacheControl(response.headers)
        let status = response.statusCode
        let isNewRepresentation = (200..<300).contains(status) && status != 206
        if requestControl.contains("no-store") {
            return .reject(reason: "request says no-store", supersedesStored: false)
        }
        if responseControl.contains("no-store") {
            return .reject(reason: "response says no-store", supersedesStored: isNewRepresentation)
        }
        // The cache directory is shared by every downloader and process of the user: a shared cache in
        // RFC 9111 §3.5's terms. A `private` response, or one to a request that carried credentials or
        // cookies, belongs to one caller and is never stored.
        if responseControl.contains("private") {
            return .reject(reason: "response is private", supersedesStored: isNewRepresentation)
        }
        if request.headers.contains("Authorization") || request.headers.contains("Proxy-Authorization")
            || request.headers.contains("Cookie")
        {
            return .reject(reason: "request carried credentials or cookies", supersedesStored: false)
        }
        // Only statuses whose meaning for a cache is clear are stored: 206 would need range
        // bookkeeping, 304s go through `refresh`, and server errors are not worth keeping.
        guard storableStatusCodes.contains(status) else {
            return .reject(reason: "status \(status) is not stored", supersedesStored: false)
        }
        let explicitlyCacheable =
            responseControl.contains("max-age") || response.headers.contains("Expires")
            || responseControl.contains("s-maxage") || responseControl.contains("public")
        guard explicitlyCacheable || heuristicallyCacheableStatusCodes.contains(status) else {
            return .reject(reason: "status \(status) without explicit freshness", supersedesStored: false)
        }
        guard let varying = varyingRequestHeaders(for: response.headers, request: request) else {
            return .reject(reason: "Vary: * never matches", supersedesStored: isNewRepresentation)
        }
        // The selecting values are written to the index: never a secret's.
        if varying.keys.contains(where: { SecretHeaderFields.default.contains($0) }) {
            return .reject(reason: "Vary names a secret header field", supersedesStored: isNewRepresentation)
        }
        // An incomplete body must not be served as complete (RFC 9111 §3.3). When a content coding
        // was removed on the way in, Content-Length counts the encoded bytes and cannot be compared.
        let declared = response.expectedContentLength
        if declared >= 0, !response.headers.contains("Content-Encoding"), declared != Int64(bodyLength) {
            return .reject(
                reason: "body has \(bodyLength) bytes, Content-Length says \(declared)", supersedesStored: false)
        }
        return .store(varyingRequestHeaders: varying)
    }

    /// The fields to store for a response that arrived at `receivedAt`: without the fields a cache
    /// must not store, and with a `Date` if it had none (RFC 9110 §6.6.1: a recipient with a clock
    /// records the time it received the message).
    static func headersToStore(_ headers: HTTPHeaders, receivedAt: Date) -> HTTPHeaders {
        var stored = storableHeaders(headers)
        if !stored.contains("Date") { stored["Date"] = HTTPDate.format(receivedAt) }
        return stored
    }

    /// `headers` without the fields a cache must not store.
    static func storableHeaders(_ headers: HTTPHeaders) -> HTTPHeaders {
        let connectionOptions = Set(
            headers.values(for: "Connection").flatMap(listElements).map { $0.lowercased() })
        return HTTPHeaders(
            headers.fields.filter { field in
                let name = field.name.lowercased()
                return !unstoredFieldNames.contains(name) && !connectionOptions.contains(name)
            })
    }

    // MARK: - Freshness (RFC 9111 §4.2)

    /// The response's freshness lifetime in seconds (§4.2.1): `s-maxage` (this is a shared cache), else
    /// `max-age`, else `Expires − Date`, else the `Last-Modified` heuristic, else 0.
    static func freshnessLifetime(of cached: CachedHTTPResponse) -> TimeInterval {
        let headers = cached.response.headers
        let control = CacheControl(headers)
        if control.contains("s-maxage") {
            return control.seconds("s-maxage") ?? 0
        }
        if control.contains("max-age") {
            // An invalid max-age makes the response stale rather than heuristically fresh.
            return control.seconds("max-age") ?? 0
        }
        if let expires = headers["Expires"] {
            // An invalid Expires ("0", "-1") means "already expired" (§5.3).
            guard let expiresDate = HTTPDate.parse(expires) else { return 0 }
            return max(0, expiresDate.timeIntervalSince(dateValue(of: cached)))
        }
        let status = cached.response.statusCode
        guard heuristicallyCacheableStatusCodes.contains(status) || control.contains("public"),
            let lastModifiedText = headers["Last-Modified"], let lastModified = HTTPDate.parse(lastModifiedText)
        else { return 0 }
        let sinceModified = dateValue(of: cached).timeIntervalSince(lastModified)
        guard sinceModified > 0 else { return 0 }
        return min(sinceModified * heuristicFraction, maximumHeuristicFreshness)
    }

    /// The response's current age at `now` in seconds (§4.2.3):
    ///
    ///     apparent_age          = max(0, response_time − date_value)
    ///     corrected_age_value   = age_value + (response_time − request_time)
    ///     corrected_initial_age = max(apparent_age, corrected_age_value)
    ///     current_age           = corrected_initial_age + (now − response_time)
    static func currentAge(of cached: CachedHTTPResponse, now: Date) -> TimeInterval {
        let ageValue = cached.response.headers["Age"].flatMap(deltaSeconds) ?? 0
        let apparentAge = max(0, cached.responseDate.timeIntervalSince(dateValue(of: cached)))
        let responseDelay = max(0, cached.responseDate.timeIntervalSince(cached.requestDate))
        let correctedInitialAge = max(apparentAge, ageValue + responseDelay)
        // A clock that went backwards must not make the response younger than it arrived.
        let residentTime = max(0, now.timeIntervalSince(cached.responseDate))
        return correctedInitialAge + residentTime
    }

    /// `Date` of the response, or the time it arrived when it has none (RFC 9110 §6.6.1).
    static func dateValue(of cached: CachedHTTPResponse) -> Date {
        cached.response.headers["Date"].flatMap { HTTPDate.parse($0) } ?? cached.responseDate
    }

    // MARK: - Lookup

    /// Whether `cached` answers `request` at `now` fresh, stale with validators, or not at all.
    static func evaluate(_ cached: CachedHTTPResponse, for request: ImageDownloadRequest, now: Date) -> HTTPCacheLookup
    {
        guard varyMatches(cached, request: request) else { return .miss }
        let requestControl = CacheControl(request.headers)
        let responseControl = CacheControl(cached.response.headers)
        // `Pragma: no-cache` counts only when the request has no Cache-Control (RFC 9111 §5.4).
        let requestPragmaNoCache =
            !request.headers.contains("Cache-Control")
            && request.headers.values(for: "Pragma").flatMap(listElements).contains { $0.lowercased() == "no-cache" }
        let mustRevalidateNow =
            responseControl.contains("no-cache") || requestControl.contains("no-cache") || requestPragmaNoCache
        if !mustRevalidateNow {
            let lifetime = freshnessLifetime(of: cached)
            let age = currentAge(of: cached, now: now)
            let withinRequestMaxAge = requestControl.seconds("max-age").map { age <= $0 } ?? true
            var usable = lifetime > age && withinRequestMaxAge
            if usable, let minFresh = requestControl.seconds("min-fresh") {
                usable = lifetime - age >= minFresh
            }
            // The client may accept a stale response, unless the server forbade serving it stale.
            if !usable, withinRequestMaxAge, requestControl.contains("max-stale"),
                !responseControl.contains("must-revalidate")
            {
                usable = requestControl.seconds("max-stale").map { age - lifetime <= $0 } ?? true
            }
            if usable { return .fresh(cached) }
        }
        let conditional = conditionalHeaders(for: cached.response.headers)
        return conditional.isEmpty ? .miss : .stale(cached, conditionalHeaders: conditional)
    }

    /// `If-None-Match` from `ETag` and `If-Modified-Since` from `Last-Modified` (RFC 9110 §13.1).
    static func conditionalHeaders(for headers: HTTPHeaders) -> HTTPHeaders {
        var conditional = HTTPHeaders()
        if let etag = headers["ETag"]?.trimmingCharacters(in: .whitespaces), !etag.isEmpty {
            conditional["If-None-Match"] = etag
        }
        if let lastModified = headers["Last-Modified"], HTTPDate.parse(lastModified) != nil {
            conditional["If-Modified-Since"] = lastModified.trimmingCharacters(in: .whitespaces)
        }
        return conditional
    }

    // MARK: - Vary (RFC 9111 §4.1)

    /// The request's values for the fields `responseHeaders` names in `Vary`, by lower-cased name;
    /// `nil` for `Vary: *`.
    static func varyingRequestHeaders(for responseHeaders: HTTPHeaders, request: ImageDownloadRequest) -> [String:
        String]?
    {
        var result: [String: String] = [:]
        for name in responseHeaders.values(for: "Vary").flatMap(listElements) {
            if name == "*" { return nil }
            let values = request.headers.values(for: name)
            guard !values.isEmpty else { continue }
            // Normalized so that differences in list whitespace do not count as a different value.
            result[name.lowercased()] = values.flatMap(listElements).joined(separator: ",")
        }
        return result
    }

    /// Whether `request` selects the same variant `cached` was stored for.
    static func varyMatches(_ cached: CachedHTTPResponse, request: ImageDownloadRequest) -> Bool {
        guard let current = varyingRequestHeaders(for: cached.response.headers, request: request) else { return false }
        return current == cached.varyingRequestHeaders
    }

    // MARK: - 304 (RFC 9111 §4.3.4)

    /// Whether a 304's validators identify the stored response: a differing `ETag` (weak
    /// comparison) or `Last-Modified` means the server validated some other representation.
    static func notModified(_ notModified: HTTPHeaders, matches stored: HTTPHeaders) -> Bool {
        if let newTag = notModified["ETag"], let storedTag = stored["ETag"] {
            return opaqueTag(newTag) == opaqueTag(storedTag)
        }
        if let newDate = notModified["Last-Modified"].flatMap({ HTTPDate.parse($0) }),
            let storedDate = stored["Last-Modified"].flatMap({ HTTPDate.parse($0) })
        {
            return newDate == storedDate
        }
        return true
    }

    /// The stored head updated with a 304's fields: each field the 304 carries replaces the stored
    /// fields of that name, except fields a cache does not store and `Content-Length` (the 304
    /// describes no body). A 304 without `Date` dates the stored head at `receivedAt`, as the age of
    /// the refreshed response starts there.
    static func mergedHeaders(stored: HTTPHeaders, notModified: HTTPHeaders, receivedAt: Date) -> HTTPHeaders {
        let updates = headersToStore(notModified, receivedAt: receivedAt).fields.filter {
            !$0.name.caseInsensitiveEquals("Content-Length")
        }
        let updatedNames = Set(updates.map { $0.name.lowercased() })
        var merged = stored.fields.filter { !updatedNames.contains($0.name.lowercased()) }
        merged.append(contentsOf: updates)
        return HTTPHeaders(merged)
    }

    // MARK: - Field syntax helpers

    /// The elements of a comma-separated list field, trimmed, empty elements dropped.
    static func listElements(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// A non-negative integer number of seconds (RFC 9111 §1.2.2); values too large saturate.
    static func deltaSeconds(_ text: some StringProtocol) -> TimeInterval? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        // RFC 9111 §1.2.2: a value too large to represent is taken as 2^31 seconds.
        return min(TimeInterval(trimmed) ?? .infinity, 2_147_483_648)
    }

    private static func opaqueTag(_ tag: String) -> String {
        let trimmed = tag.trimmingCharacters(in: .whitespaces)
        return trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed
    }
}

/// The directives of every `Cache-Control` field of a message, by lower-cased name.
struct CacheControl {
    private var directives: [String: String] = [:]

    /// Parses all `Cache-Control` fields of `headers`; quoted values may contain commas.
    init(_ headers: HTTPHeaders) {
        for value in headers.values(for: "Cache-Control") {
            for element in Self.splitRespectingQuotes(value) {
                let parts = element.split(separator: "=", maxSplits: 1)
                guard let rawName = parts.first else { continue }
                let name = rawName.trimmingCharacters(in: .whitespaces).lowercased()
                guard !name.isEmpty else { continue }
                var argument = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
                if argument.count >= 2, argument.hasPrefix("\""), argument.hasSuffix("\"") {
                    argument = String(argument.dropFirst().dropLast())
                }
                // The first occurrence wins when a directive is repeated (RFC 9111 §4.2.1).
                if directives[name] == nil { directives[name] = argument }
            }
        }
    }

    /// Whether the directive is present, with or without an argument.
    func contains(_ name: String) -> Bool { directives[name] != nil }

    /// The directive's argument as delta-seconds; `nil` when absent or not a valid number.
    func seconds(_ name: String) -> TimeInterval? {
        directives[name].flatMap(HTTPCachePolicy.deltaSeconds)
    }

    private static func splitRespectingQuotes(_ value: String) -> [String] {
        var elements: [String] = []
        var current = ""
        var inQuotes = false
        var escaped = false
        for character in value {
            if escaped {
                escaped = false
            } else if inQuotes, character == "\\" {
                escaped = true
            } else if character == "\"" {
                inQuotes.toggle()
            } else if character == ",", !inQuotes {
                elements.append(current)
                current = ""
                continue
            }
            current.append(character)
        }
        elements.append(current)
        return elements
    }
}
