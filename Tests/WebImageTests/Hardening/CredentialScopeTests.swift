import Foundation
import LocalImageServer
import LocalImageServerTLS
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// Credentials (user and password) and secret header fields go to the original host only: never to
/// another host after a redirect, never after an https→http downgrade, and Basic credentials over plain
/// http only with an explicit opt-in.
@Suite(.timeLimit(.minutes(2))) struct CredentialScopeTests {
    /// A redirect from `from` to `to`'s `/headers` (percent-encoded for the query).
    private func redirect(from: LocalImageServer, to target: URL) -> URL {
        let encoded = target.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        return from.url("/redirect-to?url=\(encoded)")
    }

    private func secretConfig(_ config: inout ImageDownloaderConfig) {
        config.headers["Authorization"] = "Bearer top-secret"
        config.headers["X-Api-Key"] = "key-123"
        config.headers["Cookie"] = "session=abc"
        config.headers["X-Harmless"] = "kept"
    }

    @Test func secretHeadersStayWithTheOriginalHostAcrossARedirect() throws {
        let origin = try Fixtures.server()
        let other = try Fixtures.server()
        defer {
            origin.shutdown()
            other.shutdown()
        }
        let downloader = origin.downloader(secretConfig)
        let recorder = CallbackRecorder()
        // Another host name for the other server: "localhost" is not 127.0.0.1 to an HTTP client.
        let elsewhere = try #require(URL(string: "http://localhost:\(other.port)/headers"))
        downloader.downloadImage(
            with: redirect(from: origin, to: elsewhere), options: .avoidDecodeImage, completed: recorder.completion(1))
        // The same host (and port): the fields follow.
        downloader.downloadImage(
            with: redirect(from: origin, to: origin.url("/headers?same")), options: .avoidDecodeImage,
            completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(2))
        #expect(recorder.terminals.allSatisfy { $0.error == nil })

        let crossed = try #require(other.requests(for: "/headers").first?.request)
        #expect(crossed.header("Authorization") == nil)
        #expect(crossed.header("X-Api-Key") == nil)
        #expect(crossed.header("Cookie") == nil)
        #expect(crossed.header("X-Harmless") == "kept")
        let same = try #require(origin.requests(for: "/headers").first?.request)
        #expect(same.header("Authorization") == "Bearer top-secret")
        #expect(same.header("X-Api-Key") == "key-123")
        #expect(same.header("Cookie") == "session=abc")
    }

    @Test func cloudTokensPatternsAndAddedFieldsStayWithTheOriginalHost() throws {
        let origin = try Fixtures.server()
        let other = try Fixtures.server()
        defer {
            origin.shutdown()
            other.shutdown()
        }
        let secrets = [
            "X-Amz-Security-Token", "X-Goog-Api-Key", "X-Upload-Token", "X-Client-Secret", "My-Api-Key",
            "X-Session-Id", "X-Tenant",
        ]
        let downloader = origin.downloader { config in
            for name in secrets { config.headers[name] = "value-of-\(name)" }
            config.headers["X-Harmless"] = "kept"
            config.secretHeaderFields.insert("x-tenant")
        }
        let recorder = CallbackRecorder()
        let elsewhere = try #require(URL(string: "http://localhost:\(other.port)/headers"))
        downloader.downloadImage(
            with: redirect(from: origin, to: elsewhere), options: .avoidDecodeImage, completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.first?.error == nil)
        let crossed = try #require(other.requests(for: "/headers").first?.request)
        for name in secrets { #expect(crossed.header(name) == nil, "\(name) reached another origin") }
        #expect(crossed.header("X-Harmless") == "kept")
        let first = try #require(origin.requests(for: "/redirect-to").first?.request)
        for name in secrets { #expect(first.header(name) == "value-of-\(name)") }
    }

    @Test func secretHeadersAreNotSentAfterAnHTTPSToHTTPDowngrade() throws {
        let secure = try Fixtures.server(tls: .selfSigned)
        let plain = try Fixtures.server()
        defer {
            secure.shutdown()
            plain.shutdown()
        }
        let downloader = secure.downloader(secretConfig)
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: redirect(from: secure, to: plain.url("/headers")), options: .avoidDecodeImage,
            completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.first?.error == nil)
        let downgraded = try #require(plain.requests(for: "/headers").first?.request)
        #expect(downgraded.header("Authorization") == nil)
        #expect(downgraded.header("X-Api-Key") == nil)
        #expect(downgraded.header("X-Harmless") == "kept")
    }

    @Test func basicCredentialsNeverFollowARedirectToAnotherHost() throws {
        let origin = try Fixtures.server(tls: .selfSigned)
        let other = try Fixtures.server(tls: .selfSigned)
        defer {
            origin.shutdown()
            other.shutdown()
        }
        let downloader = origin.downloader {
            $0.username = "ann"
            $0.password = "secret"
            $0.caBundlePath = nil
        }
        let recorder = CallbackRecorder()
        let target = try #require(URL(string: "https://localhost:\(other.port)/auth/basic/ann/secret/pixel-1x1.png"))
        downloader.downloadImage(
            with: redirect(from: origin, to: target), options: .allowInvalidSSLCertificates,
            completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.first?.error?.statusCode == 401)
        #expect(other.requests.allSatisfy { $0.request.header("Authorization") == nil })
    }

    @Test func basicCredentialsOverPlainHTTPNeedAnOptIn() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let path = "/auth/basic/ann/secret/pixel-1x1.png"
        let recorder = CallbackRecorder()
        let refusing = server.downloader {
            $0.username = "ann"
            $0.password = "secret"
        }
        refusing.downloadImage(with: server.url(path), completed: recorder.completion(1))
        #expect(recorder.waitForTerminal(1))
        let refused = try #require(recorder.terminals(tag: 1).first?.error)
        #expect(refused.statusCode == 401)
        #expect(refused.message.contains("allowsCredentialsOverPlainHTTP"))
        #expect(server.requests.allSatisfy { $0.request.header("Authorization") == nil })

        let optedIn = server.downloader {
            $0.username = "ann"
            $0.password = "secret"
            $0.allowsCredentialsOverPlainHTTP = true
        }
        optedIn.downloadImage(with: server.url(path), completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 2).first?.image?.width == 1)
    }
}
