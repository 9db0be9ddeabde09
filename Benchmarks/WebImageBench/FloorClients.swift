import Dispatch
import Foundation
import Locking

// The two building blocks DESIGN.md §3 puts around every transfer, measured alone, without a network
// and without any WebImage code: what a file costs before the downloader does anything of its own.
// They show how much of the "≤ 25 µs CPU per file" budget the required architecture spends by itself.

/// An asynchronous operation shaped like `ImageDownloaderOperation`: state behind a lock, `start()` hands
/// the work to another thread (the transport thread in the library) and that thread finishes it with the
/// KVO-style `isExecuting` / `isFinished` changes corelibs' queue listens to.
private final class HopOperation: Operation, @unchecked Sendable {
    // @unchecked Sendable: `phase` is behind `lock`; `worker` and `done` are immutable.
    private enum Phase { case waiting, executing, finished }
    private let lock = Lock(Phase.waiting)
    private let worker: DispatchQueue
    private let done: @Sendable () -> Void

    init(worker: DispatchQueue, done: @escaping @Sendable () -> Void) {
        self.worker = worker
        self.done = done
    }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.withLock { $0 == .executing } }
    override var isFinished: Bool { lock.withLock { $0 == .finished } }

    override func start() {
        lock.withLock { $0 = .executing }
        willChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isExecuting")
        worker.async { [self] in
            lock.withLock { $0 = .finished }
            willChangeValue(forKey: "isExecuting")
            willChangeValue(forKey: "isFinished")
            didChangeValue(forKey: "isExecuting")
            didChangeValue(forKey: "isFinished")
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

/// Stands in for the operation a notification names as its object.
private final class PostedObject: Sendable {}

/// Four `NotificationCenter` posts per file (start, response, stop, finish), each sent asynchronously on
/// a serial callback queue as the library does, with nobody observing them.
func runNotificationFloorClient(items: Int) -> Sample {
    let callbacks = DispatchQueue(label: "floor.callbacks")
    let names: [Notification.Name] = [
        .init("floor.start"), .init("floor.response"), .init("floor.stop"), .init("floor.finish"),
    ]
    let group = DispatchGroup()
    let watch = Stopwatch()
    for _ in 0..<items {
        let object = PostedObject()
        for name in names {
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
