import Foundation
import ServerTestSupport
import Synchronization
import TestSupport
import Testing

@testable import WebImage

/// A subclass that counts how many operations were started, as a user's logging subclass might.
final class CountingOperation: ImageDownloaderOperation, @unchecked Sendable {
    // @unchecked Sendable: adds only an atomic counter to the superclass.
    static let started = Atomic<Int>(0)

    override func start() {
        Self.started.add(1, ordering: .relaxed)
        super.start()
    }
}

@Suite(.timeLimit(.minutes(5))) struct OperationClassTests {
    @Test func configOperationClassIsInstantiated() throws {
        let server = try Fixtures.server()
        var config = ImageDownloaderConfig()
        config.operationClass = CountingOperation.self
        let downloader = ImageDownloader(config: config)
        let before = CountingOperation.started.load(ordering: .relaxed)
        let recorder = CallbackRecorder()
        downloader.downloadImage(with: server.url("/files/pixel-1x1.png"), completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.first?.image?.width == 1)
        #expect(CountingOperation.started.load(ordering: .relaxed) == before + 1)
    }
}
