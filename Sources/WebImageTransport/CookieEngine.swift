import CCurl
import Foundation

/// libcurl's cookie engine behind a share handle: the cookies every transfer of a transport sharing
/// ``share`` reads and updates, and the commands that read and change them outside a transfer
/// (`CURLOPT_COOKIELIST`, `CURLINFO_COOKIELIST`), through an easy handle that never performs one.
///
/// Not safe for concurrent use: its owner (the downloader's cookie jar) calls it under one lock. curl
/// itself locks the shared cookie data against the transfers running meanwhile.
///
/// ```swift
/// let engine = CookieEngine()
/// try engine.apply("Set-Cookie: session=abc; Domain=example.com")
/// let lines = engine.lines()  // Netscape cookie-file lines
/// ```
package final class CookieEngine: @unchecked Sendable {
    // @unchecked Sendable: the owner calls every method under its own lock (see above); `share` and the
    // handle are set in init and freed in deinit, and curl locks the shared cookies for the transfers.

    /// The share handle holding the cookies, for a transport's transfers; nil when libcurl could not
    /// make one (every command then fails with that error).
    package let share: CurlShare?
    private let easy: UnsafeMutableRawPointer?
    /// Why the engine does not work, when it does not.
    private let unavailable: TransportError?

    /// An engine with no cookies, on a share handle of its own.
    package init() {
        let share: CurlShare?
        do {
            share = try CurlShare(sharesCookies: true)
        } catch {
            self.share = nil
            easy = nil
            unavailable = TransportError(.failed, "the cookie jar has no curl share handle: \(error.message)")
            return
        }
        self.share = share
        guard let share, let easy = curl_easy_init() else {
            easy = nil
            unavailable = TransportError(.failed, "curl_easy_init failed for the cookie jar")
            return
        }
        do {
            try CurlRuntime.check(wi_easy_setopt_share(easy, share.handle), "SHARE")
            try CurlRuntime.check(wi_easy_setopt_string(easy, CURLOPT_COOKIEFILE, ""), "COOKIEFILE")  // engine on
            self.easy = easy
            unavailable = nil
        } catch {
            curl_easy_cleanup(easy)
            self.easy = nil
            unavailable = error
        }
    }

    deinit {
        // The handle goes before the share (a stored property, released after deinit).
        if let easy { curl_easy_cleanup(easy) }
    }

    private func handle() throws(TransportError) -> UnsafeMutableRawPointer {
        guard let easy else { throw unavailable ?? TransportError(.failed, "the cookie jar is unavailable") }
        return easy
    }

    /// Runs one of curl's cookie-list commands: "ALL" (remove every cookie), "SESS" (remove the session
    /// cookies), "FLUSH", "RELOAD", a Netscape cookie-file line or a `Set-Cookie:` header line.
    ///
    /// - Throws: `setupFailed` with curl's code when curl refuses the command; `failed` when the engine
    ///   has no handle.
    package func apply(_ command: String) throws(TransportError) {
        let easy = try handle()
        try CurlRuntime.check(command.withCString { wi_easy_setopt_string(easy, CURLOPT_COOKIELIST, $0) }, "COOKIELIST")
    }

    /// Adds the cookies of the Netscape cookie file (or file of `Set-Cookie` lines) at `path`. A file curl
    /// cannot read adds nothing, as curl's engine treats it. Throws like ``apply(_:)``.
    package func load(_ path: String) throws(TransportError) {
        let easy = try handle()
        try CurlRuntime.check(path.withCString { wi_easy_setopt_string(easy, CURLOPT_COOKIEFILE, $0) }, "COOKIEFILE")
        try apply("RELOAD")
    }

    /// Every cookie as a Netscape cookie-file line (tab-separated; `#HttpOnly_` before an HTTP-only
    /// cookie's domain), expired ones included; empty when the engine does not work.
    package func lines() -> [String] {
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
}
