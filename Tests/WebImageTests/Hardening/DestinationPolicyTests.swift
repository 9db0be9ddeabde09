import CCurl
import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage
@testable import WebImageTransport

/// `config.destinationPolicy`: the address curl is about to connect to is judged, whatever spelling
/// the URL used, on every redirect hop and after every DNS answer; a refused one fails the download with
/// `destinationNotAllowed` and the server sees nothing. Every address here is loopback. (How the policy
/// classifies addresses is WebImageTransportTests' DestinationPolicyTests.)
@Suite(.timeLimit(.minutes(2))) struct DestinationPolicyTests {
    @Test(arguments: Loopback.spellings)
    func publicOnlyRefusesEverySpellingOfLoopbackAndSendsNothing(host: String) async throws {
        let target = try LoopbackTarget(host: host)
        defer { target.stop() }
        let refusing = target.downloader(.publicOnly)
        defer { refusing.invalidate(cancelPendingDownloads: true) }
        let error = await Self.failure(refusing, target.url)
        #expect(error.code == .destinationNotAllowed, "\(error)")
        #expect(error.code.rawValue == 3010)
        let expected = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host == "0" ? "0.0.0.0" : "127.0.0.1"
        #expect(error.message.contains(expected), "\(error.message)")
        #expect(target.requests == 0)

        // The same URL with the default policy does reach the server: the refusal above was the policy's.
        let allowing = target.downloader(.allowAll)
        defer { allowing.invalidate(cancelPendingDownloads: true) }
        _ = try? await allowing.image(for: target.url)
        // The server may count the request after the client has its answer: wait for the count.
        #expect(await pollAsync(seconds: 60) { target.requests == 1 }, "\(target.requests) requests")
    }

    @Test func aRedirectFromAnAllowedToARefusedAddressIsNotFollowed() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let other = try LoopbackListener(address: "127.0.0.2")
        defer { other.stop() }
        let downloader = server.downloader {
            $0.destinationPolicy = .publicOnly.allowing(["127.0.0.1/32"])
        }
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        let target = "http://127.0.0.2:\(other.port)/inside.png"
        let url = server.url("/redirect-to?url=\(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
        let error = await Self.failure(downloader, url)
        #expect(error.code == .destinationNotAllowed, "\(error)")
        #expect(error.message.contains("127.0.0.2") && error.message.contains("1 redirect"), "\(error.message)")
        #expect(server.count(for: "/redirect-to") == 1)  // the allowed first hop went out
        #expect(other.requests == 0)
    }

    /// A name that first resolved to an allowed address, then (a new DNS answer in the shared cache) to a
    /// refused one: the second connection is judged on the new answer.
    @Test func aNameRebindingToARefusedAddressIsRefused() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        // The same port on 127.0.0.2, so that only the DNS answer differs between the two downloads.
        let rebound = try LoopbackListener(address: "127.0.0.2", port: server.port)
        defer { rebound.stop() }
        let jar = CookieJar()  // its share handle (and DNS cache) serves both downloaders below
        let share = try #require(jar.share)
        let name = "rebind.test:\(server.port)"
        var config = server.downloaderConfig {
            $0.destinationPolicy = .publicOnly.allowing(["127.0.0.1/32"])
            $0.cookieStorage = jar
        }
        config.maxConcurrentDownloads = 1
        let url = URL(string: "http://\(name)/files/pixel-1x1.png")!

        #expect(Self.seed(share, ["\(name):127.0.0.1"]) == CURLE_OK)
        let first = ImageDownloader(config: config)
        defer { first.invalidate(cancelPendingDownloads: true) }
        let result = try await first.image(for: url)
        #expect(result.image?.width == 1)

        // A new downloader opens a new connection (the first one's is in its own pool) and looks the name up.
        #expect(Self.seed(share, ["-\(name)", "\(name):127.0.0.2"]) == CURLE_OK)
        let second = ImageDownloader(config: config)
        defer { second.invalidate(cancelPendingDownloads: true) }
        let error = await Self.failure(second, url.appending(queryItems: [URLQueryItem(name: "n", value: "2")]))
        #expect(error.code == .destinationNotAllowed, "\(error)")
        #expect(error.message.contains("127.0.0.2"), "\(error.message)")
        #expect(rebound.requests == 0)
        #expect(server.requests.count == 1)
    }

    /// `localhost` is 127.0.0.1 and ::1: a refused address is skipped and a permitted one tried. When the
    /// permitted one cannot connect, the error is cannotConnect and names the refused address too.
    @Test func aNameWithARefusedAndAPermittedAddressUsesThePermittedOne() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let url = URL(string: "http://localhost:\(server.port)/files/pixel-1x1.png")!
        let v4 = server.downloader { $0.destinationPolicy = .publicOnly.allowing(["127.0.0.1/32"]) }
        defer { v4.invalidate(cancelPendingDownloads: true) }
        let result = try await v4.image(for: url)
        #expect(result.image?.width == 1)

        // Only ::1 permitted, and nothing listens on ::1 at this port (the server is on 127.0.0.1).
        let v6 = server.downloader { $0.destinationPolicy = .publicOnly.allowing(["::1/128"]) }
        defer { v6.invalidate(cancelPendingDownloads: true) }
        let error = await Self.failure(v6, url.appending(queryItems: [URLQueryItem(name: "n", value: "2")]))
        #expect(error.code == .cannotConnect, "\(error)")
        #expect(error.message.contains("the destination policy also refused 127.0.0.1"), "\(error.message)")
        #expect(server.requests.count == 1)
    }

    @Test func aPolicyWithAnInvalidNetworkFailsEveryDownloadBeforeSendingAnything() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let downloader = server.downloader { $0.destinationPolicy = .allowAll.denying(["10.0.0.0/33"]) }
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        let error = await Self.failure(downloader, server.url("/files/pixel-1x1.png"))
        #expect(error.code == .invalidDownloadOperation, "\(error)")
        #expect(error.message.contains("10.0.0.0/33"), "\(error.message)")
        #expect(server.acceptedConnections == 0)
    }

    /// The HTTP cache is shared by every downloader of the user: an answer an allowAll downloader stored
    /// from loopback must not reach a publicOnly one, which would never have connected there.
    @Test func aRestrictedDownloaderNeitherReadsNorWritesTheSharedHTTPCache() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("webimage-policy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 8 << 20, directory: directory)
        let url = server.url("/cache/max-age%3D3600/pixel-1x1.png")

        let open = server.downloader { $0.urlCache = cache }
        defer { open.invalidate(cancelPendingDownloads: true) }
        let stored = try await open.image(for: url, options: .useURLCache)
        #expect(stored.metrics?.cacheStatus == .network)
        let again = try await open.image(for: url, options: .useURLCache)
        #expect(again.metrics?.cacheStatus == .fresh)  // the entry is there

        let strict = server.downloader {
            $0.urlCache = cache
            $0.destinationPolicy = .publicOnly
        }
        defer { strict.invalidate(cancelPendingDownloads: true) }
        let error = await Self.failure(strict, url, options: .useURLCache)
        #expect(error.code == .destinationNotAllowed, "\(error)")

        // Allowed to connect, it still fetches from the network and stores nothing.
        let allowed = server.downloader {
            $0.urlCache = cache
            $0.destinationPolicy = .publicOnly.allowing(["127.0.0.1/32"])
        }
        defer { allowed.invalidate(cancelPendingDownloads: true) }
        let fresh = server.url("/cache/max-age%3D3600/pixel-1x1.png?other")
        for _ in 0..<2 {
            let result = try await allowed.image(for: fresh, options: .useURLCache)
            #expect(result.metrics?.cacheStatus == .network)
        }
        #expect(server.count(for: "/cache/max-age%3D3600/pixel-1x1.png") == 3)
    }

    /// A cache the configuration declares its own (`urlCacheIsPrivate`) holds only what its policy judged,
    /// so a restricted downloader reads and writes it; the same downloader without the flag does not.
    @Test func aRestrictedDownloaderUsesAPrivateHTTPCache() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let url = server.url("/cache/max-age%3D3600/pixel-1x1.png?private")
        for isPrivate in [false, true] {
            let downloader = server.downloader {
                $0.urlCache = HTTPCache(memoryCapacity: 1 << 20, directory: nil)
                $0.urlCacheIsPrivate = isPrivate
                $0.destinationPolicy = .publicOnly.allowing(["127.0.0.1/32"])
            }
            defer { downloader.invalidate(cancelPendingDownloads: true) }
            let first = try await downloader.image(for: url, options: .useURLCache)
            #expect(first.metrics?.cacheStatus == .network)
            let second = try await downloader.image(for: url, options: .useURLCache)
            #expect(second.metrics?.cacheStatus == (isPrivate ? .fresh : .network), "private: \(isPrivate)")
        }
        #expect(server.count(for: "/cache/max-age%3D3600/pixel-1x1.png") == 3)
    }

    // MARK: Helpers

    /// The error `url` fails with (the test fails when it succeeds).
    static func failure(
        _ downloader: ImageDownloader, _ url: URL, options: ImageDownloaderOptions = []
    ) async -> ImageDownloaderError {
        do {
            let result = try await downloader.image(for: url, options: options)
            Issue.record("\(url) succeeded with \(result.data.count) bytes")
            return ImageDownloaderError(.transport, "no error")
        } catch {
            return error  // image(for:) throws ImageDownloaderError as its type
        }
    }

    /// Puts `entries` (`CURLOPT_RESOLVE` syntax) into `share`'s DNS cache with a transfer of `file:///dev/null`,
    /// which connects nowhere.
    static func seed(_ share: CurlShare, _ entries: [String]) -> CURLcode {
        guard let handle = curl_easy_init() else { return CURLE_FAILED_INIT }
        defer { curl_easy_cleanup(handle) }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for entry in entries { list = curl_slist_append(list, entry) }
        defer { curl_slist_free_all(list) }
        _ = wi_easy_setopt_string(handle, CURLOPT_URL, "file:///dev/null")
        _ = wi_easy_setopt_share(handle, share.handle)
        _ = wi_easy_setopt_slist(handle, CURLOPT_RESOLVE, list)
        return curl_easy_perform(handle)
    }
}

/// A loopback server for a host spelling: the corpus server on 127.0.0.1 for the IPv4 spellings, a
/// listener on ::1 for `[::1]`.
struct LoopbackTarget {
    let url: URL
    private let server: LocalImageServer?
    private let listener: LoopbackListener?

    init(host: String) throws {
        if host == "[::1]" {
            let listener = try LoopbackListener(address: "::1")
            self.listener = listener
            server = nil
            url = URL(string: "http://[::1]:\(listener.port)/files/pixel-1x1.png")!
        } else {
            let server = try Fixtures.server()
            self.server = server
            listener = nil
            url = URL(string: "http://\(host):\(server.port)/files/pixel-1x1.png")!
        }
    }

    /// Requests (or connections, if more) the target received; the listener counts connections.
    var requests: Int { server.map { max($0.requests.count, $0.acceptedConnections) } ?? listener?.requests ?? 0 }

    func downloader(_ policy: DestinationPolicy) -> ImageDownloader {
        var config = ImageDownloaderConfig()
        config.destinationPolicy = policy
        return ImageDownloader(config: config)
    }

    func stop() {
        server?.shutdown()
        listener?.stop()
    }
}
