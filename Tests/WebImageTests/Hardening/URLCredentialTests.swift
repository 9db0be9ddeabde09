import Foundation
import LocalImageServer
import LocalImageServerTLS
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// Credentials written into a URL (`https://ann:secret@host/`) are the request's credentials under the
/// rules `username`/`password` have: sent only after a 401, over plain http only with the opt-in, never
/// through the shared HTTP cache. The URL itself is sent, stored, logged and reported without them.
@Suite(.timeLimit(.minutes(2))) struct URLCredentialTests {
    /// The pixel after a Basic challenge for ann / S3CRET (the built-in auth route would put the password
    /// in the path, where these tests look for it).
    private static let path = "/secured"

    private func serve(_ server: LocalImageServer) -> LocalImageServer {
        let expected = "Basic \(Data("ann:S3CRET".utf8).base64EncodedString())"
        server.route(Self.path) { request in
            guard request.header("Authorization") == expected else {
                var response = LocalImageServer.Response.text("authentication required\n", status: 401)
                response.headers.append(("WWW-Authenticate", "Basic realm=\"webimage\""))
                return response
            }
            return LocalImageServer.Response(
                headers: [("Content-Type", "image/png")], body: .data(LocalImageServer.pixelPNG))
        }
        return server
    }

    /// `server`'s URL for `path` with `user:password@` in it.
    private func url(_ server: LocalImageServer, _ path: String, userInfo: String = "ann:S3CRET") throws -> URL {
        let plain = server.url(path).absoluteString
        let scheme = server.url("/").scheme ?? "http"
        return try #require(
            URL(string: plain.replacingOccurrences(of: "\(scheme)://", with: "\(scheme)://\(userInfo)@")))
    }

    @Test func theyWaitForAChallengeAndLeaveTheURL() throws {
        let server = serve(try Fixtures.server(tls: .selfSigned))
        defer { server.shutdown() }
        let log = LogCollector()
        let downloader = server.downloader { $0.logger = log.logger }
        let recorder = CallbackRecorder()
        let token = downloader.downloadImage(with: try url(server, Self.path), completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.first?.image?.width == 1, "\(String(describing: recorder.terminals.first?.error))")
        // The challenge first: the first request carries nothing, the retry the credentials.
        let requests = server.requests(for: Self.path).map(\.request)
        #expect(requests.count == 2)
        #expect(requests.first?.header("Authorization") == nil)
        #expect(requests.last?.header("Authorization") == "Basic \(Data("ann:S3CRET".utf8).base64EncodedString())")
        #expect(token?.url.absoluteString == server.url(Self.path).absoluteString)
        #expect(token?.response?.url.user == nil)
        downloader.drainCallbacks()
        #expect(!log.records.isEmpty)
        #expect(log.records.allSatisfy { !"\($0.message) \($0.metadata)".contains("S3CRET") })
    }

    @Test func overPlainHTTPTheyNeedTheOptIn() throws {
        let server = serve(try Fixtures.server())
        defer { server.shutdown() }
        let recorder = CallbackRecorder()
        let refusing = server.downloader()
        refusing.downloadImage(with: try url(server, Self.path), completed: recorder.completion(1))
        #expect(recorder.waitForTerminal(1))
        let refused = try #require(recorder.terminals(tag: 1).first?.error)
        #expect(refused.statusCode == 401)
        #expect(refused.message.contains("allowsCredentialsOverPlainHTTP"))
        #expect(!refused.description.contains("S3CRET"))
        #expect(refused.url?.user == nil)
        #expect(server.requests.allSatisfy { $0.request.header("Authorization") == nil })

        let optedIn = server.downloader { $0.allowsCredentialsOverPlainHTTP = true }
        optedIn.downloadImage(with: try url(server, Self.path), completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 2).first?.image?.width == 1)
    }

    @Test func theyKeepTheRequestOutOfTheHTTPCache() async throws {
        let server = try Fixtures.server(tls: .selfSigned)
        defer { server.shutdown() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "webimage-url-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 8 << 20, directory: directory)
        let downloader = server.downloader { $0.urlCache = cache }
        let cachable = "/cache/max-age%3D3600/horse-rgba.png"
        let result = try await downloader.image(for: try url(server, cachable), options: .useURLCache)
        #expect(result.image?.width == 400)
        #expect(cache.lookup(ImageDownloadRequest(url: server.url(cachable)), now: Date()) == .miss)
        // A request without them is not answered with what they fetched, and stores its own answer.
        let anonymous = try await downloader.image(for: server.url(cachable), options: .useURLCache)
        #expect(anonymous.metrics?.cacheStatus == .network)
        let files =
            FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL } ?? []
        for file in files {
            guard let bytes = try? Data(contentsOf: file) else { continue }
            #expect(bytes.range(of: Data("S3CRET".utf8)) == nil, "\(file.lastPathComponent) holds the password")
        }
    }

    @Test func aURLIsPrintedWithoutItsPassword() throws {
        let plain = try #require(URL(string: "https://ann:S3CRET@example.com:8443/a.png?x=1"))
        #expect(plain.redactedString == "https://ann:***@example.com:8443/a.png?x=1")
        let userOnly = try #require(URL(string: "https://TOKEN123@example.com/a.png"))
        #expect(userOnly.redactedString == "https://***@example.com/a.png")
        let none = try #require(URL(string: "https://example.com/a@b.png"))
        #expect(none.redactedString == none.absoluteString)
        let (stripped, credentials) = plain.splittingUserInfo
        #expect(stripped.absoluteString == "https://example.com:8443/a.png?x=1")
        #expect(credentials == RequestTrust.Credentials(user: "ann", password: "S3CRET"))
        let error = ImageDownloaderError(.timedOut, "late", url: plain)
        #expect(!error.description.contains("S3CRET"))
    }
}
