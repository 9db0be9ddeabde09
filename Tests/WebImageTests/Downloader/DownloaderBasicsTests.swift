import Foundation
import LocalImageServer
import TestSupport
import Testing

@testable import WebImage

/// Downloader behaviour, each network test over HTTP/1.1 and over HTTP/2 with TLS (`Wire`).
@Suite(.timeLimit(.minutes(2))) struct DownloaderBasicsTests {
    @Test(
        arguments: Wire.allCases,
        [
            ("horse-rgba.png", ImageFormat.png, 1), ("astronaut-baseline.jpg", .jpeg, 1),
            ("astronaut-lossy.webp", .webp, 1), ("chelsea-animated.webp", .webp, 8), ("chelsea-animated.gif", .gif, 8),
        ])
    func successDeliversImageAndTheServedBytesOnTheCallbackQueue(
        wire: Wire, file: (name: String, format: ImageFormat, frames: Int)
    ) throws {
        let (file, format, frames) = file
        let server = try wire.startServer()
        defer { server.shutdown() }
        let callbackQueue = namedQueue("test.callbacks.\(file)")
        let downloader = server.downloader { $0.callbackQueue = callbackQueue }
        let recorder = CallbackRecorder()
        let token = downloader.downloadImage(with: server.url("/files/\(file)"), completed: recorder.completion())
        #expect(token != nil)
        #expect(recorder.waitForTerminal(1))
        downloader.drainCallbacks()
        let calls = recorder.all
        #expect(calls.count == 1)
        let call = try #require(calls.first)
        #expect(call.error == nil)
        #expect(call.finished)
        #expect(call.data == (try Fixtures.corpusFile(file)))
        #expect(call.image?.format == format)
        #expect(call.image?.frames.count == frames)
        #expect(call.queueLabel == "test.callbacks.\(file)")
        #expect(token?.response?.statusCode == 200)
        #expect(token?.metrics?.bytesReceived == Int64(call.data?.count ?? -1))
        #expect(token?.metrics?.httpVersion == wire.httpVersion)
    }

    @Test func nilAndDisallowedURLsFailSynchronouslyWithoutAToken() {
        let downloader = ImageDownloader()
        for url in [nil, URL(string: "ftp://127.0.0.1/x.png"), URL(string: "file:///etc/passwd")] as [URL?] {
            let synchronousError = Locked<ImageDownloaderError?>(nil)
            let token = downloader.downloadImage(with: url) { _, _, error, finished in
                #expect(finished)
                synchronousError.value = error as? ImageDownloaderError
            }
            #expect(token == nil)
            #expect(synchronousError.value?.code == .invalidURL, "\(String(describing: url))")
        }
    }

    @Test(arguments: Wire.allCases)
    func statusContentTypeAndModifierFailures(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let recorder = CallbackRecorder()
        let plain = server.downloader()
        let notFound = plain.downloadImage(with: server.url("/status/404"), completed: recorder.completion(1))

        let strictStatus = server.downloader { $0.acceptableStatusCodes = [1] }
        let strictToken = strictStatus.downloadImage(
            with: server.url("/files/pixel-1x1.png"), completed: recorder.completion(2))

        let strictType = server.downloader { $0.acceptableContentTypes = ["application/json"] }
        strictType.downloadImage(with: server.url("/files/pixel-1x1.png"), completed: recorder.completion(3))

        let refusingResponse = server.downloader { $0.responseModifier = ImageDownloaderResponseModifier { _ in nil } }
        refusingResponse.downloadImage(with: server.url("/files/pixel-1x1.png"), completed: recorder.completion(4))

        let refusingDecryptor = server.downloader { $0.decryptor = ImageDownloaderDecryptor { _, _ in nil } }
        refusingDecryptor.downloadImage(with: server.url("/files/pixel-1x1.png"), completed: recorder.completion(5))

        plain.downloadImage(with: server.url("/empty"), completed: recorder.completion(6))
        plain.downloadImage(with: server.url("/html"), completed: recorder.completion(7))
        plain.downloadImage(with: server.url("/files/random-bytes.png"), completed: recorder.completion(8))

        #expect(recorder.waitForTerminal(8))
        func code(_ tag: Int) -> ImageDownloaderError? { recorder.terminals(tag: tag).first?.error }
        #expect(code(1)?.code == .invalidDownloadStatusCode)
        #expect(code(1)?.statusCode == 404)
        #expect(notFound?.response?.statusCode == 404)
        #expect(code(2)?.code == .invalidDownloadStatusCode)
        #expect(strictToken?.response?.statusCode == 200)
        #expect(code(3)?.code == .invalidDownloadContentType)
        #expect(code(4)?.code == .invalidDownloadResponse)
        #expect(code(5)?.code == .badImageData)
        #expect(code(6)?.code == .badImageData)
        #expect(code(7)?.code == .badImageData)
        #expect(code(8)?.code == .badImageData)
        #expect(code(7)?.statusCode == 200, "a decode failure keeps the response's status")
        #expect(code(7)?.response?.mimeType == "text/html")
        #expect(recorder.terminals.allSatisfy { $0.error?.url != nil })

        let refusingRequest = server.downloader { $0.requestModifier = ImageDownloaderRequestModifier { _ in nil } }
        let synchronous = Locked<ImageDownloaderError?>(nil)
        let none = refusingRequest.downloadImage(with: server.url("/files/pixel-1x1.png")) { _, _, error, _ in
            synchronous.value = error as? ImageDownloaderError
        }
        #expect(none == nil)
        #expect(synchronous.value?.code == .invalidDownloadOperation)
        #expect(server.count(for: "/files/pixel-1x1.png") == 4)
    }

    @Test(arguments: Wire.allCases)
    func requestModifierChangesWhatIsSent(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader {
            $0.requestModifier = ImageDownloaderRequestModifier { request in
                var request = request
                request.headers["X-Signed"] = "yes"
                return request
            }
        }
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/headers"), options: .avoidDecodeImage, completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        #expect(server.requests(for: "/headers").first?.request.header("X-Signed") == "yes")
    }

    @Test(arguments: Wire.allCases)
    func defaultAndCustomHeadersReachTheServer(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        #expect(downloader.value(forHTTPHeaderField: "accept") == "image/avif,image/jxl,image/webp,image/*,*/*;q=0.8")
        downloader.setValue("42", forHTTPHeaderField: "X-Custom")
        downloader.setValue(nil, forHTTPHeaderField: "User-Agent")
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/headers"), options: .avoidDecodeImage, completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        let sent = try #require(server.requests(for: "/headers").first?.request)
        #expect(sent.header("Accept") == "image/avif,image/jxl,image/webp,image/*,*/*;q=0.8")
        #expect(sent.header("X-Custom") == "42")
        #expect(sent.header("User-Agent") == nil)

        let fresh = server.downloader()
        fresh.downloadImage(
            with: server.url("/headers?2"), options: .avoidDecodeImage, completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        let second = try #require(server.requests(for: "/headers").last?.request)
        #expect(second.header("User-Agent")?.hasPrefix("WebImage/") == true)
        #expect(second.header("User-Agent")?.contains("libcurl/") == true)
    }

    @Test(arguments: Wire.allCases)
    func avoidDecodeImageCompletesWithDataOnly(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/files/astronaut-lossy.webp"), options: .avoidDecodeImage,
            completed: recorder.completion())
        downloader.downloadImage(
            with: server.url("/files/random-bytes.png"), options: .avoidDecodeImage,
            completed: recorder.completion(1))
        #expect(recorder.waitForTerminal(2))
        let webp = try #require(recorder.terminals(tag: 0).first)
        #expect(webp.image == nil && webp.error == nil)
        #expect(webp.data == (try Fixtures.corpusFile("astronaut-lossy.webp")))
        #expect(recorder.terminals(tag: 1).first?.error == nil)
    }

    @Test(arguments: Wire.allCases)
    func idleTimeoutOnAHangingServer(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader { $0.downloadTimeout = 1 }
        let recorder = CallbackRecorder()
        let started = Date()
        downloader.downloadImage(with: server.url("/hang"), completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.first?.error?.code == .timedOut)
        #expect(Date().timeIntervalSince(started) >= 0.9)
    }

    @Test(arguments: Wire.allCases)
    func credentialsAnswerTheBasicChallenge(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let path = "/auth/basic/ann/secret/pixel-1x1.png"
        let recorder = CallbackRecorder()
        let anonymous = server.downloader()
        anonymous.downloadImage(with: server.url(path), completed: recorder.completion(1))
        let authorized = server.downloader {
            $0.username = "ann"
            $0.password = "secret"
            $0.allowsCredentialsOverPlainHTTP = true  // HTTP/1.1 runs over plain http here
        }
        #expect(recorder.waitForTerminal(1))
        authorized.downloadImage(with: server.url(path), completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 1).first?.error?.statusCode == 401)
        #expect(recorder.terminals(tag: 2).first?.image?.width == 1)
    }

    @Test(arguments: Wire.allCases)
    func cookiesOnlyWithHandleCookies(wire: Wire) throws {
        let server = try wire.startServer()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/cookies/set?jar=on"), options: [.handleCookies, .avoidDecodeImage],
            completed: recorder.completion(1))
        #expect(recorder.waitForTerminal(1))
        downloader.downloadImage(
            with: server.url("/cookies/echo"), options: .avoidDecodeImage, completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(1))
        downloader.downloadImage(
            with: server.url("/cookies/echo?again"), options: [.handleCookies, .avoidDecodeImage],
            completed: recorder.completion(3))
        #expect(recorder.waitForTerminal(1))
        let echoes = server.requests(for: "/cookies/echo").map { $0.request.header("Cookie") }
        #expect(echoes.count == 2)
        #expect(echoes.first == .some(nil))
        #expect(echoes.last == "jar=on")
    }

    @Test(arguments: Wire.allCases)
    func allowInvalidSSLCertificatesIsPerRequest(wire: Wire) throws {
        let tlsServer = try wire.startTLSServer()
        defer { tlsServer.shutdown() }
        let downloader = ImageDownloader()
        let recorder = CallbackRecorder()
        downloader.downloadImage(with: tlsServer.url("/files/pixel-1x1.png"), completed: recorder.completion(1))
        #expect(recorder.waitForTerminal(1))
        downloader.downloadImage(
            with: tlsServer.url("/files/pixel-1x1.png"), options: .allowInvalidSSLCertificates,
            completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(1))
        // The easy handle of the insecure request goes back to the pool: the next request must verify again.
        downloader.downloadImage(with: tlsServer.url("/files/pixel-1x1.png?again"), completed: recorder.completion(3))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 1).first?.error?.code == .sslFailure)
        #expect(recorder.terminals(tag: 2).first?.image?.width == 1)
        #expect(recorder.terminals(tag: 3).first?.error?.code == .sslFailure)
    }
}
