import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// `ImageDownloadContext`'s own limits lower the configuration's for their caller alone: callers of the
/// same URL without them, at the same time, still get what the configuration allows.
@Suite(.timeLimit(.minutes(2))) struct ContextLimitTests {
    @Test func aContextsBodyLimitStopsItsOwnTransferOnly() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        var limited = ImageDownloadContext()
        limited.maximumResponseSize = 1000
        let url = server.url("/bytes/5000")
        downloader.downloadImage(
            with: url, options: .avoidDecodeImage, context: limited, completed: recorder.completion(1))
        downloader.downloadImage(with: url, options: .avoidDecodeImage, completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(2))
        #expect(recorder.terminals(tag: 1).first?.error?.code == .responseTooLarge)
        #expect(recorder.terminals(tag: 2).first?.data?.count == 5000)
        // A larger value than the configuration's changes nothing.
        limited.maximumResponseSize = .max
        downloader.downloadImage(
            with: server.url("/bytes/5000?again"), options: .avoidDecodeImage, context: limited,
            completed: recorder.completion(3))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 3).first?.data?.count == 5000)
    }

    @Test func aContextsPixelLimitRefusesItsOwnDecodeOnly() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let downloader = server.downloader()
        let recorder = CallbackRecorder()
        var limited = ImageDownloadContext()
        limited.maximumImagePixels = 0
        let url = server.url("/pixel.png")
        downloader.downloadImage(with: url, context: limited, completed: recorder.completion(1))
        downloader.downloadImage(with: url, completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(2))
        let refused = recorder.terminals(tag: 1).first?.error
        #expect(
            (refused?.underlying as? ImageCodecError)?.limit == .maximumImagePixels, "\(String(describing: refused))")
        #expect(recorder.terminals(tag: 2).first?.image?.width == 1)
    }
}
