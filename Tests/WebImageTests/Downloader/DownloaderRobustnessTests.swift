import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage
@testable import WebImageTransport

/// The three swift-corelibs-foundation OperationQueue crash patterns (docs/ARCHITECTURE.md, "Who owns what"), driven through the
/// public API 200 times each, plus a stress run and resource release.
@Suite(.timeLimit(.minutes(5))) struct DownloaderRobustnessTests {
    let server: LocalImageServer
    init() throws { server = try Fixtures.server() }

    private func lifo(max: Int) -> ImageDownloader {
        var config = ImageDownloaderConfig()
        config.executionOrder = .lifo
        config.maxConcurrentDownloads = max
        return ImageDownloader(config: config)
    }

    /// (a) a dependency added to an operation that may already be executing, which is then released
    /// before its dependency finishes: LIFO adds each new request's gate to the newest waiting operation,
    /// which races with that operation starting.
    @Test func dependencyOnARunningOperationThatIsReleasedEarly() throws {
        let recorder = CallbackRecorder()
        for round in 0..<200 {
            let downloader = lifo(max: 2)
            downloader.downloadImage(
                with: server.url("/files/pixel-1x1.png?a=\(round)"), completed: recorder.completion())
            downloader.downloadImage(
                with: server.url("/files/pixel-1x1.png?b=\(round)&delay=20"), completed: recorder.completion())
            downloader.downloadImage(
                with: server.url("/files/pixel-1x1.png?c=\(round)"), completed: recorder.completion())
        }
        #expect(recorder.waitForTerminal(600, seconds: 120))
        #expect(recorder.terminals.count == 600)
    }

    /// (b) an operation with a dependency is cancelled and released before the dependency finishes.
    /// The queue is suspended, so the older request's dependency (the newer request's start gate) is
    /// certainly pending when the older one is cancelled; resuming runs the cancelled one first.
    @Test func cancelledDependentReleasedBeforeItsDependency() throws {
        let recorder = CallbackRecorder()
        var downloaders: [ImageDownloader] = []  // a dropped downloader cancels its work: keep them
        for round in 0..<200 {
            let downloader = lifo(max: 1)
            downloaders.append(downloader)
            downloader.isSuspended = true
            let older = downloader.downloadImage(
                with: server.url("/files/pixel-1x1.png?o=\(round)"), completed: recorder.completion(1))
            let newer = downloader.downloadImage(
                with: server.url("/files/pixel-1x1.png?n=\(round)"), completed: recorder.completion(2))
            older?.cancel()
            if round % 2 == 1 { newer?.cancel() }
            downloader.isSuspended = false
        }
        #expect(recorder.waitForTerminal(400, seconds: 120))
        #expect(recorder.terminals(tag: 1).count == 200)
        #expect(recorder.terminals(tag: 1).allSatisfy { $0.error?.code == .cancelled })
        let newer = recorder.terminals(tag: 2)
        #expect(newer.count == 200)
        #expect(newer.filter { $0.error?.code == .cancelled }.count == 100)
        #expect(newer.filter { $0.image != nil }.count == 100)
        downloaders.removeAll()
    }

    /// (c) an operation the queue never started is cancelled: it must only finish after the queue starts it.
    @Test func cancelledBeforeStartFinishesOnlyAfterStart() throws {
        let recorder = CallbackRecorder()
        for round in 0..<200 {
            let downloader = ImageDownloader()
            downloader.isSuspended = true
            let token = downloader.downloadImage(
                with: server.url("/files/pixel-1x1.png?s=\(round)"), completed: recorder.completion())
            token?.cancel()
            if round % 2 == 0 { downloader.cancelAllDownloads() }
            downloader.isSuspended = false
        }
        #expect(recorder.waitForTerminal(200, seconds: 60))
        #expect(recorder.terminals.allSatisfy { $0.error?.code == .cancelled })
        #expect(server.count(for: "/files/pixel-1x1.png") == 0)
    }

    @Test func tenThousandRequestsOverAHundredURLsWithRandomCancels() throws {
        var config = ImageDownloaderConfig()
        config.maxConcurrentDownloads = 6
        let downloader = ImageDownloader(config: config)
        let recorder = CallbackRecorder()
        downloader.isSuspended = true
        let cancelled = Locked(0)
        let group = DispatchGroup()
        for thread in 0..<4 {
            DispatchQueue.global().async(group: group) {
                var generator = SystemRandomNumberGenerator()
                for index in 0..<2500 {
                    let tag = thread * 2500 + index
                    let url = server.url("/files/pixel-1x1.png?u=\(tag % 100)")
                    let token = downloader.downloadImage(
                        with: url, options: .avoidDecodeImage, completed: recorder.completion(tag))
                    if Int.random(in: 0..<5, using: &generator) == 0 {
                        token?.cancel()
                        cancelled.update { $0 += 1 }
                    }
                }
            }
        }
        group.wait()
        downloader.isSuspended = false
        #expect(recorder.waitForTerminal(10_000, seconds: 120))
        downloader.drainCallbacks()
        let terminals = recorder.terminals
        #expect(terminals.count == 10_000)
        #expect(Set(terminals.map(\.tag)).count == 10_000, "a caller got two terminal callbacks or none")
        #expect(terminals.filter { $0.error?.code == .cancelled }.count == cancelled.value)
        #expect(server.count(for: "/files/pixel-1x1.png") <= 100)
        #expect(poll { downloader.tableCount == 0 })
        #expect(poll { downloader.currentDownloadCount == 0 })
    }

    @Test func invalidatedDownloaderFreesItsCurlHandles() throws {
        let downloader = ImageDownloader()
        let recorder = CallbackRecorder()
        // A finished download leaves its easy handle idle in the transport's pool.
        let first = CallbackRecorder()
        downloader.downloadImage(with: server.url("/files/pixel-1x1.png"), completed: first.completion())
        #expect(first.waitForTerminal(1))
        #expect(poll { downloader.transportForTesting?.liveHandleCount == 1 })
        downloader.downloadImage(with: server.url("/hang"), completed: recorder.completion())
        #expect(server.wait { $0.count(for: "/hang") == 1 })
        downloader.invalidate(cancelPendingDownloads: true)
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.first?.error?.code == .cancelled)
        #expect(poll { downloader.isTransportStopped })
        // Every easy handle is freed, the pooled idle ones included.
        #expect(poll { downloader.transportForTesting?.liveHandleCount == 0 })
        let late = Locked<ImageDownloaderError?>(nil)
        let token = downloader.downloadImage(with: server.url("/files/pixel-1x1.png")) { _, _, error, _ in
            late.value = error as? ImageDownloaderError
        }
        #expect(token == nil)
        #expect(late.value?.code == .invalidDownloadOperation)
    }

    @Test func waitUntilInvalidatedReturnsOnceRunningWorkEndedAndTheTransportStopped() throws {
        let downloader = ImageDownloader()
        #expect(!downloader.waitUntilInvalidated(timeout: 0.1), "a live downloader reported itself stopped")
        let recorder = CallbackRecorder()
        // About 0.5 s of body: still arriving when the downloader is invalidated.
        downloader.downloadImage(
            with: server.url("/drip-bytes?total=5000&chunk=1000&interval=100"), options: .avoidDecodeImage,
            completed: recorder.completion())
        #expect(server.wait { $0.count(for: "/drip-bytes") == 1 })
        downloader.invalidate(cancelPendingDownloads: false)
        #expect(downloader.waitUntilInvalidated(timeout: 30))
        // No polling: when the wait returns, the thread has stopped (the completion itself runs on the
        // callback queue, which the wait does not cover).
        #expect(downloader.isTransportStopped)
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.first?.error == nil, "the running download was not allowed to finish")
        #expect(recorder.terminals.first?.data?.count == 5000)
    }

    @Test func droppedDownloaderCancelsItsWorkAndFreesItsHandles() throws {
        let recorder = CallbackRecorder()
        weak var weakDownloader: ImageDownloader?
        var transferHandle: CurlTransport?
        do {
            let downloader = ImageDownloader()
            weakDownloader = downloader
            downloader.downloadImage(with: server.url("/hang"), completed: recorder.completion())
            #expect(server.wait { $0.count(for: "/hang") == 1 })
            transferHandle = downloader.transportForTesting
        }
        #expect(weakDownloader == nil)
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.first?.error?.code == .cancelled)
        #expect(poll { transferHandle?.isStopped == true })
        #expect(poll { transferHandle?.activeTransferCount == 0 })
        #expect(poll { transferHandle?.liveHandleCount == 0 })
        transferHandle = nil
    }
}
