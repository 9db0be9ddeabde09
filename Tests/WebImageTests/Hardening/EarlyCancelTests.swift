import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// A cancel that reaches the transport before the transfer does (here: from the first progress callback,
/// which runs before the transfer is handed to the transport thread) still stops it and frees the slot.
@Suite(.timeLimit(.minutes(3))) struct EarlyCancelTests {
    @Test func aCancelFromTheFirstProgressCallbackIsNeverLostInAThousandRuns() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        // A lost cancel would leave its transfer on /hang, holding a slot until the idle timeout.
        let downloader = server.downloader { $0.downloadTimeout = 60 }
        let count = 1000
        let tokens = Locked<[Int: ImageDownloadToken]>([:])
        let recorder = CallbackRecorder()
        downloader.isSuspended = true
        for index in 0..<count {
            let token = downloader.downloadImage(
                with: server.url("/hang?n=\(index)"),
                progress: { received, expected, _ in
                    if received == 0 && expected == -1 { tokens.value[index]?.cancel() }
                },
                completed: recorder.completion(index))
            tokens.update { $0[index] = token }
        }
        downloader.isSuspended = false
        #expect(recorder.waitForTerminal(count, seconds: 60))
        downloader.drainCallbacks()
        for index in 0..<count {
            let codes = recorder.terminals(tag: index).map { $0.error?.code }
            #expect(codes == [.cancelled], "caller \(index): \(codes)")
        }
        #expect(poll(seconds: 10) { downloader.currentDownloadCount == 0 })
        #expect(poll(seconds: 10) { downloader.transportForTesting?.activeTransferCount == 0 })
        #expect(server.count(for: "/hang") == 0, "\(server.count(for: "/hang")) cancelled transfers still ran")
    }
}
