import Foundation

/// A caller as the lifecycle sees it: something with an identity that gets one terminal callback.
protocol LifecycleCaller {
    var id: UInt64 { get }
}

/// The life of one download operation, as a value: one `State`, which holds everything the operation
/// knows in it (the transfer, the response head, the decoder, the exchange with the HTTP cache), the
/// progress clock of a running transfer beside it, the callers still waiting, and an event method for
/// everything that can happen to the operation. Each event changes the state and returns what the operation must do about it, which the
/// operation does after releasing its lock (callbacks, notifications, stopping the transfer, writing to
/// the cache, telling the queue).
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
/// While transferring (and stopping), a request the HTTP cache had a stale entry for is being
/// revalidated: the state's `HTTPCacheExchange` moves from `validating` to `notModified` when a 304
/// answers (see its diagram), and the completion's action says which body is served and what the cache
/// gets (a 200 replaces the entry, a matching 304 refreshes it and serves its body).
///
/// Rules the states encode (the operation's life and its notifications, docs/ARCHITECTURE.md):
/// - The queue is told `isFinished` only from `start()` on: a cancel before `start()` marks the
///   operation (`cancelledWaiting`) and `start()` finishes it.
/// - Every caller is handed out exactly once: to a cancel, to a failure, or to the final serving.
/// - A cancelled operation never reaches `processing`, so it never serves an image and never posts
///   Finish, whether its bytes were arriving, complete, or about to come from the cache.
/// - Partial images are handed out only while `transferring`, so none follows the final result.
/// - What a 304 taught the cache is written whatever happens next (served, failed or cancelled); a new
///   answer is stored only when it is served.
///
/// Generic over the caller, transfer and decoder types so that it is tested as a plain value
/// (OperationLifecycleTests), with no threads, transport or decoder.
struct OperationLifecycle<Caller: LifecycleCaller, Transfer, Decoder> {
    enum State {
        /// Created or queued; `start()` has not run.
        case waiting
        /// Cancelled before `start()`: the callers were told; `start()` finishes the operation.
        case cancelledWaiting
        /// `start()` ran: the cache is being consulted and the transfer set up; there is no transfer yet.
        case preparing
        /// Cancelled while preparing: the callers were told; the end of the set-up finishes the operation.
        case cancelledPreparing
        /// The transport runs the transfer; what it told so far.
        case transferring(Transferring)
        /// Cancelled while transferring: the callers were told and the transfer is being stopped; its
        /// completion finishes the operation.
        case stopping(Stopping)
        /// The outcome is known (a body, a cache hit, or a failure) and the callers are being served.
        case processing(Processing)
        /// The queue has been, or is being, told `isFinished`. `response`: the head, when one came.
        case finished(response: TransferResponse?)
    }

    /// Changed only by the `enter` functions, which keep `phase` with it.
    private(set) var state = State.waiting
    /// `state`'s case without its payload. What needs only the case reads this: reading the case of
    /// `state` itself copies the whole value first (a retain and a release for every reference in the
    /// payload), and the queue asks `isExecuting` and `isFinished`, and every chunk of the body asks
    /// whether the transfer still runs.
    private(set) var phase = Phase.waiting

    /// How `state` changes: one `enter` for each kind of case, each setting `phase` to the case it stores.
    /// (Reading the case of the value being stored would copy it, as reading `state`'s does.)
    private mutating func enter(_ plain: Phase) {
        switch plain {
        case .waiting: state = .waiting
        case .cancelledWaiting: state = .cancelledWaiting
        case .preparing: state = .preparing
        case .cancelledPreparing: state = .cancelledPreparing
        case .transferring, .stopping, .processing, .finished: preconditionFailure("\(plain) carries a payload")
        }
        phase = plain
    }

    private mutating func enter(transferring: consuming Transferring) {
        state = .transferring(transferring)
        phase = .transferring
    }

    private mutating func enter(stopping: consuming Stopping) {
        state = .stopping(stopping)
        phase = .stopping
    }

    private mutating func enter(processing: consuming Processing) {
        state = .processing(processing)
        phase = .processing
    }

    private mutating func enter(finishedWith response: consuming TransferResponse?) {
        state = .finished(response: response)
        phase = .finished
    }

    /// Moves the state out, leaving a placeholder until the caller `enter`s the next one, so that a
    /// payload is changed or moved on without a copy (a copy retains every reference the payload holds,
    /// and writing it back releases them again). `phase` still names the case taken.
    private mutating func takeState() -> State {
        var taken = State.waiting
        swap(&taken, &state)
        return taken
    }

    private mutating func takeTransferring() -> Transferring {
        guard case .transferring(let transferring) = takeState() else { preconditionFailure("phase \(phase)") }
        return transferring
    }

    private mutating func takeStopping() -> Stopping {
        guard case .stopping(let stopping) = takeState() else { preconditionFailure("phase \(phase)") }
        return stopping
    }

    private mutating func takeProcessing() -> Processing {
        guard case .processing(let processing) = takeState() else { preconditionFailure("phase \(phase)") }
        return processing
    }

    /// The running transfer's progress: meaningful while `transferring` (`transferMade` sets it afresh).
    /// It sits beside `state` rather than in its `transferring` payload because every chunk of the body
    /// reads and sets it, and taking a payload out of the enum and putting it back copies every reference
    /// the payload holds (the transfer, the response head, the decoder, the cache exchange).
    private(set) var progress = ProgressClock()

    /// Callers not handed out yet.
    private(set) var callers: [Caller] = []

    // MARK: Reading the state

    /// What the queue reads as `isExecuting`: from `start()` until finished.
    var isExecuting: Bool {
        switch phase {
        case .preparing, .cancelledPreparing, .transferring, .stopping, .processing: true
        case .waiting, .cancelledWaiting, .finished: false
        }
    }

    var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }

    /// Whether `start()` has run.
    var hasStarted: Bool {
        switch phase {
        case .waiting, .cancelledWaiting: false
        default: true
        }
    }

    /// Whether a new caller may still join: the outcome is not known yet and nobody cancelled.
    var acceptsCallers: Bool {
        switch phase {
        case .waiting, .preparing, .transferring: true
        default: false
        }
    }

    /// The final response head, once it arrived (kept after the operation finished).
    var response: TransferResponse? {
        switch state {
        case .transferring(let transferring): transferring.response
        case .stopping(let stopping): stopping.response
        case .processing(let processing): processing.response
        case .finished(let response): response
        case .waiting, .cancelledWaiting, .preparing, .cancelledPreparing: nil
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
        switch phase {
        case .waiting:
            enter(.cancelledWaiting)
            transfer = nil
        case .preparing:
            enter(.cancelledPreparing)
            transfer = nil
        case .transferring:
            let running = takeTransferring()
            enter(stopping: Stopping(response: running.response, cache: running.cache))
            transfer = running.transfer
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
        switch phase {
        case .waiting:
            if cancelledByQueue || callers.isEmpty {
                enter(finishedWith: nil)
                defer { callers.removeAll() }
                return callers.isEmpty ? .finish : .cancelAndFinish(callers)
            }
            enter(.preparing)
            return .prepare
        case .cancelledWaiting:
            enter(finishedWith: nil)
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

    /// The transfer is set up and about to be handed to the transport. `cache`: the exchange with the
    /// HTTP cache, when the request may use it (`validating` when it carries a stale entry's validators).
    mutating func transferMade(
        _ transfer: Transfer, cache: HTTPCacheExchange? = nil, decodesProgressively: Bool = false
    ) -> PreparedAction {
        switch phase {
        case .preparing:
            enter(transferring: Transferring(transfer: transfer, cache: cache))
            progress = ProgressClock(decodesProgressively: decodesProgressively)
            return .startTransfer(progressCallers: callers)
        case .cancelledPreparing:
            enter(finishedWith: nil)
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

    /// A fresh cache entry answers the request; no transfer is made. `response`: the entry's head, which
    /// the callers are served with (nil for the processed-image cache, which keeps none).
    mutating func cacheHit(response: TransferResponse? = nil) -> CacheHitAction {
        switch phase {
        case .preparing:
            enter(processing: Processing(response: response))
            return .serve(callers)
        case .cancelledPreparing:
            enter(finishedWith: response)
            return .finish
        default:
            return .none
        }
    }

    /// `cacheHit()` only if `covers` holds for every waiting caller, decided in the same critical section
    /// as the hit: a caller that joined after the lookup and is not covered makes this nil, nothing
    /// changes, and the operation goes on to transfer for everyone.
    mutating func cacheHit(ifEvery covers: (Caller) -> Bool) -> CacheHitAction? {
        if case .preparing = phase, !callers.allSatisfy(covers) { return nil }
        return cacheHit()
    }

    /// The request failed before a transfer existed (a cache rule, a transfer that could not be set up).
    mutating func preparationFailed() -> CompletionAction {
        switch phase {
        case .preparing:
            enter(processing: Processing())
            defer { callers.removeAll() }
            return .fail(callers, postsStop: false, cacheWrite: nil)
        case .cancelledPreparing:
            enter(finishedWith: nil)
            return .finish
        default:
            return .none
        }
    }

    // MARK: Transferring: the response head

    /// What a 304 means for the operation.
    enum NotModifiedAction: Equatable {
        /// It confirmed the stored entry whose validators were sent: go on with this head, the entry's
        /// refreshed head as a 200; the completion serves the stored body.
        case serveStored(TransferResponse)
        /// It confirmed the entry, but the callers ignore cached responses: fail with cacheNotModified,
        /// with this refreshed head as the response.
        case refuse(TransferResponse)
        /// It confirms nothing this request may use (nothing was stored, the 304 is for another
        /// representation, or no transfer is running): the 304 stands and is reported as cacheNotModified.
        case confirmsNothing
    }

    /// A 304 answered at `now`. Decided in the state's `HTTPCacheExchange`, while transferring or
    /// stopping: a cancelled revalidation still refreshes (or removes) the entry.
    mutating func notModified(_ answer: TransferResponse, at now: Date, ignoringCachedResponse: Bool)
        -> NotModifiedAction
    {
        let decided: TransferResponse??
        let exchange: HTTPCacheExchange?
        switch phase {
        case .transferring:
            var transferring = takeTransferring()
            decided = transferring.cache?.notModified(answer, at: now, ignoringCachedResponse: ignoringCachedResponse)
            exchange = transferring.cache
            enter(transferring: transferring)
        case .stopping:
            var stopping = takeStopping()
            decided = stopping.cache?.notModified(answer, at: now, ignoringCachedResponse: ignoringCachedResponse)
            exchange = stopping.cache
            enter(stopping: stopping)
        default:
            return .confirmsNothing
        }
        guard case var refreshed?? = decided else { return .confirmsNothing }
        guard exchange?.confirmedBody != nil else { return .refuse(refreshed) }
        refreshed.statusCode = 200
        return .serveStored(refreshed)
    }

    /// The final response head, as checked, with the decoded length it announces (-1 when unknown).
    /// Returns the callers to tell (each records it, and gets a first progress call if it passed).
    mutating func responseReceived(_ response: TransferResponse, expectedSize: Int64) -> [Caller] {
        switch phase {
        case .transferring:
            var transferring = takeTransferring()
            transferring.response = response
            enter(transferring: transferring)
            progress.expectedSize = expectedSize
            return callers
        case .stopping:
            var stopping = takeStopping()
            stopping.response = response
            enter(stopping: stopping)
            return []
        default:
            return []
        }
    }

    // MARK: The body

    /// What to do about body bytes that arrived.
    struct ProgressAction {
        /// Each gets a progress call; none when throttled or when no transfer is running.
        var callers: [Caller]
        /// The decoded length the response announced, -1 when unknown.
        var expectedSize: Int64
        /// Decode a partial image from the bytes so far (then `endPartialDecode()`).
        var decodesPartial: Bool
    }

    /// `total` bytes of the body have arrived, at `now` (uptime nanoseconds). While the length is known
    /// and the body incomplete, progress is reported at most once per `interval` (the last chunk is never
    /// held back), and each report may start a partial decode, one at a time.
    mutating func bytesReceived(total: Int64, at now: UInt64, interval: UInt64) -> ProgressAction {
        guard case .transferring = phase else {
            return ProgressAction(callers: [], expectedSize: -1, decodesPartial: false)
        }
        let expected = progress.expectedSize
        let incomplete = expected > 0 && total < expected
        if incomplete, interval > 0, now >= progress.lastProgress, now - progress.lastProgress < interval {
            return ProgressAction(callers: [], expectedSize: expected, decodesPartial: false)
        }
        progress.lastProgress = now
        let decodesPartial = progress.decodesProgressively && incomplete && beginPartialDecode()
        return ProgressAction(callers: callers, expectedSize: expected, decodesPartial: decodesPartial)
    }

    /// Whether a progressive decode may start now (one at a time, only while transferring).
    mutating func beginPartialDecode() -> Bool {
        guard case .transferring = phase, !progress.decodingPartial else { return false }
        progress.decodingPartial = true
        return true
    }

    /// A progressive decode ended; returns the callers to hand its image to (none once the transfer ended).
    mutating func endPartialDecode() -> [Caller] {
        guard case .transferring = phase, progress.decodingPartial else { return [] }
        progress.decodingPartial = false
        return callers
    }

    /// The operation's incremental decoder, made with `make` on first use and kept while transferring
    /// and processing, so that the final decode reuses what the partial ones built. In any other state
    /// nothing will be served from it, and a new one is made each time, kept by nobody.
    mutating func decoder(orMake make: () -> Decoder) -> Decoder {
        switch phase {
        case .transferring:
            var transferring = takeTransferring()
            defer { enter(transferring: transferring) }
            if let decoder = transferring.decoder { return decoder }
            let decoder = make()
            transferring.decoder = decoder
            return decoder
        case .processing:
            var processing = takeProcessing()
            defer { enter(processing: processing) }
            if let decoder = processing.decoder { return decoder }
            let decoder = make()
            processing.decoder = decoder
            return decoder
        default:
            return make()
        }
    }

    /// Whether a decoder was made (a partial decode ran, so the final one must follow it on its queue).
    var hasDecoder: Bool {
        switch state {
        case .transferring(let transferring): transferring.decoder != nil
        case .processing(let processing): processing.decoder != nil
        default: false
        }
    }

    // MARK: Completion

    enum CompletionAction {
        /// The body is complete: decode it and serve the callers (`takeCallersToServe()`), then `served()`.
        /// `storedBody`: the body a 304 confirmed, served instead of the received one. `cacheWrite`: what
        /// the HTTP cache gets.
        case process(storedBody: Data?, cacheWrite: HTTPCacheWrite?)
        /// Give these callers the failure, then `served()`. `postsStop`: a transfer had started.
        case fail([Caller], postsStop: Bool, cacheWrite: HTTPCacheWrite?)
        /// A cancelled transfer ended: post Stop and finish; the callers were told at the cancel.
        case stopAndFinish(cacheWrite: HTTPCacheWrite?)
        /// Nothing was running: finish (the callers were told at the cancel).
        case finish
        case none
    }

    /// The transfer ended, with a body or with a failure (`succeeded: false`, cancellation included).
    mutating func transferCompleted(succeeded: Bool) -> CompletionAction {
        switch phase {
        case .transferring:
            let transferring = takeTransferring()
            enter(processing: Processing(response: transferring.response, decoder: transferring.decoder))
            if succeeded {
                return .process(
                    storedBody: transferring.cache?.confirmedBody,
                    cacheWrite: transferring.cache?.writeWhenServed(transferring.response))
            }
            defer { callers.removeAll() }
            return .fail(callers, postsStop: true, cacheWrite: transferring.cache?.writeWhenNotServed)
        case .stopping:
            let stopping = takeStopping()
            enter(finishedWith: stopping.response)
            return .stopAndFinish(cacheWrite: stopping.cache?.writeWhenNotServed)
        default:
            return .none
        }
    }

    // MARK: Processing

    /// The callers to serve with the outcome, handed out once; empty outside `processing`. Callers who
    /// cancel before this are not among them (they got `cancelled`).
    mutating func takeCallersToServe() -> [Caller] {
        guard case .processing = phase else { return [] }
        defer { callers.removeAll() }
        return callers
    }

    /// The callers `include` picks, handed out once, for outputs that are ready before the others (the
    /// stages serve each output as it is made); empty outside `processing`.
    mutating func takeCallersToServe(where include: (Caller) -> Bool) -> [Caller] {
        guard case .processing = phase else { return [] }
        let taken = callers.filter(include)
        callers.removeAll(where: include)
        return taken
    }

    /// Every caller was served: true when the queue must now be told (once).
    mutating func served() -> Bool {
        guard case .processing = phase else { return false }
        enter(finishedWith: takeProcessing().response)
        return true
    }
}
