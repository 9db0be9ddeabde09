import Foundation
import TestSupport
import Testing

@testable import WebImage
@testable import WebImageTransport

/// Where the lower layers' errors become the downloader's: `ImageDownloaderError(transportError:)` for the
/// transport, `ImageDownloaderError.codecFailure` for the codecs.
@Suite(.timeLimit(.minutes(2))) struct LayerBoundaryTests {
    static let url = URL(fileURLWithPath: "/nothing")

    @Test("Each transport failure becomes the downloader code users know, with its message, URL and curl code")
    func transportKinds() {
        let expected: [(TransportError.Kind, ImageDownloaderError.Code)] = [
            (.setupFailed, .invalidDownloadOperation), (.invalidURL, .invalidURL), (.failed, .transport),
            (.timedOut, .timedOut), (.cannotConnect, .cannotConnect), (.cannotResolveHost, .cannotResolveHost),
            (.sslFailure, .sslFailure), (.tooManyRedirects, .tooManyRedirects),
            (.responseTooLarge, .responseTooLarge), (.connectionLost, .connectionLost),
            (.unsupportedProtocol, .unsupportedProtocol), (.badContentEncoding, .badContentEncoding),
            (.destinationNotAllowed, .destinationNotAllowed), (.cancelled, .cancelled),
        ]
        let head = TransferResponse(url: Self.url, statusCode: 302, headers: HTTPHeaders())
        for (kind, code) in expected {
            let error = ImageDownloaderError(
                transportError: TransportError(kind, "what happened", url: Self.url, response: head, curlCode: 7))
            #expect(error.code == code, "\(kind)")
            #expect(error.message == "what happened")
            #expect(error.url == Self.url)
            #expect(error.curlCode == 7)
            #expect(error.statusCode == 302 && error.response == head)
        }
    }

    @Test("A transfer the downloader ended reports the downloader's own error; any other reason is `transport`")
    func abortedTransfers() {
        let own = ImageDownloaderError(.invalidDownloadStatusCode, "HTTP status 404 is not acceptable", statusCode: 404)
        let reported = ImageDownloaderError(transportError: .aborted(by: own, url: Self.url))
        #expect(reported.code == .invalidDownloadStatusCode && reported.statusCode == 404)
        #expect(reported.message == own.message && reported.url == Self.url)

        struct Elsewhere: Error {}
        let foreign = ImageDownloaderError(transportError: .aborted(by: Elsewhere(), url: Self.url))
        #expect(foreign.code == .transport)
        #expect(foreign.underlying is Elsewhere)
    }

    @Test("Only WebImageTransport imports libcurl: every other module of Sources and Examples goes through it")
    func onlyTheTransportImportsCurl() throws {
        let root = Fixtures.packageRoot
        var importers: [String] = []
        var scanned = 0
        for folder in ["Sources", "Examples"] {
            let base = root.appendingPathComponent(folder)
            guard let files = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else {
                Issue.record("cannot list \(base.path)")
                continue
            }
            for case let file as URL in files where file.pathExtension == "swift" {
                let relative = String(file.path.dropFirst(root.path.count + 1))
                scanned += 1
                if relative.hasPrefix("Sources/WebImageTransport/") { continue }
                let text = try String(contentsOf: file, encoding: .utf8)
                if text.split(whereSeparator: \.isNewline).contains(where: Self.importsCurl) {
                    importers.append(relative)
                }
            }
        }
        // The scan must have found the sources, or an empty list would prove nothing.
        #expect(scanned > 100, "only \(scanned) Swift files under \(root.path)")
        #expect(importers.sorted() == [], "libcurl is imported outside WebImageTransport")
    }

    /// Whether `line` imports the CCurl module, in any form Swift accepts: `import CCurl`,
    /// `@preconcurrency import CCurl`, `private import CCurl`, `import func CCurl.curl_easy_init`.
    static func importsCurl(_ line: Substring) -> Bool {
        var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
        let modifiers: Set<Substring> = ["public", "package", "internal", "fileprivate", "private"]
        while let first = words.first, first.hasPrefix("@") || modifiers.contains(first) {
            words = words.dropFirst()
        }
        guard words.first == "import" else { return false }
        words = words.dropFirst()
        let kinds: Set<Substring> = ["typealias", "struct", "class", "enum", "protocol", "let", "var", "func"]
        if let kind = words.first, kinds.contains(kind) { words = words.dropFirst() }
        guard let module = words.first?.split(separator: ".").first else { return false }
        return module == "CCurl"
    }

    @Test("The import check sees each form of a libcurl import and nothing else")
    func curlImportForms() {
        for line in [
            "import CCurl", "@preconcurrency import CCurl", "private import CCurl", "  import CCurl",
            "import func CCurl.curl_easy_init", "@_implementationOnly import CCurl",
        ] {
            #expect(Self.importsCurl(Substring(line)), "\(line)")
        }
        for line in ["import CCurlish", "// import CCurl", "import WebImageTransport", "let CCurl = 1"] {
            #expect(!Self.importsCurl(Substring(line)), "\(line)")
        }
    }

    @Test("An undecodable body is badImageData with the codec's message, and the ImageCodecError underneath")
    func codecErrors() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("layer-boundary-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let page = folder.appendingPathComponent("page.png")
        try Data("<html>an error page</html>".utf8).write(to: page)

        var config = ImageDownloaderConfig.default
        config.allowedProtocols = ["file"]
        let downloader = ImageDownloader(config: config)
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        do {
            _ = try await downloader.image(for: page)
            Issue.record("an HTML page decoded")
        } catch {
            #expect(error.code == .badImageData)
            let codec = try #require(error.underlying as? ImageCodecError)
            #expect(codec.code == .badImageData)
            #expect(error.message == codec.message)
            #expect(error.message.contains("not in a format any registered decoder recognises"))
            #expect(error.url == page)
        }
    }

    @Test("A transformer that cannot apply its parameters fails the download with its reason")
    func transformerErrors() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("layer-boundary-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("pixel.png")
        let pixel = Image(
            format: .png, width: 1, height: 1,
            frames: [ImageFrame(width: 1, height: 1, bytesPerRow: 4, pixels: [10, 20, 30, 255])])
        try PNGEncoder().encode(pixel).write(to: file)

        var config = ImageDownloaderConfig.default
        config.allowedProtocols = ["file"]
        let downloader = ImageDownloader(config: config)
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        var context = ImageDownloadContext()
        context.transformer = ImageTransformer.crop(PixelRect(x: 5, y: 5, width: 2, height: 2))
        do {
            _ = try await downloader.image(for: file, context: context)
            Issue.record("a crop outside the image succeeded")
        } catch {
            #expect(error.code == .badImageData)
            #expect((error.underlying as? ImageCodecError)?.code == .invalidParameters)
            #expect(error.message.hasPrefix("the transformer "))
            #expect(error.message.contains("leaves nothing of a 1×1 image"))
        }
    }
}
