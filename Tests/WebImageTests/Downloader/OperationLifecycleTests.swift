import TestSupport
import Testing

@testable import WebImage

/// `OperationLifecycle` as a plain value: every event in every state, then random event sequences
/// checked against the rules the operation relies on. No threads, transport or decoder.
@Suite(.timeLimit(.minutes(5))) struct OperationLifecycleTests {
    struct Caller: LifecycleCaller, Equatable {
        let id: UInt64
    }
    typealias Lifecycle = OperationLifecycle<Caller, Int>

    /// The transfer every test's `transferMade` hands in.
    static let transfer = 7

    // MARK: Reaching each state

    /// The states, each reached from a fresh lifecycle with callers 1 and 2 attached.
    static let setups: [(name: String, events: [String])] = [
        ("waiting", []),
        ("cancelledWaiting", ["cancel"]),
        ("preparing", ["start"]),
        ("cancelledPreparing", ["start", "cancel"]),
        ("transferring", ["start", "transferMade"]),
        ("transferring+partial", ["start", "transferMade", "beginPartial"]),
        ("stopping", ["start", "transferMade", "cancel"]),
        ("processing", ["start", "transferMade", "completedOK"]),
        ("finished", ["start", "transferMade", "completedOK", "take", "served"]),
    ]

    static func name(_ state: Lifecycle.State) -> String {
        switch state {
        case .waiting: "waiting"
        case .cancelledWaiting: "cancelledWaiting"
        case .preparing: "preparing"
        case .cancelledPreparing: "cancelledPreparing"
        case .transferring(let transfer, let partial):
            "transferring\(transfer == Self.transfer ? "" : " of another transfer")\(partial ? "+partial" : "")"
        case .stopping: "stopping"
        case .processing: "processing"
        case .finished: "finished"
        }
    }

    static func ids(_ callers: [Caller]) -> String {
        "[" + callers.map { String($0.id) }.joined(separator: ",") + "]"
    }

    static func describe(_ action: Lifecycle.CancelAction) -> String {
        if action.callers.isEmpty, action.transferToStop == nil, !action.cancelsOperation { return "nothing" }
        var text = "cancelled \(ids(action.callers))"
        if action.cancelsOperation { text += " +operation" }
        if let transfer = action.transferToStop { text += " stop \(transfer)" }
        return text
    }

    static func describe(_ action: Lifecycle.CompletionAction) -> String {
        switch action {
        case .process: "process"
        case .fail(let callers, let postsStop): "fail \(ids(callers))\(postsStop ? " +Stop" : "")"
        case .stopAndFinish: "stopAndFinish"
        case .finish: "finish"
        case .none: "none"
        }
    }

    /// Applies the event called `event` and describes what it returned.
    @discardableResult
    static func apply(_ event: String, to lifecycle: inout Lifecycle) -> String {
        switch event {
        case "attach3":
            return "\(lifecycle.attach(Caller(id: 3)))"
        case "cancelCaller1":
            return describe(lifecycle.cancelCaller(1))
        case "cancelBoth":
            _ = lifecycle.cancelCaller(1)
            return describe(lifecycle.cancelCaller(2))
        case "cancelUnknown":
            return describe(lifecycle.cancelCaller(99))
        case "cancel":
            return describe(lifecycle.cancel())
        case "start", "startCancelledByQueue":
            switch lifecycle.start(cancelledByQueue: event == "startCancelledByQueue") {
            case .prepare: return "prepare"
            case .finish: return "finish"
            case .cancelAndFinish(let callers): return "cancelAndFinish \(ids(callers))"
            case .none: return "none"
            }
        case "transferMade":
            switch lifecycle.transferMade(transfer) {
            case .startTransfer(let callers): return "startTransfer \(ids(callers))"
            case .finish: return "finish"
            case .none: return "none"
            }
        case "cacheHit":
            switch lifecycle.cacheHit() {
            case .serve(let callers): return "serve \(ids(callers))"
            case .finish: return "finish"
            case .none: return "none"
            }
        case "beginPartial":
            return "\(lifecycle.beginPartialDecode())"
        case "endPartial":
            return ids(lifecycle.endPartialDecode())
        case "completedOK":
            return describe(lifecycle.transferCompleted(succeeded: true))
        case "completedFail":
            return describe(lifecycle.transferCompleted(succeeded: false))
        case "prepFailed":
            return describe(lifecycle.preparationFailed())
        case "take":
            return ids(lifecycle.takeCallersToServe())
        case "served":
            return "\(lifecycle.served())"
        default:
            preconditionFailure("unknown event \(event)")
        }
    }

    static func lifecycle(in setup: String) -> Lifecycle {
        var lifecycle = Lifecycle()
        _ = lifecycle.attach(Caller(id: 1))
        _ = lifecycle.attach(Caller(id: 2))
        for event in setups.first(where: { $0.name == setup })!.events { apply(event, to: &lifecycle) }
        return lifecycle
    }

    // MARK: Every event in every state

    /// state → event → "what it returned → the state after".
    static let expected: [String: [String: String]] = [
        "waiting": [
            "attach3": "true → waiting",
            "cancelCaller1": "cancelled [1] → waiting",
            "cancelBoth": "cancelled [2] +operation → cancelledWaiting",
            "cancelUnknown": "nothing → waiting",
            "cancel": "cancelled [1,2] +operation → cancelledWaiting",
            "start": "prepare → preparing",
            "startCancelledByQueue": "cancelAndFinish [1,2] → finished",
            "transferMade": "none → waiting",
            "cacheHit": "none → waiting",
            "beginPartial": "false → waiting",
            "endPartial": "[] → waiting",
            "completedOK": "none → waiting",
            "completedFail": "none → waiting",
            "prepFailed": "none → waiting",
            "take": "[] → waiting",
            "served": "false → waiting",
        ],
        "cancelledWaiting": [
            "attach3": "false → cancelledWaiting",
            "cancelCaller1": "nothing → cancelledWaiting",
            "cancelBoth": "nothing → cancelledWaiting",
            "cancelUnknown": "nothing → cancelledWaiting",
            "cancel": "nothing → cancelledWaiting",
            "start": "finish → finished",
            "startCancelledByQueue": "finish → finished",
            "transferMade": "none → cancelledWaiting",
            "cacheHit": "none → cancelledWaiting",
            "beginPartial": "false → cancelledWaiting",
            "endPartial": "[] → cancelledWaiting",
            "completedOK": "none → cancelledWaiting",
            "completedFail": "none → cancelledWaiting",
            "prepFailed": "none → cancelledWaiting",
            "take": "[] → cancelledWaiting",
            "served": "false → cancelledWaiting",
        ],
        "preparing": [
            "attach3": "true → preparing",
            "cancelCaller1": "cancelled [1] → preparing",
            "cancelBoth": "cancelled [2] +operation → cancelledPreparing",
            "cancelUnknown": "nothing → preparing",
            "cancel": "cancelled [1,2] +operation → cancelledPreparing",
            "start": "none → preparing",
            "startCancelledByQueue": "none → preparing",
            "transferMade": "startTransfer [1,2] → transferring",
            "cacheHit": "serve [1,2] → processing",
            "beginPartial": "false → preparing",
            "endPartial": "[] → preparing",
            "completedOK": "none → preparing",
            "completedFail": "none → preparing",
            "prepFailed": "fail [1,2] → processing",
            "take": "[] → preparing",
            "served": "false → preparing",
        ],
        "cancelledPreparing": [
            "attach3": "false → cancelledPreparing",
            "cancelCaller1": "nothing → cancelledPreparing",
            "cancelBoth": "nothing → cancelledPreparing",
            "cancelUnknown": "nothing → cancelledPreparing",
            "cancel": "nothing → cancelledPreparing",
            "start": "none → cancelledPreparing",
            "startCancelledByQueue": "none → cancelledPreparing",
            "transferMade": "finish → finished",
            "cacheHit": "finish → finished",
            "beginPartial": "false → cancelledPreparing",
            "endPartial": "[] → cancelledPreparing",
            "completedOK": "none → cancelledPreparing",
            "completedFail": "none → cancelledPreparing",
            "prepFailed": "finish → finished",
            "take": "[] → cancelledPreparing",
            "served": "false → cancelledPreparing",
        ],
        "transferring": [
            "attach3": "true → transferring",
            "cancelCaller1": "cancelled [1] → transferring",
            "cancelBoth": "cancelled [2] +operation stop 7 → stopping",
            "cancelUnknown": "nothing → transferring",
            "cancel": "cancelled [1,2] +operation stop 7 → stopping",
            "start": "none → transferring",
            "startCancelledByQueue": "none → transferring",
            "transferMade": "none → transferring",
            "cacheHit": "none → transferring",
            "beginPartial": "true → transferring+partial",
            "endPartial": "[] → transferring",
            "completedOK": "process → processing",
            "completedFail": "fail [1,2] +Stop → processing",
            "prepFailed": "none → transferring",
            "take": "[] → transferring",
            "served": "false → transferring",
        ],
        "transferring+partial": [
            "attach3": "true → transferring+partial",
            "cancelCaller1": "cancelled [1] → transferring+partial",
            "cancelBoth": "cancelled [2] +operation stop 7 → stopping",
            "cancelUnknown": "nothing → transferring+partial",
            "cancel": "cancelled [1,2] +operation stop 7 → stopping",
            "start": "none → transferring+partial",
            "startCancelledByQueue": "none → transferring+partial",
            "transferMade": "none → transferring+partial",
            "cacheHit": "none → transferring+partial",
            "beginPartial": "false → transferring+partial",
            "endPartial": "[1,2] → transferring",
            "completedOK": "process → processing",
            "completedFail": "fail [1,2] +Stop → processing",
            "prepFailed": "none → transferring+partial",
            "take": "[] → transferring+partial",
            "served": "false → transferring+partial",
        ],
        "stopping": [
            "attach3": "false → stopping",
            "cancelCaller1": "nothing → stopping",
            "cancelBoth": "nothing → stopping",
            "cancelUnknown": "nothing → stopping",
            "cancel": "nothing → stopping",
            "start": "none → stopping",
            "startCancelledByQueue": "none → stopping",
            "transferMade": "none → stopping",
            "cacheHit": "none → stopping",
            "beginPartial": "false → stopping",
            "endPartial": "[] → stopping",
            "completedOK": "stopAndFinish → finished",
            "completedFail": "stopAndFinish → finished",
            "prepFailed": "none → stopping",
            "take": "[] → stopping",
            "served": "false → stopping",
        ],
        "processing": [
            "attach3": "false → processing",
            "cancelCaller1": "cancelled [1] → processing",
            "cancelBoth": "cancelled [2] → processing",
            "cancelUnknown": "nothing → processing",
            "cancel": "nothing → processing",
            "start": "none → processing",
            "startCancelledByQueue": "none → processing",
            "transferMade": "none → processing",
            "cacheHit": "none → processing",
            "beginPartial": "false → processing",
            "endPartial": "[] → processing",
            "completedOK": "none → processing",
            "completedFail": "none → processing",
            "prepFailed": "none → processing",
            "take": "[1,2] → processing",
            "served": "true → finished",
        ],
        "finished": [
            "attach3": "false → finished",
            "cancelCaller1": "nothing → finished",
            "cancelBoth": "nothing → finished",
            "cancelUnknown": "nothing → finished",
            "cancel": "nothing → finished",
            "start": "none → finished",
            "startCancelledByQueue": "none → finished",
            "transferMade": "none → finished",
            "cacheHit": "none → finished",
            "beginPartial": "false → finished",
            "endPartial": "[] → finished",
            "completedOK": "none → finished",
            "completedFail": "none → finished",
            "prepFailed": "none → finished",
            "take": "[] → finished",
            "served": "false → finished",
        ],
    ]

    static let events = [
        "attach3", "cancelCaller1", "cancelBoth", "cancelUnknown", "cancel", "start", "startCancelledByQueue",
        "transferMade", "cacheHit", "beginPartial", "endPartial", "completedOK", "completedFail", "prepFailed",
        "take", "served",
    ]

    @Test func theSetupsReachTheStatesTheyAreNamedAfter() {
        for setup in Self.setups {
            #expect(Self.name(Self.lifecycle(in: setup.name).state) == setup.name)
        }
    }

    @Test(arguments: setups.map(\.name))
    func everyEventInState(_ setup: String) throws {
        let table = try #require(Self.expected[setup])
        #expect(Set(table.keys) == Set(Self.events), "the table for \(setup) misses events")
        for event in Self.events {
            var lifecycle = Self.lifecycle(in: setup)
            let returned = Self.apply(event, to: &lifecycle)
            let outcome = "\(returned) → \(Self.name(lifecycle.state))"
            #expect(outcome == table[event], "\(event) in \(setup)")
        }
    }

    @Test func theQueueSeesExecutingFromStartUntilFinished() {
        let executing = Self.setups.filter { Self.lifecycle(in: $0.name).isExecuting }.map(\.name)
        #expect(
            executing == [
                "preparing", "cancelledPreparing", "transferring", "transferring+partial", "stopping", "processing",
            ])
        let finished = Self.setups.filter { Self.lifecycle(in: $0.name).isFinished }.map(\.name)
        #expect(finished == ["finished"])
        let started = Self.setups.filter { Self.lifecycle(in: $0.name).hasStarted }.map(\.name)
        #expect(!started.contains("waiting") && !started.contains("cancelledWaiting") && started.count == 7)
    }

    @Test func startingWithNobodyWaitingFinishes() {
        var lifecycle = Lifecycle()
        #expect(Self.apply("start", to: &lifecycle) == "finish")
        #expect(lifecycle.isFinished)
    }

    // MARK: Random sequences

    /// Splits a random event sequence into what each caller was handed and checks the operation's rules:
    /// each caller handed out at most once, every caller handed out by the time the queue is told, the
    /// queue told at most once and only after `start`, a partial image never after the outcome, and a
    /// cancelled operation never served.
    @Test func randomSequencesKeepTheRules() {
        var random = SeededGenerator(seed: 0x5EED)
        let events = Self.events.filter { $0 != "cancelBoth" && $0 != "attach3" } + ["attach", "attach"]
        for _ in 0..<20_000 {
            var lifecycle = Lifecycle()
            var nextID: UInt64 = 1
            var attached: Set<UInt64> = []
            var handedOut: [UInt64: Int] = [:]
            var finishes = 0
            var started = false
            var cancelledWhole = false
            var outcomeKnown = false
            func hand(_ callers: [Caller]) {
                for caller in callers { handedOut[caller.id, default: 0] += 1 }
            }
            for _ in 0..<12 {
                let event = events[Int(random.next() % UInt64(events.count))]
                switch event {
                case "attach":
                    if lifecycle.attach(Caller(id: nextID)) { attached.insert(nextID) }
                    nextID += 1
                case "cancelCaller1":
                    let id = attached.sorted().randomElement(using: &random) ?? 99
                    let action = lifecycle.cancelCaller(id)
                    hand(action.callers)
                    if action.cancelsOperation { cancelledWhole = true }
                case "cancelUnknown":
                    #expect(lifecycle.cancelCaller(999).callers.isEmpty)
                case "cancel":
                    let action = lifecycle.cancel()
                    hand(action.callers)
                    if action.cancelsOperation { cancelledWhole = true }
                case "start", "startCancelledByQueue":
                    switch lifecycle.start(cancelledByQueue: event == "startCancelledByQueue") {
                    case .prepare: started = true
                    case .finish:
                        started = true
                        finishes += 1
                    case .cancelAndFinish(let callers):
                        started = true
                        hand(callers)
                        finishes += 1
                    case .none: break
                    }
                case "transferMade":
                    if case .finish = lifecycle.transferMade(Self.transfer) { finishes += 1 }
                case "cacheHit":
                    switch lifecycle.cacheHit() {
                    case .serve:
                        #expect(!cancelledWhole, "a cancelled operation was served from the cache")
                        outcomeKnown = true
                    case .finish: finishes += 1
                    case .none: break
                    }
                case "beginPartial":
                    if lifecycle.beginPartialDecode() { #expect(!outcomeKnown && !cancelledWhole) }
                case "endPartial":
                    let callers = lifecycle.endPartialDecode()
                    #expect(callers.isEmpty || (!outcomeKnown && !cancelledWhole), "a partial after the outcome")
                case "completedOK", "completedFail", "prepFailed":
                    let action =
                        event == "prepFailed"
                        ? lifecycle.preparationFailed() : lifecycle.transferCompleted(succeeded: event == "completedOK")
                    switch action {
                    case .process:
                        #expect(!cancelledWhole, "a cancelled operation was processed")
                        outcomeKnown = true
                    case .fail(let callers, _):
                        hand(callers)
                        outcomeKnown = true
                        if lifecycle.served() { finishes += 1 }
                    case .stopAndFinish, .finish: finishes += 1
                    case .none: break
                    }
                case "take":
                    hand(lifecycle.takeCallersToServe())
                case "served":
                    // The operation serves only after taking the callers.
                    hand(lifecycle.takeCallersToServe())
                    if lifecycle.served() { finishes += 1 }
                default:
                    break
                }
                #expect(handedOut.values.allSatisfy { $0 == 1 }, "a caller was handed out twice")
                #expect(finishes <= 1, "the queue was told twice")
                #expect(finishes == 0 || started, "finished before start")
                #expect(lifecycle.isFinished == (finishes == 1))
                if lifecycle.isFinished {
                    #expect(Set(handedOut.keys) == attached, "a caller was lost")
                    #expect(lifecycle.callers.isEmpty)
                }
            }
        }
    }

    // MARK: A cache hit that must cover every caller

    @Test func aHitThatDoesNotCoverEveryCallerLeavesTheOperationPreparing() {
        var lifecycle = Lifecycle()
        _ = lifecycle.attach(Caller(id: 1))
        _ = lifecycle.start()
        _ = lifecycle.attach(Caller(id: 2))  // joined after the lookup, which covered caller 1 only
        #expect(lifecycle.cacheHit(ifEvery: { $0.id == 1 }) == nil)
        #expect(Self.name(lifecycle.state) == "preparing")
        #expect(lifecycle.callers == [Caller(id: 1), Caller(id: 2)])

        guard case .serve(let served)? = lifecycle.cacheHit(ifEvery: { _ in true }) else {
            Issue.record("a hit covering every caller must serve them")
            return
        }
        #expect(served == [Caller(id: 1), Caller(id: 2)])
        #expect(Self.name(lifecycle.state) == "processing")

        // A cancel during the lookup finishes the operation, whoever the hit covers.
        var cancelled = Lifecycle()
        _ = cancelled.attach(Caller(id: 1))
        _ = cancelled.start()
        _ = cancelled.cancel()
        guard case .finish? = cancelled.cacheHit(ifEvery: { _ in false }) else {
            Issue.record("a cancelled lookup must finish")
            return
        }
        #expect(Self.name(cancelled.state) == "finished")
    }
}
