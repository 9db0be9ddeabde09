import Foundation
import Locking

/// One download: an asynchronous `Operation` that drives one libcurl transfer for every caller of a URL,
/// decodes once per distinct set of decode options, and gives each caller exactly one terminal callback.
///
/// The downloader creates it (through `config.operationClass`, so a subclass may be used), attaches
/// callers and adds it to its queue. Life cycle, in the queue's terms:
///
/// ```
/// waiting ──start()──▶ transferring ──body/failure──▶ processing ──callers served──▶ finished
///    │                     │  (cancel: transfer removed, reported as cancelled)
///    └──cancel()──▶ start() sees the cancel and finishes at once (never before start)
/// ```
///
/// corelibs Foundation has no KVO: the queue learns about state only from
/// `didChangeValue(forKey: "isExecuting" / "isFinished")` and then re-reads the overrides below, so the
/// state is always changed *before* those calls.
open class ImageDownloaderOperation: Operation, @unchecked Sendable {
    // @unchecked Sendable: mutable state is in `state` (a Lock); `body` and `decodesProgressively` are
    // confined (see their comments); `environment` and `gate` are written once, before the operation is queued.

    /// The request this operation sends (after the request modifier).
    public let request: ImageDownloadRequest
    /// The options of the first caller, which decide the transfer.
    public let options: ImageDownloaderOptions
    /// The context of the first caller.
    public let context: ImageDownloadContext?

    let state = Lock(OperationState())
    /// LIFO only: opened when this operation starts, so the next-newest waiting one may start. Set by the
    /// downloader before the operation is queued.
    var gate: StartGate?
    /// Set by the downloader before the operation is queued, never changed afterwards.
    var environment: OperationEnvironment?
    /// The table key this operation is filed under (URL and trust); set with `environment`.
    var mergeKey: MergeKey?

    /// The body received so far. Touched only on the transport thread; taken once (`take()`) when the
    /// transfer completes.
    let body = ResponseBody()
    /// Whether partial images are decoded; decided in `beginTransfer()` before the transfer is handed to
    /// the transport, then read only on the transport thread.
    var decodesProgressively = false

    /// Creates an operation for `request`. Subclasses must keep this initializer.
    public required init(request: ImageDownloadRequest, options: ImageDownloaderOptions, context: ImageDownloadContext?)
    {
        self.request = request
        self.options = options
        self.context = context
        super.init()
        if options.contains(.highPriority) {
            queuePriority = .high
        } else if options.contains(.lowPriority) {
            queuePriority = .low
        }
    }

    // MARK: Operation state, as the queue sees it

    open override var isAsynchronous: Bool { true }

    open override var isExecuting: Bool {
        state.withLock { $0.phase == .transferring || $0.phase == .processing }
    }

    open override var isFinished: Bool {
        state.withLock { $0.phase == .finished }
    }

    /// The final response head, once it arrived.
    public var response: ImageDownloadResponse? { state.withLock { $0.response } }

    /// Callers still waiting for their terminal callback.
    var callerCount: Int { state.withLock { $0.callers.count } }

    /// Whether `start()` has run (LIFO chaining only adds dependencies to operations that have not).
    var hasStarted: Bool { state.withLock { $0.phase != .waiting } }

    // MARK: Callers

    /// Adds a caller; false when the operation no longer takes callers (its transfer ended or it was cancelled).
    func attach(_ caller: DownloadCaller) -> Bool {
        state.withLock { state in
            guard state.acceptsCallers else { return false }
            state.callers.append(caller)
            return true
        }
    }

    /// Cancels one caller: it alone gets `cancelled`; the transfer stops when no caller is left.
    func cancel(callerID: UInt64) {
        let (caller, transferToStop, cancelWhole) = state.withLock {
            state -> (DownloadCaller?, CurlTransfer?, Bool) in
            guard let caller = state.removeCaller(callerID) else { return (nil, nil, false) }
            guard state.callers.isEmpty, state.phase == .waiting || state.phase == .transferring else {
                return (caller, nil, false)
            }
            state.isCancelled = true
            return (caller, state.transfer, true)
        }
        guard let caller else { return }  // already served: a late cancel does nothing (SDWebImage #3834)
        caller.complete(image: nil, data: nil, error: cancelledError(), response: nil, metrics: nil)
        if cancelWhole { stop(transferToStop) }
    }

    /// Cancels the operation and every caller (each gets `cancelled` once).
    open override func cancel() {
        let (callers, transferToStop) = state.withLock { state -> ([DownloadCaller], CurlTransfer?) in
            guard state.phase == .waiting || state.phase == .transferring else { return ([], nil) }
            state.isCancelled = true
            return (state.takeCallers(), state.transfer)
        }
        for caller in callers {
            caller.complete(image: nil, data: nil, error: cancelledError(), response: nil, metrics: nil)
        }
        stop(transferToStop)
    }

    /// Stops the work of a cancelled operation. A queued operation is only marked cancelled: the queue
    /// then starts it and `start()` finishes it (finishing before `start()` crashes corelibs' queue).
    private func stop(_ transfer: CurlTransfer?) {
        super.cancel()
        if let transfer { environment?.transport.cancel(transfer) }
    }

    func cancelledError() -> ImageDownloaderError {
        ImageDownloaderError(.cancelled, "the download was cancelled", url: request.url)
    }

    // MARK: Start and finish

    open override func start() {
        let proceed = state.withLock { state -> Bool in
            guard state.phase == .waiting else { return false }
            if state.isCancelled || state.callers.isEmpty || super.isCancelled {
                state.isCancelled = true
                return false
            }
            state.phase = .transferring
            return true
        }
        // The next-newest LIFO operation may start as soon as this one has (see StartGate).
        gate?.open()
        guard proceed else {
            finish()
            return
        }
        willChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isExecuting")
        beginTransfer()
    }

    /// Tells the queue this operation is done. Idempotent; only ever called from `start()` or later.
    ///
    /// `isFinished` turns true at once. On the transport thread the queue itself is told at the end of
    /// the loop's turn, from another thread, together with the other operations that finished in that turn
    /// (`DrainBatch.offload`): corelibs' queue answers a finish with its bookkeeping and a thread wake-up
    /// to start the next operation, and the transport thread, which drives every socket, is the one that
    /// limits throughput (Benchmarks/NOTES.md).
    func finish() {
        let changed = state.withLock { state -> Bool in
            guard state.phase != .finished else { return false }
            state.phase = .finished
            state.transfer = nil
            return true
        }
        guard changed else { return }
        DrainBatch.offload { self.announceFinished() }
    }

    /// The `isExecuting` / `isFinished` changes corelibs' queue listens to, then the URL table's removal.
    private func announceFinished() {
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
        environment?.onFinish(self)
        if options.contains(.handleCookies), let jar = environment?.config.cookieStorage, jar.fileURL != nil {
            // Off the transport thread; an automatic checkpoint has nobody to report a failure to.
            DispatchQueue.global(qos: .utility).async { try? jar.save() }
        }
    }

    // MARK: Notifications

    /// Where notifications are posted: the first caller's queue, else the downloader's.
    var notificationTarget: CallbackTarget {
        guard let environment else { return CallbackTarget(direct: context?.callbackQueue ?? .global()) }
        return CallbackTarget(queue: context?.callbackQueue, default: environment.callbacks)
    }

    func post(_ name: Notification.Name) {
        notificationTarget.async { NotificationCenter.default.post(name: name, object: self) }
    }
}
