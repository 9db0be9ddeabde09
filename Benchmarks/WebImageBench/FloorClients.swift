import Dispatch
import Foundation
import Synchronization
@_spi(Benchmarks) import WebImage

// The two building blocks the downloader's design puts around every transfer, measured alone, without a network
// and without any WebImage code: what a file costs before the downloader does anything of its own.
// They show how much of the "≤ 25 µs CPU per file" budget the required architecture spends by itself.
// (The library's locks are `Locking.Lock`, on pthread mutexes, for ThreadSanitizer; here `Mutex`, which
// costs the same order uncontended, since the benchmarks are a separate package that sees only products.)

/// The state an asynchronous operation shaped like `ImageDownloaderOperation` keeps: a phase behind a
/// lock, changed before the KVO-style `isExecuting` / `isFinished` calls corelibs' queue listens to.
private class FloorOperation: Operation, @unchecked Sendable {
    // @unchecked Sendable: `phase` is behind its lock; subclasses keep only immutable properties.
    private enum Phase { case waiting, executing, finished }
    private let phase = Mutex(Phase.waiting)

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { phase.withLock { $0 == .executing } }
    override var isFinished: Bool { phase.withLock { $0 == .finished } }

    /// Call first thing in `start()`.
    func markExecuting() {
        phase.withLock { $0 = .executing }
        willChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isExecuting")
    }

    /// Call once the work is done, from any thread.
    func markFinished() {
        phase.withLock { $0 = .finished }
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }
}

/// `start()` hands the work to another thread (the transport thread in the library), which finishes it.
private final class HopOperation: FloorOperation, @unchecked Sendable {
    // @unchecked Sendable: see FloorOperation; `worker` and `done` are immutable.
    private let worker: DispatchQueue
    private let done: @Sendable () -> Void

    init(worker: DispatchQueue, done: @escaping @Sendable () -> Void) {
        self.worker = worker
        self.done = done
    }

    override func start() {
        markExecuting()
        worker.async { [self] in
            markFinished()
            done()
        }
    }
}

/// `items` operations on one `OperationQueue` with `parallel` slots, all added at once, each finished
/// from a serial worker queue: corelibs' scheduling plus one thread hop per file.
func runOperationFloorClient(items: Int, parallel: Int) -> Sample {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = parallel
    let worker = DispatchQueue(label: "floor.worker")
    let group = DispatchGroup()
    let watch = Stopwatch()
    for _ in 0..<items {
        group.enter()
        queue.addOperation(HopOperation(worker: worker, done: { group.leave() }))
    }
    group.wait()
    return Sample(
        wall: watch.wallSeconds, cpu: watch.cpuSeconds, maxRSSKiB: Stopwatch.peakRSSKiB(), items: items, bytes: 0)
}

/// The four notifications of a download (Start, ReceiveResponse, Stop, Finish), as the floors post them.
private let floorNotifications: [Notification.Name] = [
    .init("floor.start"), .init("floor.response"), .init("floor.stop"), .init("floor.finish"),
]

/// Stands in for the operation a notification names as its object.
private final class PostedObject: Sendable {}

/// Four `NotificationCenter` posts per file (start, response, stop, finish), each sent asynchronously on
/// a serial callback queue as the library does, with nobody observing them.
func runNotificationFloorClient(items: Int) -> Sample {
    let callbacks = DispatchQueue(label: "floor.callbacks")
    let group = DispatchGroup()
    let watch = Stopwatch()
    for _ in 0..<items {
        let object = PostedObject()
        for name in floorNotifications {
            group.enter()
            callbacks.async {
                NotificationCenter.default.post(name: name, object: object)
                group.leave()
            }
        }
    }
    group.wait()
    return Sample(
        wall: watch.wallSeconds, cpu: watch.cpuSeconds, maxRSSKiB: Stopwatch.peakRSSKiB(), items: items, bytes: 0)
}

/// A serial callback queue reached through one coalescing list: a block sent while a drain is pending
/// joins it instead of waking the queue again (what WebImage's `QueueChannel` does, without its holding
/// of hops until the end of a transport loop turn). The cheapest way we know to run many small blocks in
/// order on one queue.
private final class CoalescingQueue: Sendable {
    private struct Pending {
        var blocks: [@Sendable () -> Void] = []
        var scheduled = false
    }
    private let queue = DispatchQueue(label: "floor.callbacks")
    private let pending = Mutex(Pending())

    func async(_ block: @escaping @Sendable () -> Void) {
        let schedule = pending.withLock { pending -> Bool in
            pending.blocks.append(block)
            defer { pending.scheduled = true }
            return !pending.scheduled
        }
        guard schedule else { return }
        queue.async { [self] in
            while true {
                let blocks = pending.withLock { pending -> [@Sendable () -> Void] in
                    defer { pending.blocks.removeAll(keepingCapacity: true) }
                    if pending.blocks.isEmpty { pending.scheduled = false }
                    return pending.blocks
                }
                if blocks.isEmpty { return }
                for block in blocks { block() }
            }
        }
    }
}

/// An asynchronous operation that fetches one URL through WebImage's transport and does only what
/// the downloader's design requires around a download (an Operation per download and its notifications): the `isExecuting` / `isFinished` changes corelibs'
/// queue listens to, the four notifications and the completion on a serial callback queue. The
/// notifications and the completion of a transfer share one hop (Start goes out when it starts).
private final class FetchOperation: FloorOperation, @unchecked Sendable {
    // @unchecked Sendable: see FloorOperation; the stored properties here are immutable.
    private let url: URL
    private let transport: TransportBenchmarkClient
    /// nil: no notifications, and the completion runs on the transport thread (the operation alone).
    private let callbacks: CoalescingQueue?
    private let completion: @Sendable (Result<Int, ImageDownloaderError>) -> Void

    init(
        url: URL, transport: TransportBenchmarkClient, callbacks: CoalescingQueue?,
        completion: @escaping @Sendable (Result<Int, ImageDownloaderError>) -> Void
    ) {
        self.url = url
        self.transport = transport
        self.callbacks = callbacks
        self.completion = completion
    }

    override func start() {
        markExecuting()
        callbacks?.async { NotificationCenter.default.post(name: floorNotifications[0], object: self) }
        transport.fetch(url) { [self] result in
            markFinished()
            guard let callbacks else {
                completion(result)
                return
            }
            callbacks.async { [self] in
                NotificationCenter.default.post(name: floorNotifications[1], object: self)
                NotificationCenter.default.post(name: floorNotifications[2], object: self)
                completion(result)
                NotificationCenter.default.post(name: floorNotifications[3], object: self)
            }
        }
    }
}

/// The floor of the design with a network: every URL as one `FetchOperation` on an `OperationQueue` with
/// `parallel` slots, all added at once like the WebImage client, over WebImage's transport. No URL table,
/// tokens, options, response checks or caches: what any downloader built as one Operation per download pays at least.
/// With `bare`, no notifications and no callback queue: the completion runs on the transport thread.
func runDownloadFloorClient(urls: [String], parallel: Int, bare: Bool) -> Sample {
    let list = parseURLs(urls)
    let transport = makeTransportClient(parallel: parallel)
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = parallel
    let callbacks = bare ? nil : CoalescingQueue()
    let counter = CompletionCounter(expected: list.count)
    let watch = Stopwatch()
    for url in list {
        queue.addOperation(
            FetchOperation(url: url, transport: transport, callbacks: callbacks) { counter.record($0) })
    }
    return counter.waitForSample(watch) { transport.shutdown() }
}
