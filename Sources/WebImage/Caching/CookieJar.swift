import Foundation
import Locking
import WebImageTransport

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
            requestPath == path
            || (requestPath.hasPrefix(path) && (path.hasSuffix("/") || requestPath.dropFirst(path.count).first == "/"))
        return domainMatches && pathMatches
    }
}

/// The cookie store used by downloads with `.handleCookies`: the transport's cookie engine (libcurl's,
/// behind a share handle), optionally persisted to a Netscape-format cookie file (the format curl and
/// browsers' exporters use).
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
    /// The share handle holding the cookies, for the downloader's transport; nil only when libcurl could
    /// not initialise (every transfer then fails with that error anyway).
    let share: CurlShare?
    /// The engine, behind the lock that serialises its commands (it is not safe for concurrent use) and the
    /// file writes, so an older snapshot never overwrites a newer.
    private let engine: Lock<CookieEngine>

    /// Creates a jar, loading `fileURL` when it exists.
    public init(fileURL: URL? = nil) {
        self.fileURL = fileURL
        let engine = CookieEngine()
        if let fileURL, FileManager.default.fileExists(atPath: fileURL.path) {
            // A file curl cannot read leaves the jar empty, as a missing file does; save() reports errors.
            try? engine.load(fileURL.path)
        }
        share = engine.share
        self.engine = Lock(engine)
    }

    deinit {
        try? save()  // nobody is left to tell
    }

    /// Runs `body` with the engine under the jar's lock, passing its typed error on.
    private func withEngine<T>(_ body: (CookieEngine) throws(ImageDownloaderError) -> T)
        throws(ImageDownloaderError) -> T
    {
        let result = engine.withLock { engine -> Result<T, ImageDownloaderError> in
            do throws(ImageDownloaderError) {
                return .success(try body(engine))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Runs one of the engine's commands under the jar's lock, its error as the downloader's.
    private func apply(_ command: String) throws(ImageDownloaderError) {
        try withEngine { engine throws(ImageDownloaderError) in
            do throws(TransportError) {
                try engine.apply(command)
            } catch {
                throw ImageDownloaderError(transportError: error)
            }
        }
    }

    /// Every cookie in the jar, expired ones excluded.
    public var allCookies: [Cookie] {
        let now = Date()
        return engine.withLock { $0.lines() }.compactMap(Self.parse).filter {
            ($0.expires ?? .distantFuture) > now
        }
    }

    /// The cookies a request to `url` would carry.
    public func cookies(for url: URL) -> [Cookie] {
        let now = Date()
        return allCookies.filter { $0.matches(url, now: now) }
    }

    /// Adds or replaces a cookie (same name, domain and path).
    ///
    /// - Throws: `transport` with curl's code when curl refuses the cookie or the jar has no cookie
    ///   engine; with a file, also when writing it fails.
    public func set(_ cookie: Cookie) throws(ImageDownloaderError) {
        try apply(Self.netscapeLine(cookie))
        try save()
    }

    /// Removes the cookie with this name, domain and path. Throws like ``set(_:)``.
    public func remove(_ cookie: Cookie) throws(ImageDownloaderError) {
        var expired = cookie
        expired.expires = Date(timeIntervalSince1970: 1)
        try apply(Self.netscapeLine(expired))
        try save()
    }

    /// Removes every cookie. Throws like ``set(_:)``.
    public func removeAll() throws(ImageDownloaderError) {
        try apply("ALL")
        try save()
    }

    /// Writes the jar to `fileURL` (no-op without one). Called automatically after changes and downloads
    /// that handled cookies, where a failure cannot be reported; call it to checkpoint and see errors.
    ///
    /// - Throws: `transport`, with the file system's error as `underlying`, when the file cannot be written.
    public func save() throws(ImageDownloaderError) {
        guard let fileURL else { return }
        try withEngine { engine throws(ImageDownloaderError) in try Self.write(engine.lines(), to: fileURL.path) }
    }

    // MARK: Netscape format

    /// "domain \t includeSubdomains \t path \t secure \t expiry \t name \t value", with "#HttpOnly_" before
    /// the domain for HTTP-only cookies and a leading dot on the domain when subdomains are included.
    static func netscapeLine(_ cookie: Cookie) -> String {
        let domain = (cookie.isHTTPOnly ? "#HttpOnly_" : "") + (cookie.includesSubdomains ? "." : "") + cookie.domain
        let expiry = cookie.expires.map { String(Int64($0.timeIntervalSince1970)) } ?? "0"
        return [
            domain, cookie.includesSubdomains ? "TRUE" : "FALSE", cookie.path, cookie.isSecure ? "TRUE" : "FALSE",
            expiry,
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

    /// Writes the cookie-file `lines` to `path` atomically (temporary file, then rename), so a crash
    /// mid-write never leaves a torn cookie file.
    static func write(_ lines: [String], to path: String) throws(ImageDownloaderError) {
        let body = "# Netscape HTTP Cookie File\n# Written by WebImage.\n\n" + lines.map { $0 + "\n" }.joined()
        do {
            try Data(body.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw ImageDownloaderError(
                .transport, "the cookie file \(path) could not be written: \(error.localizedDescription)",
                underlying: error)
        }
    }
}
