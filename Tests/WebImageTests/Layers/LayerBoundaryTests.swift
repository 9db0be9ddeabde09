import Foundation
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
        let head = ImageDownloadResponse(url: Self.url, statusCode: 302, headers: HTTPHeaders())
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
