/// A caller as the lifecycle sees it: something with an identity that gets one terminal callback.
protocol LifecycleCaller {
    var id: UInt64 { get }
}

/// The life of one download operation, as a value: one `State`, the callers still waiting, and an event
/// method for everything that can happen to the operation. Each event changes the state and returns
/// what the operation must do about it, which the operation does after releasing its lock (callbacks,
/// notifications, stopping the transfer, telling the queue).
///
/// ```
/// waiting ──start──▶ preparing ──transferMade──▶ transferring ──completed──▶ processing ──served──▶ finished
///    │                  │  └──cacheHit / preparationFailed──────────────────▲    ▲
///    │ cancel           │ cancel                     │ cancel               │    │
///    ▼                  ▼                            ▼                      │    │
/// cancelledWaiting   cancelledPreparing           stopping ──completed──────┼────┘ (Stop, no Finish)
///    └──start──▶ finished   └──transferMade / cacheHit / preparationFailed──▶ finished
/// ```
///
/// Rules the states encode (the operation's life and its notifications, docs/ARCHITECTURE.md):
/// - The queue is told `isFinished` only from `start()` on: a cancel before `start()` marks the
///   operation (`cancelledWaiting`) and `start()` finishes it.
/// - Every caller is handed out exactly once: to a cancel, to a failure, or to the final serving.
/// - A cancelled operation never reaches `processing`, so it never serves an image and never posts
///   Finish, whether its bytes were arriving, complete, or about to come from the cache.
/// - Partial images are handed out only while `transferring`, so none follows the final result.
///
/// Generic over the caller and transfer types so that it is tested as a plain value
/// (OperationLifecycleTests), with no threads, transport or decoder.
struct OperationLifecycle<Caller: LifecycleCaller, Transfer> {
    enum State {
        /// Created or queued; `start()` has not run.
        case waiting
        /// Cancelled before `start()`: the callers were told; `start()` finishes the operation.
        case cancelledWaiting
        /// `start()` ran: the cache is being consulted and the transfer set up; there is no transfer yet.
        case preparing
        /// Cancelled while preparing: the callers were told; the end of the set-up finishes the operation.
        case cancelledPreparing
        /// The transport runs `transfer`. `decodingPartial`: a progressive decode is under way.
        case transferring(Transfer, decodingPartial: Bool)
        /// Cancelled while transferring: the callers were told and the transfer is being stopped; its
        /// completion finishes the operation.
        case stopping
        /// The outcome is known (a body, a cache hit, or a failure) and the callers are being served.
        case processing
        /// The queue has been, or is being, told `isFinished`.
        case finished
    }

    private(set) var state = State.waiting
    /// Callers not handed out yet.
    private(set) var callers: [Caller] = []

    // MARK: Reading the state

    /// What the queue reads as `isExecuting`: from `start()` until finished.
    var isExecuting: Bool {
        switch state {
        case .preparing, .cancelledPreparing, .transferring, .stopping, .processing: true
        case .waiting, .cancelledWaiting, .finished: false
        }
    }

    var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// Whether `start()` has run.
    var hasStarted: Bool {
        switch state {
        case .waiting, .cancelledWaiting: false
        default: true
        }
    }

    /// Whether a new caller may still join: the outcome is not known yet and nobody cancelled.
    var acceptsCallers: Bool {
        switch state {
        case .waiting, .preparing, .transferring: true
        default: false
        }
    }

    // MARK: Callers

    /// Adds a caller; false when the operation no longer takes callers (see `acceptsCallers`).
    mutating func attach(_ caller: Caller) -> Bool {
        guard acceptsCallers else { return false }
        callers.append(caller)
        return true
    }

    /// Changes a caller still waiting (its priority, say); false when it is not waiting any more.
    mutating func updateCaller(_ id: UInt64, _ change: (inout Caller) -> Void) -> Bool {
        guard let index = callers.firstIndex(where: { $0.id == id }) else { return false }
        change(&callers[index])
        return true
    }

    /// What to do when the operation (or its last caller) is cancelled.
    struct CancelAction {
        /// Each gets `cancelled`.
        var callers: [Caller]
        /// The transfer to stop, when one was running.
        var transferToStop: Transfer?
        /// Whether the whole operation was cancelled (so the queue's own `cancel()` should run too).
        var cancelsOperation: Bool
    }

    /// One caller leaves: it alone gets `cancelled`; when it was the last one before the outcome was
    /// known, the whole operation is cancelled. A caller already served gets nothing (SDWebImage #3834).
    mutating func cancelCaller(_ id: UInt64) -> CancelAction {
        guard let index = callers.firstIndex(where: { $0.id == id }) else {
            return CancelAction(callers: [], transferToStop: nil, cancelsOperation: false)
        }
        let caller = callers.remove(at: index)
        guard callers.isEmpty, acceptsCallers else {
            return CancelAction(callers: [caller], transferToStop: nil, cancelsOperation: false)
        }
        var action = cancel()
        action.callers.append(caller)
        return action
    }

    /// The whole operation is cancelled: every caller waiting gets `cancelled`. Does nothing once the
    /// outcome is known (the callers are being served) or the operation was already cancelled.
    mutating func cancel() -> CancelAction {
        let transfer: Transfer?
        switch state {
        case .waiting:
            state = .cancelledWaiting
            transfer = nil
        case .preparing:
            state = .cancelledPreparing
            transfer = nil
        case .transferring(let running, _):
            state = .stopping
            transfer = running
        case .cancelledWaiting, .cancelledPreparing, .stopping, .processing, .finished:
            return CancelAction(callers: [], transferToStop: nil, cancelsOperation: false)
        }
        defer { callers.removeAll() }
        return CancelAction(callers: callers, transferToStop: transfer, cancelsOperation: true)
    }

    // MARK: Start

    enum StartAction {
        /// Consult the cache and set up the transfer.
        case prepare
        /// Tell the queue the operation finished (cancelled before it started, or nobody is waiting).
        case finish
        /// Tell these callers `cancelled` (the queue cancelled the operation behind our back), then finish.
        case cancelAndFinish([Caller])
        /// `start()` ran before: nothing to do.
        case none
    }

    /// The queue calls `start()`. `cancelledByQueue`: `Operation.isCancelled` was already set.
    mutating func start(cancelledByQueue: Bool = false) -> StartAction {
        switch state {
        case .waiting:
            if cancelledByQueue || callers.isEmpty {
                state = .finished
                defer { callers.removeAll() }
                return callers.isEmpty ? .finish : .cancelAndFinish(callers)
            }
            state = .preparing
            return .prepare
        case .cancelledWaiting:
            state = .finished
            return .finish
        default:
            return .none
        }
    }

    // MARK: Preparing

    enum PreparedAction {
        /// Start the transfer; these callers get their first progress call.
        case startTransfer(progressCallers: [Caller])
        /// A cancel arrived during the set-up: drop the transfer unstarted and finish.
        case finish
        /// The event does not apply in this state.
        case none
    }

    /// The transfer is set up and about to be handed to the transport.
    mutating func transferMade(_ transfer: Transfer) -> PreparedAction {
        switch state {
        case .preparing:
            state = .transferring(transfer, decodingPartial: false)
            return .startTransfer(progressCallers: callers)
        case .cancelledPreparing:
            state = .finished
            return .finish
        default:
            return .none
        }
    }

    enum CacheHitAction {
        /// Serve these callers from the cached response (they may still be cancelled one by one).
        case serve([Caller])
        /// A cancel arrived during the lookup: finish without serving (and without Finish).
        case finish
        case none
    }

    /// A fresh cache entry answers the request; no transfer is made.
    mutating func cacheHit() -> CacheHitAction {
        switch state {
        case .preparing:
            state = .processing
            return .serve(callers)
        case .cancelledPreparing:
            state = .finished
            return .finish
        default:
            return .none
        }
    }

    /// `cacheHit()` only if `covers` holds for every waiting caller, decided in the same critical section
    /// as the hit: a caller that joined after the lookup and is not covered makes this nil, nothing
    /// changes, and the operation goes on to transfer for everyone.
    mutating func cacheHit(ifEvery covers: (Caller) -> Bool) -> CacheHitAction? {
        if case .preparing = state, !callers.allSatisfy(covers) { return nil }
        return cacheHit()
    }

    // MARK: Transferring

    /// Whether a progressive decode may start now (one at a time, only while transferring).
    mutating func beginPartialDecode() -> Bool {
        guard case .transferring(let transfer, decodingPartial: false) = state else { return false }
        state = .transferring(transfer, decodingPartial: true)
        return true
    }

    /// A progressive decode ended; returns the callers to hand its image to (none once the transfer ended).
    mutating func endPartialDecode() -> [Caller] {
        guard case .transferring(let transfer, decodingPartial: true) = state else { return [] }
        state = .transferring(transfer, decodingPartial: false)
        return callers
    }

    enum CompletionAction {
        /// The body is complete: decode it and serve the callers (`takeCallersToServe()`), then `served()`.
        case process
        /// Give these callers the failure, then `served()`. `postsStop`: a transfer had started.
        case fail([Caller], postsStop: Bool)
        /// A cancelled transfer ended: post Stop and finish; the callers were told at the cancel.
        case stopAndFinish
        /// Nothing was running: finish (the callers were told at the cancel).
        case finish
        case none
    }

    /// The transfer ended, with a body or with a failure (`succeeded: false`, cancellation included).
    mutating func transferCompleted(succeeded: Bool) -> CompletionAction {
        switch state {
        case .transferring:
            state = .processing
            if succeeded { return .process }
            defer { callers.removeAll() }
            return .fail(callers, postsStop: true)
        case .stopping:
            state = .finished
            return .stopAndFinish
        default:
            return .none
        }
    }

    /// The request failed before a transfer existed (a cache rule, a transfer that could not be set up).
    mutating func preparationFailed() -> CompletionAction {
        switch state {
        case .preparing:
            state = .processing
            defer { callers.removeAll() }
            return .fail(callers, postsStop: false)
        case .cancelledPreparing:
            state = .finished
            return .finish
        default:
            return .none
        }
    }

    // MARK: Processing

    /// The callers to serve with the outcome, handed out once; empty outside `processing`. Callers who
    /// cancel before this are not among them (they got `cancelled`).
    mutating func takeCallersToServe() -> [Caller] {
        guard case .processing = state else { return [] }
        defer { callers.removeAll() }
        return callers
    }

    /// Every caller was served: true when the queue must now be told (once).
    mutating func served() -> Bool {
        guard case .processing = state else { return false }
        state = .finished
        return true
    }
}
