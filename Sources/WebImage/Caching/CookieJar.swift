import CCurl
import Foundation
import Locking

/// One HTTP cookie as the jar stores it.
public struct Cookie: Sendable, Hashable {
    /// The cookie's name.
    public var name: String
    /// The cookie's value.
    public var value: String
    /// The host (or, with `includesSubdomains`, the domain) it is sent to, without a leading dot.
    public var domain: String
    /// Whether hosts under `domain` receive it too.
    public var includesSubdomains: Bool
    /// The path prefix it is sent for.
    public var path: String
    /// Sent over https only.
    public var isSecure: Bool
    /// Not visible to scripts (kept for round-tripping the Netscape file).
    public var isHTTPOnly: Bool
    /// When it expires; nil for a session cookie.
    public var expires: Date?

    /// Creates a cookie. A session cookie (no `expires`) for exactly `domain` and `path` by default.
    public init(
        name: String, value: String, domain: String, path: String = "/", includesSubdomains: Bool = false,
        isSecure: Bool = false, isHTTPOnly: Bool = false, expires: Date? = nil
    ) {
        self.name = name
        self.value = value
        self.domain = domain
        self.path = path
        self.includesSubdomains = includesSubdomains
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        self.expires = expires
    }

    /// Whether a request to `url` carries this cookie (domain, path and scheme rules as curl applies them).
    public func matches(_ url: URL, now: Date = Date()) -> Bool {
        guard let host = url.host?.lowercased() else { return false }
        if let expires, expires <= now { return false }
        if isSecure && url.scheme?.lowercased() != "https" { return false }
        let domain = self.domain.lowercased()
        let domainMatches = host == domain || (includesSubdomains && host.hasSuffix("." + domain))
        let requestPath = url.path.isEmpty ? "/" : url.path
        let pathMatches =
            requestPath == path || (requestPath.hasPrefix(path) && (path.hasSuffix("/") || requestPath.dropFirst(path.count).first == "/"))
        return domainMatches && pathMatches
    }
}

/// The cookie store used by downloads with `.handleCookies`: curl's cookie engine behind a share handle,
/// optionally persisted to a Netscape-format cookie file (the format curl and browsers' exporters use).
///
/// Every downloader uses `CookieJar.shared` unless its config names another jar. The file, when given,
/// is loaded at init and written after every change made through this API, after each download that
/// handled cookies, and when the jar is released.
///
/// ```swift
/// let jar = CookieJar(fileURL: URL(fileURLWithPath: "cookies.txt"))
/// jar.set(Cookie(name: "session", value: "abc", domain: "example.com"))
/// var config = ImageDownloaderConfig()
/// config.cookieStorage = jar
/// ```
public final class CookieJar: Sendable {
    /// The process-wide in-memory jar.
    public static let shared = CookieJar()

    /// The Netscape cookie file this jar persists to, if any.
    public let fileURL: URL?
    /// nil only when libcurl could not initialise; every transfer then fails with that error anyway.
    let share: CurlShare?
    private let control: Lock<CookieControlHandle>

    /// Creates a jar, loading `fileURL` when it exists.
    public init(fileURL: URL? = nil) {
        self.fileURL = fileURL
        let share = try? CurlShare(sharesCookies: true)
        self.share = share
        let handle = CookieControlHandle(share: share)
        control = Lock(handle)
        if let fileURL, FileManager.default.fileExists(atPath: fileURL.path) {
            handle.load(fileURL.path)
        }
    }

    deinit {
        save()
    }

    /// Every cookie in the jar, expired ones excluded.
    public var allCookies: [Cookie] {
        let now = Date()
        return control.withLock { $0.lines() }.compactMap(Self.parse).filter { ($0.expires ?? .distantFuture) > now }
    }

    /// The cookies a request to `url` would carry.
    public func cookies(for url: URL) -> [Cookie] {
        let now = Date()
        return allCookies.filter { $0.matches(url, now: now) }
    }

    /// Adds or replaces a cookie (same name, domain and path).
    public func set(_ cookie: Cookie) {
        control.withLock { $0.apply(Self.netscapeLine(cookie)) }
        save()
    }

    /// Removes the cookie with this name, domain and path.
    public func remove(_ cookie: Cookie) {
        var expired = cookie
        expired.expires = Date(timeIntervalSince1970: 1)
        control.withLock { $0.apply(Self.netscapeLine(expired)) }
        save()
    }

    /// Removes every cookie.
    public func removeAll() {
        control.withLock { $0.apply("ALL") }
        save()
    }

    /// Writes the jar to `fileURL` (no-op without one). Called automatically; public for explicit checkpoints.
    public func save() {
        guard let fileURL else { return }
        control.withLock { $0.write(to: fileURL.path) }
    }

    // MARK: Netscape format

    /// "domain \t includeSubdomains \t path \t secure \t expiry \t name \t value", with "#HttpOnly_" before
    /// the domain for HTTP-only cookies and a leading dot on the domain when subdomains are included.
    static func netscapeLine(_ cookie: Cookie) -> String {
        let domain = (cookie.isHTTPOnly ? "#HttpOnly_" : "") + (cookie.includesSubdomains ? "." : "") + cookie.domain
        let expiry = cookie.expires.map { String(Int64($0.timeIntervalSince1970)) } ?? "0"
        return [
            domain, cookie.includesSubdomains ? "TRUE" : "FALSE", cookie.path, cookie.isSecure ? "TRUE" : "FALSE", expiry,
            cookie.name, cookie.value,
        ].joined(separator: "\t")
    }

    static func parse(_ line: String) -> Cookie? {
        var text = Substring(line)
        var httpOnly = false
        if text.hasPrefix("#HttpOnly_") {
            httpOnly = true
            text = text.dropFirst("#HttpOnly_".count)
        } else if text.hasPrefix("#") || text.isEmpty {
            return nil
        }
        let fields = text.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard fields.count >= 7, let expiry = Int64(fields[4]) else { return nil }
        var domain = fields[0]
        let subdomains = fields[1] == "TRUE"
        if domain.hasPrefix(".") { domain.removeFirst() }
        return Cookie(
            name: fields[5], value: fields[6...].joined(separator: "\t"), domain: domain, path: fields[2],
            includesSubdomains: subdomains, isSecure: fields[3] == "TRUE", isHTTPOnly: httpOnly,
            expires: expiry == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(expiry)))
    }
}

/// An easy handle attached to the jar's share, used only to read and change the shared cookies
/// (`CURLOPT_COOKIELIST`, `CURLINFO_COOKIELIST`). Never performs a transfer. Guarded by the jar's mutex.
final class CookieControlHandle: @unchecked Sendable {
    // @unchecked Sendable: only used inside `CookieJar.control`'s lock; curl locks the shared cookie data.
    private let easy: UnsafeMutableRawPointer?
    private let share: CurlShare?

    init(share: CurlShare?) {
        self.share = share
        easy = share == nil ? nil : curl_easy_init()
        if let easy, let share {
            _ = wi_easy_setopt_share(easy, share.handle)
            _ = wi_easy_setopt_string(easy, CURLOPT_COOKIEFILE, "")  // turns the cookie engine on
        }
    }

    deinit {
        if let easy { curl_easy_cleanup(easy) }
    }

    /// "ALL", "SESS", "FLUSH", "RELOAD", a Netscape line or a Set-Cookie header line.
    func apply(_ command: String) {
        guard let easy else { return }
        _ = command.withCString { wi_easy_setopt_string(easy, CURLOPT_COOKIELIST, $0) }
    }

    func load(_ path: String) {
        guard let easy else { return }
        _ = path.withCString { wi_easy_setopt_string(easy, CURLOPT_COOKIEFILE, $0) }
        apply("RELOAD")
    }

    func lines() -> [String] {
        guard let easy else { return [] }
        var list: UnsafeMutablePointer<curl_slist>?
        guard wi_easy_getinfo_slist(easy, CURLINFO_COOKIELIST, &list) == CURLE_OK else { return [] }
        defer { curl_slist_free_all(list) }
        var result: [String] = []
        var node = list
        while let current = node {
            if let data = current.pointee.data { result.append(String(cString: data)) }
            node = current.pointee.next
        }
        return result
    }

    /// Writes every cookie to `path` atomically (temporary file, then rename), so a crash mid-write
    /// never leaves a torn cookie file.
    func write(to path: String) {
        let body = "# Netscape HTTP Cookie File\n# Written by WebImage.\n\n" + lines().map { $0 + "\n" }.joined()
        try? Data(body.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
