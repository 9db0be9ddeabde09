import Foundation
import Locking

@testable import WebImage

/// Records every completion call of one or more downloads and waits (bounded) for the terminal ones.
final class CallbackRecorder: Sendable {
    struct Call: Sendable {
        var tag: Int
        var image: Image?
        var data: Data?
        var error: ImageDownloaderError?
        var finished: Bool
        var queueLabel: String
    }

    private let calls = Lock<[Call]>([])
    private let terminal = DispatchSemaphore(value: 0)

    /// A completion block that records under `tag`.
    func completion(_ tag: Int = 0) -> ImageDownloaderCompletedBlock {
        { [self] image, data, error, finished in
            let label = DispatchQueue.getSpecific(key: testQueueName) ?? ""
            calls.withLock {
                $0.append(
                    Call(
                        tag: tag, image: image, data: data, error: error as? ImageDownloaderError, finished: finished,
                        queueLabel: label))
            }
            if finished { terminal.signal() }
        }
    }

    /// Waits until `count` terminal callbacks arrived in all; false on timeout.
    func waitForTerminal(_ count: Int, seconds: Double = 30) -> Bool {
        let deadline = DispatchTime.now() + seconds
        for _ in 0..<count where terminal.wait(timeout: deadline) == .timedOut { return false }
        return true
    }

    var all: [Call] { calls.withLock { $0 } }
    var terminals: [Call] { all.filter(\.finished) }
    func terminals(tag: Int) -> [Call] { terminals.filter { $0.tag == tag } }
    var partials: [Call] { all.filter { !$0.finished } }
}

/// Tests name their callback queues with this key to check where callbacks run.
let testQueueName = DispatchSpecificKey<String>()

func namedQueue(_ name: String) -> DispatchQueue {
    let queue = DispatchQueue(label: name)
    queue.setSpecific(key: testQueueName, value: name)
    return queue
}

extension ImageDownloader {
    /// Waits for every callback already queued on the downloader's callback queue to have run.
    func drainCallbacks() { callbackQueue.sync {} }
}

/// A value shared with a `@Sendable` closure in a test.
final class Locked<Value: Sendable>: Sendable {
    private let storage: Lock<Value>
    init(_ value: Value) { storage = Lock(value) }
    var value: Value {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
    func update<T>(_ body: (inout Value) -> T) -> T { storage.withLock { body(&$0) } }
}

/// Counts events (progress callbacks, completions, notifications) and lets a test wait for the next one,
/// so a test can pace itself on what the downloader does instead of on sleeps.
final class EventCounter: @unchecked Sendable {
    // @unchecked Sendable: `count` is only read or written while `condition` is locked.
    private let condition = NSCondition()
    private var count = 0

    /// Events so far.
    var value: Int {
        condition.lock()
        defer { condition.unlock() }
        return count
    }

    func record() {
        condition.lock()
        count += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until more than `seen` events happened in all; false when `seconds` pass first.
    func wait(forMoreThan seen: Int, seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while count <= seen {
            guard condition.wait(until: deadline) else { return false }
        }
        return true
    }
}
