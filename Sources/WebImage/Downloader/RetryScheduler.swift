import Dispatch
import Foundation
import Locking
import Synchronization

/// Tries failed callers again (`config.retryPolicy`): a caller with attempts left is taken out of the
/// failed operation, which finishes and frees its queue slot, waits on a timer, and then joins the live
/// operation for its URL or a new one, as a fresh `downloadImage` would. Its token follows it, so a cancel
/// during the wait ends it at once with `cancelled`, and a cancel while it is being queued reaches the new
/// operation (see `ImageDownloadToken.Target`). Either the timer or the cancel takes the caller, never both.
final class RetryScheduler: Sendable {
    /// What the next attempt needs of the failed operation. The environment comes with it rather than
    /// being stored here: the environment holds this scheduler, and a reference back would keep both, and
    /// the transport, alive after the downloader is gone.
    struct Attempt: Sendable {
        let environment: OperationEnvironment
        let key: MergeKey
        let request: ImageDownloadRequest
        let options: ImageDownloaderOptions
        let context: ImageDownloadContext?
    }

    private let table: OperationTable
    private let queue: OperationQueue
    private let config: ImageDownloaderConfig
    private let instruments: DownloadInstruments
    /// Callers waiting for their next attempt, by caller id, for `cancelAll`.
    private let waiting = Lock<[UInt64: ImageDownloadToken]>([:])
    /// Set by the downloader's `invalidate`: a retry due afterwards ends with its last error.
    private let invalidated = Atomic<Bool>(false)

    init(table: OperationTable, queue: OperationQueue, config: ImageDownloaderConfig, instruments: DownloadInstruments)
    {
        self.table = table
        self.queue = queue
        self.config = config
        self.instruments = instruments
    }

    /// No retry starts from now on (`ImageDownloader.invalidate`).
    func invalidate() {
        invalidated.store(true, ordering: .releasing)
    }

    /// Takes `caller`, whose attempt failed with `error`, and tries it again after `delay` seconds.
    func schedule(_ caller: DownloadCaller, after delay: TimeInterval, error: ImageDownloaderError, attempt: Attempt) {
        instruments.retryScheduled(attempt.request.url, attempt: caller.attempt, delay: delay, error: error)
        var nextAttempt = caller
        nextAttempt.attempt += 1
        let next = nextAttempt
        let token = caller.token
        waiting.withLock { $0[caller.id] = token }
        token.waitToRetry { [waiting] in
            waiting.withLock { $0[caller.id] = nil }
            caller.complete(
                image: nil, data: nil,
                error: ImageDownloaderError(.cancelled, "the download was cancelled", url: attempt.request.url),
                response: nil, metrics: nil)
        }
        BackgroundQueues.next.asyncAfter(deadline: .now() + max(0, delay)) {
            self.resume(next, error: error, attempt: attempt)
        }
    }

    /// Cancels every caller waiting to retry (`cancelAllDownloads`, `invalidate`).
    func cancelAll() {
        for token in waiting.withLock({ $0.values }) { token.cancel() }
    }

    private func resume(_ caller: DownloadCaller, error: ImageDownloaderError, attempt: Attempt) {
        guard caller.token.beginResuming() else { return }  // cancelled during the wait
        waiting.withLock { $0[caller.id] = nil }
        guard !invalidated.load(ordering: .acquiring) else {
            caller.token.resumed(on: nil)
            caller.complete(image: nil, data: nil, error: error, response: error.response, metrics: nil)
            return
        }
        let operation = table.withBarrier { entries -> ImageDownloaderOperation in
            if let existing = entries.operations[attempt.key], existing.attach(caller) { return existing }
            let operation = config.operationClass.init(
                request: attempt.request, options: attempt.options, context: attempt.context)
            let gate = config.executionOrder == .lifo ? entries.chainLIFO(operation) : nil
            operation.install(environment: attempt.environment, mergeKey: attempt.key, gate: gate)
            _ = operation.attach(caller)  // a fresh operation accepts its first caller
            entries.operations[attempt.key] = operation
            queue.addOperation(operation)
            return operation
        }
        caller.token.resumed(on: operation)
    }
}
