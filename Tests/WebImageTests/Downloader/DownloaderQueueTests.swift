import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage
@testable import WebImageTransport

@Suite(.timeLimit(.minutes(5))) struct DownloaderQueueTests {
    let server: LocalImageServer
    init() throws { server = try Fixtures.server() }

    private func downloader(max: Int, order: ImageDownloaderExecutionOrder = .fifo) -> ImageDownloader {
        var config = ImageDownloaderConfig()
        config.maxConcurrentDownloads = max
        config.executionOrder = order
        return ImageDownloader(config: config)
    }

    /// The numbers in `?n=` of the requests the server saw, in arrival order.
    private func arrivals(_ path: String) -> [Int] {
        server.requests(for: path).compactMap { $0.request.queryValue("n").flatMap(Int.init) }
    }

    @Test func fifoWithOneSlotRunsInRequestOrder() throws {
        let downloader = downloader(max: 1)
        let recorder = CallbackRecorder()
        downloader.isSuspended = true
        for n in 1...14 {
            downloader.downloadImage(with: server.url("/files/pixel-1x1.png?n=\(n)"), completed: recorder.completion(n))
        }
        #expect(downloader.currentDownloadCount == 14)
        // A request through another downloader makes a full round trip to the same server meanwhile.
        let probe = CallbackRecorder()
        ImageDownloader().downloadImage(with: server.url("/pixel.png"), completed: probe.completion())
        #expect(probe.waitForTerminal(1))
        #expect(server.count(for: "/files/pixel-1x1.png") == 0, "a suspended downloader sent requests")
        downloader.isSuspended = false
        #expect(recorder.waitForTerminal(14))
        #expect(arrivals("/files/pixel-1x1.png") == Array(1...14))
        #expect(server.maxInFlight == 1)
    }

    @Test func lifoWithOneSlotRunsNewestFirstIncludingLateArrivals() throws {
        let downloader = downloader(max: 1, order: .lifo)
        let recorder = CallbackRecorder()
        let order = Locked<[Int]>([])
        // 1 and 7 wait at gates: 1 until 2–7 are queued, 7 until 8–14 are.
        @Sendable func request(_ n: Int) {
            let gate = n == 1 || n == 7 ? "&gate=\(n)" : ""
            downloader.downloadImage(with: server.url("/files/pixel-1x1.png?n=\(n)\(gate)")) {
                _, _, _, finished in
                if finished { order.update { $0.append(n) } }
                recorder.completion(n)(nil, nil, nil, finished)
            }
        }
        // 8–14 are added while 7 runs, from the start notification of 7's operation.
        let port = server.port
        let observer = NotificationCenter.default.addObserver(forName: .imageDownloadStart, object: nil, queue: nil) {
            note in
            guard let operation = note.object as? ImageDownloaderOperation, operation.request.url.port == port,
                operation.request.url.query?.hasPrefix("n=7&") == true
            else { return }
            for n in 8...14 { request(n) }
            server.openGate("7")
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        request(1)
        #expect(server.wait { $0.count(for: "/files/pixel-1x1.png") == 1 })
        for n in 2...7 { request(n) }
        server.openGate("1")
        #expect(recorder.waitForTerminal(14))
        #expect(order.value == [1, 7, 14, 13, 12, 11, 10, 9, 8, 6, 5, 4, 3, 2])
    }

    @Test func lifoWithThreeSlotsKeepsEverySlotBusyNewestFirst() throws {
        let downloader = downloader(max: 3, order: .lifo)
        let recorder = CallbackRecorder()
        downloader.isSuspended = true
        for n in 1...20 {
            downloader.downloadImage(
                with: server.url("/files/pixel-1x1.png?n=\(n)&gate=\(n)"), completed: recorder.completion(n))
        }
        downloader.isSuspended = false
        // Every response waits at its own gate. Each round: the slots fill up, then the oldest request the
        // server holds is let go, which frees one slot for the next waiting download.
        for released in 0..<20 {
            #expect(
                server.wait { $0.count(for: "/files/pixel-1x1.png") == min(released + 3, 20) },
                "round \(released): \(arrivals("/files/pixel-1x1.png"))")
            guard let oldest = arrivals("/files/pixel-1x1.png").dropFirst(released).first else { break }
            server.openGate("\(oldest)")
        }
        #expect(recorder.waitForTerminal(20))
        let seen = arrivals("/files/pixel-1x1.png")
        #expect(seen.count == 20)
        #expect(Set(seen.prefix(3)) == [18, 19, 20], "first three started: \(seen.prefix(3))")
        // Newest first: a request never starts before one that is 3 or more newer than it.
        for (position, n) in seen.enumerated() {
            let later = seen[(position + 1)...]
            #expect(!later.contains { $0 >= n + 3 }, "\(n) started before a newer request: \(seen)")
        }
        #expect(server.maxInFlight == 3, "LIFO must keep all slots busy, saw at most \(server.maxInFlight)")
    }

    /// Finished operations must not be kept alive by the downloader's bookkeeping: in LIFO mode the
    /// stack of waiting operations once held every operation (and through it the transport thread)
    /// forever, found by LeakSanitizer in `webimage demo`.
    @Test(arguments: [ImageDownloaderExecutionOrder.fifo, .lifo])
    func operationsAndTheTransportAreReleasedOnceDone(order: ImageDownloaderExecutionOrder) throws {
        final class WeakOperations: @unchecked Sendable {
            // @unchecked Sendable: `list` is only touched under `lock`.
            private let lock = NSLock()
            private var list: [() -> ImageDownloaderOperation?] = []
            func add(_ operation: ImageDownloaderOperation) {
                lock.withLock { list.append { [weak operation] in operation } }
            }
            var total: Int { lock.withLock { list.count } }
            var alive: Int { lock.withLock { list.filter { $0() != nil }.count } }
        }
        let operations = WeakOperations()
        let tag = "release-\(order)"
        let port = server.port
        let observer = NotificationCenter.default.addObserver(forName: .imageDownloadStart, object: nil, queue: nil) {
            note in
            guard let operation = note.object as? ImageDownloaderOperation, operation.request.url.port == port,
                operation.request.url.query?.contains(tag) == true
            else { return }
            operations.add(operation)
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        weak var transport: CurlTransport?
        do {
            let downloader = downloader(max: 1, order: order)
            transport = downloader.transportForTesting
            let recorder = CallbackRecorder()
            downloader.isSuspended = true
            for n in 1...5 {
                let url = server.url("/files/pixel-1x1.png?n=\(n)&\(tag)")
                downloader.downloadImage(with: url, completed: recorder.completion(n))
            }
            downloader.isSuspended = false
            #expect(recorder.waitForTerminal(5))
        }
        #expect(operations.total == 5)
        #expect(poll { operations.alive == 0 }, "\(operations.alive) of 5 operations still alive")
        #expect(poll { transport == nil }, "the transport outlived its downloader")
    }

    @Test func priorityReordersWaitingOperations() throws {
        let downloader = downloader(max: 1)
        let recorder = CallbackRecorder()
        downloader.isSuspended = true
        downloader.downloadImage(
            with: server.url("/files/pixel-1x1.png?n=1"), options: .lowPriority, completed: recorder.completion(1))
        downloader.downloadImage(with: server.url("/files/pixel-1x1.png?n=2"), completed: recorder.completion(2))
        downloader.downloadImage(
            with: server.url("/files/pixel-1x1.png?n=3"), options: [.highPriority, .lowPriority],
            completed: recorder.completion(3))
        downloader.isSuspended = false
        #expect(recorder.waitForTerminal(3))
        #expect(arrivals("/files/pixel-1x1.png") == [3, 2, 1])
    }

    @Test func maxConcurrentDownloadsBoundsTheServerAndIsLive() throws {
        let downloader = downloader(max: 3)
        let recorder = CallbackRecorder()
        for n in 0..<20 {
            downloader.downloadImage(
                with: server.url("/files/pixel-1x1.png?n=\(n)&gate=\(n)"), completed: recorder.completion(n))
        }
        #expect(server.wait { $0.inFlight == 3 })
        // Let three finish: each is replaced by a waiting download while the limit is 3.
        for released in 0..<3 {
            let oldest = arrivals("/files/pixel-1x1.png")[released]
            server.openGate("\(oldest)")
            #expect(recorder.waitForTerminal(1))
            #expect(server.wait { $0.count(for: "/files/pixel-1x1.png") == 4 + released && $0.inFlight == 3 })
        }
        #expect(server.maxInFlight == 3, "the server saw more than 3 downloads at once")
        downloader.maxConcurrentDownloads = 5
        #expect(server.wait { $0.inFlight == 5 }, "raising the limit while running did not start more downloads")
        for n in 0..<20 { server.openGate("\(n)") }
        #expect(recorder.waitForTerminal(17))
        #expect(server.maxInFlight == 5)
        #expect(downloader.maxConcurrentDownloads == 5)
    }
}
