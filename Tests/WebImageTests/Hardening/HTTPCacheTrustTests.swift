import Foundation
import LocalImageServer
import LocalImageServerTLS
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// The HTTP cache directory is shared by every downloader and process of the user: nothing one caller's
/// trust fetched (credentials, cookies, TLS checks off, a `private` answer) is stored for the others, a
/// redirected response is stored under the URL that served it, and no secret reaches the index.
@Suite(.timeLimit(.minutes(2))) final class HTTPCacheTrustTests {
    let server: LocalImageServer
    let directory: URL
    let cache: HTTPCache

    init() throws {
        server = try Fixtures.server(tls: .selfSigned)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("webimage-trust-\(UUID().uuidString)")
        cache = HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 8 << 20, directory: directory)
    }

    /// Each test has an instance of its own, and so a cache directory of its own, removed with it.
    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    private func downloader(_ change: (inout ImageDownloaderConfig) -> Void = { _ in }) -> ImageDownloader {
        server.downloader {
            $0.urlCache = cache
            change(&$0)
        }
    }

    /// Downloads `path` and returns the result (or the error).
    private func fetch(
        _ downloader: ImageDownloader, _ path: String, options: ImageDownloaderOptions = [],
        context: ImageDownloadContext? = nil
    ) async throws -> ImageDownloadResult {
        try await downloader.image(
            for: server.url(path), options: options.union(.useURLCache), context: context)
    }

    private var cachable: String { "/cache/max-age%3D3600/horse-rgba.png" }
    private var cachedURL: URL { server.url(cachable) }

    @Test func answersToCredentialsCookiesOrUnverifiedTLSAreNotStored() async throws {
        var withAuthorization = ImageDownloadContext()
        withAuthorization.headers["Authorization"] = "Bearer top-secret"
        var withCookie = ImageDownloadContext()
        withCookie.headers["Cookie"] = "session=abc"
        let cases: [(String, ImageDownloader, ImageDownloaderOptions, ImageDownloadContext?)] = [
            ("Authorization header", downloader(), [], withAuthorization),
            ("Cookie header", downloader(), [], withCookie),
            ("handleCookies", downloader(), .handleCookies, nil),
            (
                "credentials",
                downloader {
                    $0.username = "ann"
                    $0.password = "secret"
                }, [], nil
            ),
            ("TLS checks off", downloader { $0.caBundlePath = nil }, .allowInvalidSSLCertificates, nil),
        ]
        for (name, downloader, options, context) in cases {
            let result = try await fetch(downloader, cachable, options: options, context: context)
            #expect(result.image?.width == 400, "\(name)")
            #expect(cache.lookup(ImageDownloadRequest(url: cachedURL), now: Date()) == .miss, "\(name) was stored")
        }
        // A plain request stores it; the trusted callers above then still do not read it.
        _ = try await fetch(downloader(), cachable)
        #expect(cache.lookup(ImageDownloadRequest(url: cachedURL), now: Date()).cachedResponse != nil)
        let before = server.count(for: cachable)
        let cookied = try await fetch(downloader(), cachable, options: .handleCookies)
        #expect(cookied.metrics?.cacheStatus == .network)
        #expect(server.count(for: cachable) == before + 1)
    }

    @Test func aRequestWithASecretFieldNeitherWritesNorReadsTheCache() async throws {
        var withKey = ImageDownloadContext()
        withKey.headers["X-Api-Key"] = "key-123"
        var withToken = ImageDownloadContext()
        withToken.headers["X-Goog-Api-Key"] = "goog-456"
        var withCustom = ImageDownloadContext()
        withCustom.headers["X-Tenant"] = "tenant-789"
        let custom = downloader { $0.secretHeaderFields.insert("X-Tenant") }
        for (downloader, context) in [(downloader(), withKey), (downloader(), withToken), (custom, withCustom)] {
            _ = try await fetch(downloader, cachable, context: context)
            #expect(cache.lookup(ImageDownloadRequest(url: cachedURL), now: Date()) == .miss)
        }
        // A request without the key is not served what the key fetched: it asks the server.
        let anonymous = try await fetch(downloader(), cachable)
        #expect(anonymous.metrics?.cacheStatus == .network)
        #expect(server.count(for: cachable) == 4)
        // Now stored, and still not served to a request with a key, which may see another answer.
        let keyed = try await fetch(downloader(), cachable, context: withKey)
        #expect(keyed.metrics?.cacheStatus == .network)
        #expect(server.count(for: cachable) == 5)
    }

    @Test func aPrivateResponseIsNotStored() async throws {
        let result = try await fetch(downloader(), "/cache/private%2C%20max-age%3D3600/horse-rgba.png")
        #expect(result.image?.width == 400)
        let url = server.url("/cache/private%2C%20max-age%3D3600/horse-rgba.png")
        #expect(cache.lookup(ImageDownloadRequest(url: url), now: Date()) == .miss)
    }

    @Test func aRedirectedResponseIsStoredUnderTheURLThatServedIt() async throws {
        let start = "/redirect-to?url=\(cachable.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        let result = try await fetch(downloader(), start)
        #expect(result.image?.width == 400)
        #expect(cache.lookup(ImageDownloadRequest(url: cachedURL), now: Date()).cachedResponse != nil)
        #expect(cache.lookup(ImageDownloadRequest(url: server.url(start)), now: Date()) == .miss)
        // The redirect was not stored: asking for the first URL again asks its server again.
        _ = try await fetch(downloader(), start)
        #expect(server.count(for: "/redirect-to") == 2)
    }

    @Test func varyOnCookieIsNeverAnsweredFromAnotherCallersVariant() async throws {
        server.route("/vary-cookie") { _ in
            LocalImageServer.Response(
                headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=3600"), ("Vary", "Cookie")],
                body: .data(LocalImageServer.pixelPNG))
        }
        // Anonymous: stored, with "no Cookie" as its selecting value.
        _ = try await fetch(downloader(), "/vary-cookie")
        #expect(cache.lookup(ImageDownloadRequest(url: server.url("/vary-cookie")), now: Date()).cachedResponse != nil)
        // A caller whose cookies curl would add must not be served the anonymous variant.
        let cookied = try await fetch(downloader(), "/vary-cookie", options: .handleCookies)
        #expect(cookied.metrics?.cacheStatus == .network)
        #expect(server.count(for: "/vary-cookie") == 2)
    }

    @Test func noSecretHeaderValueIsWrittenToTheIndex() async throws {
        server.route("/vary-key") { _ in
            LocalImageServer.Response(
                headers: [
                    ("Content-Type", "image/png"), ("Cache-Control", "max-age=3600"),
                    ("Vary", "X-Api-Key, X-Custom-Secret, Accept"),
                ],
                body: .data(LocalImageServer.pixelPNG))
        }
        var context = ImageDownloadContext()
        context.headers["X-Api-Key"] = "key-123-do-not-store"
        _ = try await fetch(downloader(), "/vary-key", context: context)
        var custom = ImageDownloadContext()
        custom.headers["X-Custom-Secret"] = "custom-456-do-not-store"
        _ = try await fetch(
            downloader { $0.secretHeaderFields.insert("X-Custom-Secret") }, "/vary-key", context: custom)
        #expect(cache.lookup(ImageDownloadRequest(url: server.url("/vary-key")), now: Date()) == .miss)

        // Nothing under the cache directory (index, WAL, bodies) holds either value.
        let files =
            FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL } ?? []
        #expect(!files.isEmpty)
        for file in files {
            guard let bytes = try? Data(contentsOf: file) else { continue }
            for secret in ["key-123-do-not-store", "custom-456-do-not-store"] {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file.lastPathComponent) holds \(secret)")
            }
        }
    }
}
