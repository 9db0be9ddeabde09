import Foundation
import LocalImageServer
import Locking
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// `ImageDownloadContext.stepObserver`: each caller hears of every step its image went through, once, in
/// order and with the times they ran, shared steps included; a step that failed comes with its error.
@Suite(.timeLimit(.minutes(5))) struct StepObserverTests {
    /// The steps one caller heard of.
    final class StepLog: ImageDownloadStepObserving {
        let steps = Locked([(step: ImageDownloadStep, start: Date, end: Date, failed: Bool)]())

        func downloadStep(_ step: ImageDownloadStep, ranFrom start: Date, to end: Date, error: (any Error)?) {
            steps.update { $0.append((step, start, end, error != nil)) }
        }
    }

    struct FailingTransformer: ImageTransforming {
        var key: String { "failing" }
        func transform(_ image: Image) throws -> Image { throw ImageCodecError(.badImageData, "refused") }
    }

    @Test("callers sharing a transfer, decode, transform and encode each hear all four; a failed step says so")
    func everyCallerHearsItsSteps() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let downloader = server.downloader()
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        let recorder = CallbackRecorder()
        let url = server.url("/files/horse-rgba.png?gate=steps")
        let logs = [StepLog(), StepLog(), StepLog()]
        for (tag, log) in logs.enumerated() {
            var context = ImageDownloadContext()
            context.transformer =
                tag == 2 ? FailingTransformer() : ImageTransformer.resize(to: PixelSize(width: 40, height: 40))
            context.encoder = PNGEncoder()
            context.stepObserver = log
            downloader.downloadImage(with: url, context: context, completed: recorder.completion(tag))
        }
        server.openGate("steps")
        #expect(recorder.waitForTerminal(3, seconds: 120))
        for log in logs.prefix(2) {
            let steps = log.steps.value
            #expect(steps.map(\.step) == [.fetch, .decode, .transform, .encode])
            #expect(steps.allSatisfy { $0.start <= $0.end && !$0.failed })
            #expect(zip(steps, steps.dropFirst()).allSatisfy { $0.end <= $1.start })
        }
        let failed = logs[2].steps.value
        #expect(failed.map(\.step) == [.fetch, .decode, .transform])
        #expect(failed.map(\.failed) == [false, false, true])
        #expect(recorder.terminals(tag: 2).first?.error?.code == .badImageData)
    }
}
