import Foundation
import Locking
import Synchronization

/// One download: an asynchronous `Operation` that drives one transfer for every caller of a URL,
/// decodes once per distinct set of decode options, and gives each caller exactly one terminal callback.
///
/// The downloader creates it (through `config.operationClass`, so a subclass may be used), installs its
/// environment, attaches callers and adds it to its queue. Its life cycle is `OperationLifecycle`, a
/// state machine kept behind the operation's lock: every method below feeds it an event under the lock
/// and then carries out the action it returned, with the lock released.
///
/// corelibs Foundation has no KVO: the queue learns about state only from
/// `didChangeValue(forKey: "isExecuting" / "isFinished")` and then re-reads the overrides below, so the
/// state is always changed *before* those calls.
open class ImageDownloaderOperation: Operation, @unchecked Sendable {
    // @unchecked Sendable: mutable state is in `state` (a Lock); `body` is confined to the transport
    // thread (see its comment); `installed` is written once, before the operation is queued.

    /// The request this operation sends (after the request modifier).
    public let request: ImageDownloadRequest
    /// The options of the first caller, which decide the transfer.
    public let options: ImageDownloaderOptions
    /// The context of the first caller.
    public let context: ImageDownloadContext?
    /// The fields of `context` that the transfer events read, taken out once: reading a field through
    /// the optional `context` copies the whole context first (a retain and release for each of its
    /// references), and these are read for every download, several times.
    let contextHooks: ContextHooks

    struct ContextHooks {
        var callbackQueue: DispatchQueue?
        var responseModifier: (any ImageDownloaderResponseModifying)?
        var decryptor: (any ImageDownloaderDecrypting)?
        var maximumResponseSize: Int64?
    }

    typealias Lifecycle = OperationLifecycle<DownloadCaller, any TransportTransfer, IncrementalDecoderBox>

    /// Everything about the operation that changes after it was created: its lifecycle, whose state holds
    /// what the transfer told so far, the decoder and the exchange with the HTTP cache.
    let state = Lock(Lifecycle())
    /// The queue priority last handed to the queue. Its lock is held from deciding a priority until the
    /// queue has it, so that two changes racing reach the queue in the order they were decided.
    private let appliedPriority: Lock<Operation.QueuePriority>

    /// What the downloader gives the operation before queueing it (`install`), never changed afterwards.
    private struct Installation {
        let environment: OperationEnvironment
        /// The table key this operation is filed under (URL and trust).
        let mergeKey: MergeKey
        /// LIFO only: opened when this operation starts, so the next-newest waiting one may start.
        let gate: StartGate?
    }
    private var installed: Installation?

    /// The body received so far. Touched only on the transport thread; taken once (`take()`) when the
    /// transfer completes.
    let body = ResponseBody()
    /// The bytes of `body` claimed from the downloader's `BodyBytesBudget` and not yet given back.
    let claimedBodyBytes = Atomic<Int64>(0)

    /// Creates an operation for `request`. Subclasses must keep this initializer.
    public required init(request: ImageDownloadRequest, options: ImageDownloaderOptions, context: ImageDownloadContext?)
    {
        self.request = request
        self.options = options
        self.context = context
        contextHooks = ContextHooks(
            callbackQueue: context?.callbackQueue, responseModifier: context?.responseModifier,
            decryptor: context?.decryptor, maximumResponseSize: context?.maximumResponseSize)
        let priority = Operation.QueuePriority(options)
        appliedPriority = Lock(priority)
        super.init()
        if priority != .normal { queuePriority = priority }
    }

    /// Gives the operation its downloader's environment; called once, before the operation is queued.
    func install(environment: OperationEnvironment, mergeKey: MergeKey, gate: StartGate?) {
        precondition(installed == nil, "an operation belongs to one downloader")
        installed = Installation(environment: environment, mergeKey: mergeKey, gate: gate)
    }

    /// The downloader's environment. Only read from `start()` on, and `start()` finishes at once an
    /// operation that no downloader installed (one queued by hand), so this is always there when read.
    var environment: OperationEnvironment {
        guard let installed else { preconditionFailure("the operation runs without a downloader") }
        return installed.environment
    }

    /// The table key this operation is filed under; nil before `install`.
    var mergeKey: MergeKey? { installed?.mergeKey }

    /// The LIFO gate, for the downloader's chaining.
    var gate: StartGate? { installed?.gate }

    // MARK: Operation state, as the queue sees it

    open override var isAsynchronous: Bool { true }

    open override var isExecuting: Bool { state.withLock { $0.isExecuting } }

    open override var isFinished: Bool { state.withLock { $0.isFinished } }

    /// The final response head, once it arrived.
    public var response: TransferResponse? { state.withLock { $0.response } }

    /// Callers still waiting for their terminal callback.
    var callerCount: Int { state.withLock { $0.callers.count } }

    /// Whether `start()` has run (LIFO chaining only adds dependencies to operations that have not).
    var hasStarted: Bool { state.withLock { $0.hasStarted } }

    // MARK: Callers

    /// Adds a caller; false when the operation no longer takes callers (its outcome is known or it was
    /// cancelled).
    func attach(_ caller: DownloadCaller) -> Bool {
        state.withLock { $0.attach(caller) }
    }

    /// Cancels one caller: it alone gets `cancelled`; the transfer stops when no caller is left.
    func cancel(callerID: UInt64) {
        let action = state.withLock { $0.cancelCaller(callerID) }
        perform(action)
        // The callers left may ask for less than the one that left.
        if !action.cancelsOperation { updateQueuePriority() }
    }

    /// Changes the priority one waiting caller asks for; see `updateQueuePriority()`.
    func setPriority(_ priority: Operation.QueuePriority, callerID: UInt64) {
        if state.withLock({ $0.updateCaller(callerID) { $0.priority = priority } }) {
            updateQueuePriority()
        }
    }

    /// Gives the operation, while it waits in the queue, the highest priority any of its waiting callers
    /// asks for: one caller that needs the image soon moves the shared download ahead, and a caller that
    /// does not mind waiting never holds back the others. Nothing changes once the operation started.
    ///
    /// corelibs' `queuePriority` setter moves a queued operation to the list of its new priority, and the
    /// queue takes the next operation to start from the highest non-empty list, so a raised operation
    /// starts at the next free slot. In LIFO order only the newest waiting operation is ready (see
    /// StartGate), so there a priority orders the ready operations only. The setter takes the queue's
    /// and the operation's corelibs locks, which never call back into this operation, so it runs under
    /// `appliedPriority`'s lock (never under `state`'s).
    func updateQueuePriority() {
        appliedPriority.withLock { applied in
            let wanted = state.withLock { state -> Operation.QueuePriority? in
                guard !state.hasStarted else { return nil }
                return state.callers.map(\.priority).max { $0.rawValue < $1.rawValue }
            }
            guard let wanted, wanted != applied else { return }
            applied = wanted
            queuePriority = wanted
        }
    }

    /// Cancels the operation and every caller (each gets `cancelled` once).
    open override func cancel() {
        perform(state.withLock { $0.cancel() })
    }

    private func perform(_ action: Lifecycle.CancelAction) {
        let error = cancelledError()
        for caller in action.callers {
            caller.complete(image: nil, data: nil, error: error, response: nil, metrics: nil)
        }
        guard action.cancelsOperation else { return }
        // The queue's own flag: a queued operation becomes ready, so the queue starts it and `start()`
        // finishes it (finishing before `start()` crashes corelibs' queue).
        super.cancel()
        if let transfer = action.transferToStop { environment.transport.cancel(transfer) }
    }

    func cancelledError() -> ImageDownloaderError {
        ImageDownloaderError(.cancelled, "the download was cancelled", url: request.url)
    }

    // MARK: Start and finish

    open override func start() {
        let cancelledByQueue = super.isCancelled
        // Queued by hand, without a downloader: nothing to run, nobody to serve.
        let action = state.withLock { $0.start(cancelledByQueue: cancelledByQueue || installed == nil) }
        // The next-newest LIFO operation may start as soon as this one has (see StartGate).
        gate?.open()
        switch action {
        case .prepare:
            willChangeValue(forKey: "isExecuting")
            didChangeValue(forKey: "isExecuting")
            beginTransfer()
        case .finish:
            announceFinish()
        case .cancelAndFinish(let callers):
            let error = cancelledError()
            for caller in callers {
                caller.complete(image: nil, data: nil, error: error, response: nil, metrics: nil)
            }
            announceFinish()
        case .none:
            break
        }
    }

    deinit {
        // A body still claimed here was neither handed out nor dropped (an operation released mid-way).
        installed?.environment.bodyBudget.release(claimedBodyBytes.load(ordering: .relaxed))
    }

    /// Tells the queue this operation is done, once the lifecycle reached `finished` (each of its events
    /// reaches it at most once, so this runs once).
    ///
    /// `isFinished` is already true. On the transport thread the queue itself is told at the end of the
    /// loop's turn, from another thread, together with the other operations that finished in that turn
    /// (`DrainBatch.offload`): corelibs' queue answers a finish with its bookkeeping and a thread wake-up
    /// to start the next operation, and the transport thread, which drives every socket, is the one that
    /// limits throughput (Benchmarks/NOTES.md). On any other thread it happens right here.
    func announceFinish() {
        DrainBatch.offload { self.announceFinished() }
    }

    /// The `isExecuting` / `isFinished` changes corelibs' queue listens to, then the downloader's part.
    private func announceFinished() {
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
        installed?.environment.onFinish(self)
    }

    // MARK: Notifications

    /// Where notifications are posted: the first caller's queue, else the downloader's.
    var notificationTarget: CallbackTarget {
        CallbackTarget(queue: contextHooks.callbackQueue, default: environment.callbacks)
    }

    func post(_ name: Notification.Name) {
        notificationTarget.async { NotificationCenter.default.post(name: name, object: self) }
    }
}
