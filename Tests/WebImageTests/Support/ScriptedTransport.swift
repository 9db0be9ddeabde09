import Foundation
import Locking

@testable import WebImage
@testable import WebImageTransport

/// An in-memory `HTTPTransport` for the tests of what the downloader does with transfers (coalescing,
/// ordering, cancellation): nothing goes over a socket, and each transfer answers when, and how, the
/// test says, so no test has to rely on a server's delay to keep a transfer running.
///
/// Every delegate event runs on one serial queue (the scripted "transport thread"), so the events of a
/// transfer never overlap, as the protocol requires. A transfer either answers by itself (`autoRespond`
/// returns a `Reply` for its request) or is held until the test calls `respond`, `fail` or the
/// downloader cancels it.
final class ScriptedTransport: HTTPTransport, Sendable {
    /// What a transfer answers.
    struct Reply: Sendable {
        var status = 200
        var headers: HTTPHeaders = ["Content-Type": "image/png"]
        var body = Data()
        /// The body is delivered in this many pieces (progress callbacks and progressive decodes see each).
        var chunks = 1

        static func image(_ body: Data, contentType: String = "image/png") -> Reply {
            Reply(headers: ["Content-Type": contentType, "Content-Length": "\(body.count)"], body: body)
        }
    }

    final class Transfer: TransportTransfer, Sendable {
        let request: TransferRequest
        /// The operation; let go once the transfer completes, as the curl transport drops a finished
        /// transfer (the transport keeps started transfers for the test to inspect, and an operation kept
        /// here would keep its environment, and so this transport, alive: a cycle).
        private let delegateSlot: Lock<(any TransferDelegate)?>
        fileprivate var delegate: (any TransferDelegate)? { delegateSlot.withLock { $0 } }
        fileprivate func takeDelegate() -> (any TransferDelegate)? {
            delegateSlot.withLock { slot in
                defer { slot = nil }
                return slot
            }
        }
        /// Started, completed and cancelled, as the transport saw them.
        fileprivate let progress = Lock(Progress())

        fileprivate struct Progress {
            var started = false
            var completed = false
            var cancelRequested = false
        }

        fileprivate init(request: TransferRequest, delegate: any TransferDelegate) {
            self.request = request
            delegateSlot = Lock(delegate)
        }

        var url: URL { request.url }
        var isCompleted: Bool { progress.withLock { $0.completed } }
        var wasCancelled: Bool { progress.withLock { $0.cancelRequested } }
    }

    private struct Record {
        var made = 0
        /// Started transfers, in the order `start` was called.
        var started: [Transfer] = []
        var shutDown = false
        /// `whenStopped` bodies waiting for `shutdown()`.
        var onStop: [@Sendable () -> Void] = []
    }

    private let queue = DispatchQueue(label: "test.scripted-transport")
    private let record = Lock(Record())
    private let changed = NSCondition()
    private let autoRespond: @Sendable (TransferRequest) -> Reply?

    /// A transport whose transfers answer by themselves with `autoRespond(request)`, or, when it returns
    /// nil (the default for every request), wait for the test.
    init(autoRespond: @escaping @Sendable (TransferRequest) -> Reply? = { _ in nil }) {
        self.autoRespond = autoRespond
    }

    // MARK: HTTPTransport

    func makeTransfer(_ request: TransferRequest, delegate: any TransferDelegate) throws(TransportError)
        -> any TransportTransfer
    {
        record.withLock { $0.made += 1 }
        return Transfer(request: request, delegate: delegate)
    }

    func start(_ transfer: any TransportTransfer) {
        let transfer = transfer as! Transfer
        let shutDown = record.withLock { record -> Bool in
            if !record.shutDown { record.started.append(transfer) }
            return record.shutDown
        }
        signal()
        queue.async { [self] in
            guard !shutDown else {
                complete(transfer, .failure(TransportError(.cancelled, "shut down", url: transfer.url)))
                return
            }
            let cancelled = transfer.progress.withLock { progress -> Bool in
                progress.started = true
                return progress.cancelRequested
            }
            // A cancel that overtook the start: the transfer never runs (CurlTransport does the same).
            if cancelled {
                complete(transfer, .failure(TransportError(.cancelled, "cancelled", url: transfer.url)))
                return
            }
            transfer.delegate?.transferDidStart()
            if let reply = autoRespond(transfer.request) { deliver(reply, to: transfer) }
        }
    }

    func cancel(_ transfer: any TransportTransfer) {
        let transfer = transfer as! Transfer
        let runs = transfer.progress.withLock { progress -> Bool in
            progress.cancelRequested = true
            return progress.started
        }
        signal()
        guard runs else { return }  // `start` sees the flag
        queue.async { [self] in
            complete(transfer, .failure(TransportError(.cancelled, "cancelled", url: transfer.url)))
        }
    }

    func shutdown() {
        let (running, onStop) = record.withLock { record -> ([Transfer], [@Sendable () -> Void]) in
            record.shutDown = true
            defer { record.onStop = [] }
            return (record.started, record.onStop)
        }
        for transfer in running { cancel(transfer) }
        // After the cancels' completions, which run on `queue` too.
        for body in onStop { queue.async(execute: body) }
    }

    func waitUntilStopped(timeout: Double) -> Bool {
        queue.sync {}
        return record.withLock { $0.shutDown }
    }

    var isStopped: Bool { record.withLock { $0.shutDown } }

    func whenStopped(_ body: @escaping @Sendable () -> Void) {
        let stopped = record.withLock { record -> Bool in
            if !record.shutDown { record.onStop.append(body) }
            return record.shutDown
        }
        if stopped { queue.async(execute: body) }
    }

    // MARK: Scripting

    /// Answers a held transfer with `reply` (on the transport queue; returns at once).
    func respond(_ transfer: Transfer, with reply: Reply) {
        queue.async { [self] in deliver(reply, to: transfer) }
    }

    /// Ends a held transfer with `error`. It travels as the transport's `.aborted` with `error` as its reason,
    /// which the downloader reports unchanged, so a script can end a transfer with any code users see.
    func fail(_ transfer: Transfer, with error: ImageDownloaderError) {
        queue.async { [self] in complete(transfer, .failure(.aborted(by: error, url: transfer.url))) }
    }

    /// Transfers started so far, in the order they were started.
    var started: [Transfer] { record.withLock { $0.started } }

    /// Transfers made (started or not).
    var madeCount: Int { record.withLock { $0.made } }

    /// Waits until `count` transfers have been started; returns them in start order (nil on timeout).
    func waitForStarted(_ count: Int, seconds: Double = 10) -> [Transfer]? {
        wait(seconds: seconds) { self.started.count >= count } ? started : nil
    }

    /// Waits until `condition` holds; it is checked after every start and cancel. False on timeout.
    func wait(seconds: Double = 10, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        changed.lock()
        defer { changed.unlock() }
        while !condition() {
            if !changed.wait(until: deadline) { return condition() }
        }
        return true
    }

    /// Runs after every delivery queued so far.
    func drain() { queue.sync {} }

    // MARK: Delivery (transport queue)

    private func deliver(_ reply: Reply, to transfer: Transfer) {
        guard !transfer.isCompleted, let delegate = transfer.delegate else { return }
        let response = TransferResponse(url: transfer.url, statusCode: reply.status, headers: reply.headers)
        if let reason = delegate.transferDidReceiveResponse(response) {
            complete(transfer, .failure(.aborted(by: reason, url: transfer.url)))
            return
        }
        var received: Int64 = 0
        let pieces = max(1, min(reply.chunks, reply.body.count))
        let size = (reply.body.count + pieces - 1) / max(pieces, 1)
        var offset = 0
        while offset < reply.body.count {
            let piece = reply.body[
                reply.body.startIndex + offset..<reply.body.startIndex + min(offset + size, reply.body.count)]
            received += Int64(piece.count)
            if let reason = piece.withUnsafeBytes({ delegate.transferDidReceiveData($0, totalReceived: received) }) {
                complete(transfer, .failure(.aborted(by: reason, url: transfer.url)))
                return
            }
            offset += size
        }
        var metrics = ImageDownloadMetrics()
        metrics.bytesReceived = received
        complete(transfer, .success(metrics))
    }

    private func complete(_ transfer: Transfer, _ result: Result<ImageDownloadMetrics, TransportError>) {
        let first = transfer.progress.withLock { progress -> Bool in
            defer { progress.completed = true }
            return !progress.completed
        }
        guard first else { return }
        transfer.takeDelegate()?.transferDidComplete(result)
        signal()
    }

    private func signal() {
        changed.lock()
        changed.broadcast()
        changed.unlock()
    }
}

extension ImageDownloader {
    /// A downloader whose transfers run on `transport`.
    convenience init(config: ImageDownloaderConfig = .default, transport: ScriptedTransport) {
        self.init(config: config, transport: .success(transport))
    }
}
