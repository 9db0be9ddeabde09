import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage
@testable import WebImageTransport

/// A header field with CR, LF or NUL (or a name that is not a token) is refused with
/// invalidDownloadOperation from every source, and nothing reaches the server. (The transport's own refusal
/// is WebImageTransportTests' HeaderInjectionTests.)
@Suite(.timeLimit(.minutes(2))) struct HeaderInjectionTests {
    static let injected = "1\r\nX-Injected: yes"

    /// Runs one request and returns its synchronous error (nil when it was queued) and its token.
    private func request(
        _ downloader: ImageDownloader, _ url: URL, context: ImageDownloadContext? = nil
    ) -> (ImageDownloaderError?, ImageDownloadToken?) {
        let error = Locked<ImageDownloaderError?>(nil)
        let token = downloader.downloadImage(with: url, options: .avoidDecodeImage, context: context) { _, _, e, _ in
            error.value = e as? ImageDownloaderError
        }
        return (error.value, token)
    }

    @Test func everySourceOfHeadersIsChecked() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let url = server.url("/headers")
        var cases: [(String, ImageDownloader, ImageDownloadContext?)] = []

        cases.append(("config value", server.downloader { $0.headers["X-Config"] = Self.injected }, nil))
        cases.append(("config name", server.downloader { $0.headers["X-A\r\nX-Injected"] = "yes" }, nil))
        cases.append(("config NUL", server.downloader { $0.headers["X-Config"] = "a\u{0}b" }, nil))
        cases.append(("config colon in name", server.downloader { $0.headers["X-A: b"] = "c" }, nil))
        let viaSetValue = server.downloader()
        viaSetValue.setValue(Self.injected, forHTTPHeaderField: "X-Set")
        cases.append(("setValue", viaSetValue, nil))
        var context = ImageDownloadContext()
        context.headers["X-Context"] = "a\nX-Injected: yes"
        cases.append(("context", server.downloader(), context))
        let modifying = server.downloader {
            $0.requestModifier = ImageDownloaderRequestModifier { request in
                var request = request
                request.headers["X-Modifier"] = Self.injected
                return request
            }
        }
        cases.append(("request modifier", modifying, nil))
        var modifierContext = ImageDownloadContext()
        modifierContext.requestModifier = ImageDownloaderRequestModifier { request in
            var request = request
            request.headers.add(name: "X-Modifier\r\nX-Injected", value: "yes")
            return request
        }
        cases.append(("context request modifier", server.downloader(), modifierContext))

        for (source, downloader, context) in cases {
            let (error, token) = request(downloader, url, context: context)
            #expect(token == nil, "\(source)")
            #expect(error?.code == .invalidDownloadOperation, "\(source): \(String(describing: error))")
            #expect(error?.message.contains("yes") == false, "\(source): the value must not be echoed")
        }
        #expect(server.count(for: "/headers") == 0)

        // Valid fields still go out, and the server saw no injected field at any time.
        let fine = server.downloader { $0.headers["X-Fine"] = "a: b; c=\"d\"" }
        let recorder = CallbackRecorder()
        fine.downloadImage(with: url, options: .avoidDecodeImage, completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        let seen = try #require(server.requests(for: "/headers").first?.request)
        #expect(seen.header("X-Fine") == "a: b; c=\"d\"")
        #expect(server.requests.allSatisfy { $0.request.header("X-Injected") == nil })
    }

    @Test func theCLIRefusesAnInjectedHeader() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let url = server.url("/headers").absoluteString
        for header in ["X-A: 1\r\nX-Injected: yes", "X-A: 1\nX-Injected: yes", "X-A\r\nX-Injected: yes"] {
            let output = try await CLIRunner.run("webimage", ["get", "--header", header, url])
            #expect(output.status == 64, "\(header.debugDescription): \(output.stderr)")
            #expect(output.stderr.contains("--header"))
        }
        #expect(server.count(for: "/headers") == 0)
    }
}
