import Foundation
import TestSupport
import Testing

@testable import WebImage

/// `OperationLifecycle` as a plain value: every event in every state, the revalidation paths, then random
/// event sequences checked against the rules the operation relies on. No threads, transport or decoder.
@Suite(.timeLimit(.minutes(5))) struct OperationLifecycleTests {
    struct Caller: LifecycleCaller, Equatable {
        let id: UInt64
    }
    typealias Lifecycle = OperationLifecycle<Caller, Int, String>

    /// The transfer every test's `transferMade` hands in.
    static let transfer = 7

    // MARK: A stored entry to revalidate

    static let url = URL(string: "http://lifecycle.test/a.png")!
    static let requestDate = Date(timeIntervalSince1970: 1_000_000)
    /// When the 304s answer.
    static let answerDate = Date(timeIntervalSince1970: 1_000_005)
    static let stored = CachedHTTPResponse(
        response: TransferResponse(
            url: url, statusCode: 200,
            headers: ["Content-Type": "image/png", "ETag": "\"v1\"", "Cache-Control": "max-age=0"]),
        body: Data("stored".utf8), requestDate: requestDate, responseDate: requestDate)
    /// A 304 confirming `stored`, with a new freshness lifetime.
    static let confirming = TransferResponse(
        url: url, statusCode: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=60"])
    /// A 304 for another representation than `stored`.
    static let otherVersion = TransferResponse(url: url, statusCode: 304, headers: ["ETag": "\"v2\""])
    static let replacement = TransferResponse(
        url: url, statusCode: 200, headers: ["Content-Type": "image/png", "ETag": "\"v2\""])

    static func exchange(_ revalidation: HTTPCacheExchange.Revalidation) -> HTTPCacheExchange {
        HTTPCacheExchange(cache: HTTPCache(directory: nil), requestDate: requestDate, revalidation: revalidation)
    }

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

    /// The state's name; a `phase` that is not the state's case shows in it, so every comparison of names
    /// also checks that the two agree.
    static func name(_ lifecycle: Lifecycle) -> String {
        let mismatch = lifecycle.state.phase == lifecycle.phase ? "" : " (phase \(lifecycle.phase))"
        return stateName(lifecycle) + mismatch
    }

    private static func stateName(_ lifecycle: Lifecycle) -> String {
        switch lifecycle.state {
        case .waiting: "waiting"
        case .cancelledWaiting: "cancelledWaiting"
        case .preparing: "preparing"
        case .cancelledPreparing: "cancelledPreparing"
        case .transferring(let running):
            "transferring\(running.transfer == Self.transfer ? "" : " of another transfer")"
                + (lifecycle.progress.decodingPartial ? "+partial" : "")
        case .stopping: "stopping"
        case .processing: "processing"
        case .finished: "finished"
        }
    }

    /// Whether the lifecycle's transfer carries validators that no 304 answered yet.
    static func isValidating(_ lifecycle: Lifecycle) -> Bool {
        let exchange: HTTPCacheExchange?
        switch lifecycle.state {
        case .transferring(let running): exchange = running.cache
        case .stopping(let stopping): exchange = stopping.cache
        default: exchange = nil
        }
        if case .validating? = exchange?.revalidation { return true }
        return false
    }

    static func describe(_ write: HTTPCacheWrite?) -> String {
        switch write?.change {
        case nil: ""
        case .store(let response, _)?: " store \(response.statusCode)"
        case .refresh(let notModified, _, _)?: " refresh with \(notModified.headers["ETag"] ?? "no ETag")"
        case .remove?: " remove"
        }
    }

    static func describe(_ head: TransferResponse) -> String {
        "\(head.statusCode) \(head.headers["Cache-Control"] ?? "")"
    }

    static func describe(_ action: Lifecycle.NotModifiedAction) -> String {
        switch action {
        case .serveStored(let head): "serveStored \(describe(head))"
        case .refuse(let head): "refuse \(describe(head))"
        case .confirmsNothing: "confirmsNothing"
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
        case .process(let storedBody, let write):
            "process" + (storedBody.map { " stored \(String(decoding: $0, as: UTF8.self))" } ?? "") + describe(write)
        case .fail(let callers, let postsStop, let write):
            "fail \(ids(callers))\(postsStop ? " +Stop" : "")" + describe(write)
        case .stopAndFinish(let write): "stopAndFinish" + describe(write)
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
        case "transferMade", "transferMadeFetching", "transferMadeValidating":
            let cache: HTTPCacheExchange? =
                switch event {
                case "transferMadeFetching": exchange(.fetching)
                case "transferMadeValidating": exchange(.validating(stored))
                default: nil
                }
            switch lifecycle.transferMade(transfer, cache: cache) {
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
        case "notModified", "notModifiedIgnored", "notModifiedOther":
            let answer = event == "notModifiedOther" ? otherVersion : confirming
            return describe(
                lifecycle.notModified(answer, at: answerDate, ignoringCachedResponse: event == "notModifiedIgnored"))
        case "response":
            return ids(lifecycle.responseReceived(replacement, expectedSize: 10))
        case "bytes":
            let action = lifecycle.bytesReceived(total: 5, at: 1_000, interval: 0)
            return "\(ids(action.callers)) of \(action.expectedSize)\(action.decodesPartial ? " +partial" : "")"
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
            "notModified": "confirmsNothing → waiting",
            "response": "[] → waiting",
            "bytes": "[] of -1 → waiting",
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
            "notModified": "confirmsNothing → cancelledWaiting",
            "response": "[] → cancelledWaiting",
            "bytes": "[] of -1 → cancelledWaiting",
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
            "notModified": "confirmsNothing → preparing",
            "response": "[] → preparing",
            "bytes": "[] of -1 → preparing",
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
            "notModified": "confirmsNothing → cancelledPreparing",
            "response": "[] → cancelledPreparing",
            "bytes": "[] of -1 → cancelledPreparing",
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
            "notModified": "confirmsNothing → transferring",
            "response": "[1,2] → transferring",
            "bytes": "[1,2] of -1 → transferring",
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
            "notModified": "confirmsNothing → transferring+partial",
            "response": "[1,2] → transferring+partial",
            "bytes": "[1,2] of -1 → transferring+partial",
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
            "notModified": "confirmsNothing → stopping",
            "response": "[] → stopping",
            "bytes": "[] of -1 → stopping",
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
            "notModified": "confirmsNothing → processing",
            "response": "[] → processing",
            "bytes": "[] of -1 → processing",
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
            "notModified": "confirmsNothing → finished",
            "response": "[] → finished",
            "bytes": "[] of -1 → finished",
        ],
    ]

    static let events = [
        "attach3", "cancelCaller1", "cancelBoth", "cancelUnknown", "cancel", "start", "startCancelledByQueue",
        "transferMade", "cacheHit", "beginPartial", "endPartial", "completedOK", "completedFail", "prepFailed",
        "take", "served", "notModified", "response", "bytes",
    ]

    @Test func theSetupsReachTheStatesTheyAreNamedAfter() {
        for setup in Self.setups {
            #expect(Self.name(Self.lifecycle(in: setup.name)) == setup.name)
        }
    }

    @Test(arguments: setups.map(\.name))
    func everyEventInState(_ setup: String) throws {
        let table = try #require(Self.expected[setup])
        #expect(Set(table.keys) == Set(Self.events), "the table for \(setup) misses events")
        for event in Self.events {
            var lifecycle = Self.lifecycle(in: setup)
            let returned = Self.apply(event, to: &lifecycle)
            let outcome = "\(returned) → \(Self.name(lifecycle))"
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

    // MARK: Revalidation

    /// Each revalidation path, from a lifecycle with callers 1 and 2 attached: event → "what it returned →
    /// the state after". Every path hands each caller out once (a `cancelled`, a failure, or `take`).
    static let revalidationPaths: [String: [(event: String, outcome: String)]] = [
        "a confirming 304 serves the stored body and refreshes the entry": [
            ("start", "prepare → preparing"),
            ("transferMadeValidating", "startTransfer [1,2] → transferring"),
            ("notModified", "serveStored 200 max-age=60 → transferring"),
            ("response", "[1,2] → transferring"),
            ("completedOK", "process stored stored refresh with \"v1\" → processing"),
            ("take", "[1,2] → processing"),
            ("served", "true → finished"),
        ],
        "a 200 to the validators replaces the entry": [
            ("start", "prepare → preparing"),
            ("transferMadeValidating", "startTransfer [1,2] → transferring"),
            ("response", "[1,2] → transferring"),
            ("bytes", "[1,2] of 10 → transferring"),
            ("completedOK", "process store 200 → processing"),
            ("take", "[1,2] → processing"),
            ("served", "true → finished"),
        ],
        "a request without validators stores its answer": [
            ("start", "prepare → preparing"),
            ("transferMadeFetching", "startTransfer [1,2] → transferring"),
            ("response", "[1,2] → transferring"),
            ("completedOK", "process store 200 → processing"),
            ("take", "[1,2] → processing"),
            ("served", "true → finished"),
        ],
        "a 304 for another representation fails and removes the entry": [
            ("start", "prepare → preparing"),
            ("transferMadeValidating", "startTransfer [1,2] → transferring"),
            ("notModifiedOther", "confirmsNothing → transferring"),
            ("completedFail", "fail [1,2] +Stop remove → processing"),
            ("served", "true → finished"),
        ],
        "a confirming 304 with ignoreCachedResponse fails and still refreshes the entry": [
            ("start", "prepare → preparing"),
            ("transferMadeValidating", "startTransfer [1,2] → transferring"),
            ("notModifiedIgnored", "refuse 200 max-age=60 → transferring"),
            ("completedFail", "fail [1,2] +Stop refresh with \"v1\" → processing"),
            ("served", "true → finished"),
        ],
        "a failure before the answer writes nothing": [
            ("start", "prepare → preparing"),
            ("transferMadeValidating", "startTransfer [1,2] → transferring"),
            ("completedFail", "fail [1,2] +Stop → processing"),
            ("served", "true → finished"),
        ],
        "a failure after a confirming 304 still refreshes the entry": [
            ("start", "prepare → preparing"),
            ("transferMadeValidating", "startTransfer [1,2] → transferring"),
            ("notModified", "serveStored 200 max-age=60 → transferring"),
            ("completedFail", "fail [1,2] +Stop refresh with \"v1\" → processing"),
            ("served", "true → finished"),
        ],
        "a 200 that fails is not stored": [
            ("start", "prepare → preparing"),
            ("transferMadeFetching", "startTransfer [1,2] → transferring"),
            ("response", "[1,2] → transferring"),
            ("completedFail", "fail [1,2] +Stop → processing"),
            ("served", "true → finished"),
        ],
        "a cancel during revalidation stops the transfer and writes nothing": [
            ("start", "prepare → preparing"),
            ("transferMadeValidating", "startTransfer [1,2] → transferring"),
            ("cancel", "cancelled [1,2] +operation stop 7 → stopping"),
            ("completedFail", "stopAndFinish → finished"),
        ],
        "a cancel after a confirming 304 still refreshes the entry": [
            ("start", "prepare → preparing"),
            ("transferMadeValidating", "startTransfer [1,2] → transferring"),
            ("notModified", "serveStored 200 max-age=60 → transferring"),
            ("cancel", "cancelled [1,2] +operation stop 7 → stopping"),
            ("completedOK", "stopAndFinish refresh with \"v1\" → finished"),
        ],
        "a 304 arriving after the cancel still refreshes the entry and serves nobody": [
            ("start", "prepare → preparing"),
            ("transferMadeValidating", "startTransfer [1,2] → transferring"),
            ("cancel", "cancelled [1,2] +operation stop 7 → stopping"),
            ("notModified", "serveStored 200 max-age=60 → stopping"),
            ("response", "[] → stopping"),
            ("bytes", "[] of -1 → stopping"),
            ("completedOK", "stopAndFinish refresh with \"v1\" → finished"),
        ],
        "a 304 to a request without validators confirms nothing": [
            ("start", "prepare → preparing"),
            ("transferMadeFetching", "startTransfer [1,2] → transferring"),
            ("notModified", "confirmsNothing → transferring"),
            ("completedFail", "fail [1,2] +Stop → processing"),
            ("served", "true → finished"),
        ],
        "a second 304 confirms nothing and keeps what the first one taught": [
            ("start", "prepare → preparing"),
            ("transferMadeValidating", "startTransfer [1,2] → transferring"),
            ("notModified", "serveStored 200 max-age=60 → transferring"),
            ("notModifiedOther", "confirmsNothing → transferring"),
            ("completedFail", "fail [1,2] +Stop refresh with \"v1\" → processing"),
            ("served", "true → finished"),
        ],
        "a 304 before the transfer or after the outcome confirms nothing": [
            ("notModified", "confirmsNothing → waiting"),
            ("start", "prepare → preparing"),
            ("notModified", "confirmsNothing → preparing"),
            ("transferMadeValidating", "startTransfer [1,2] → transferring"),
            ("response", "[1,2] → transferring"),
            ("completedOK", "process store 200 → processing"),
            ("notModified", "confirmsNothing → processing"),
            ("take", "[1,2] → processing"),
            ("served", "true → finished"),
            ("notModified", "confirmsNothing → finished"),
        ],
    ]

    @Test(arguments: revalidationPaths.keys.sorted())
    func revalidationPath(_ path: String) throws {
        let steps = try #require(Self.revalidationPaths[path])
        var lifecycle = Lifecycle()
        _ = lifecycle.attach(Caller(id: 1))
        _ = lifecycle.attach(Caller(id: 2))
        for (index, step) in steps.enumerated() {
            let returned = Self.apply(step.event, to: &lifecycle)
            #expect("\(returned) → \(Self.name(lifecycle))" == step.outcome, "step \(index + 1): \(step.event)")
        }
        #expect(lifecycle.isFinished)
        #expect(lifecycle.callers.isEmpty)
    }

    /// What a confirming 304 produces in detail: the head served (the stored one, refreshed, as a 200),
    /// the stored body, and the refresh written with the 304 and the exchange's dates.
    @Test func aConfirming304RefreshesTheStoredHeadAndKeepsItsBody() throws {
        var lifecycle = Lifecycle()
        _ = lifecycle.attach(Caller(id: 1))
        _ = lifecycle.start()
        _ = lifecycle.transferMade(Self.transfer, cache: Self.exchange(.validating(Self.stored)))
        guard
            case .serveStored(let head) = lifecycle.notModified(
                Self.confirming, at: Self.answerDate, ignoringCachedResponse: false)
        else {
            Issue.record("a confirming 304 must serve the stored entry")
            return
        }
        #expect(head.statusCode == 200)
        #expect(head.headers["ETag"] == "\"v1\"")
        #expect(head.headers["Content-Type"] == "image/png")
        #expect(head.headers["Cache-Control"] == "max-age=60")
        _ = lifecycle.responseReceived(head, expectedSize: -1)
        guard case .process(let body?, let write?) = lifecycle.transferCompleted(succeeded: true),
            case .refresh(let notModified, let requestDate, let responseDate) = write.change
        else {
            Issue.record("the completion must serve the stored body and refresh the entry")
            return
        }
        #expect(body == Self.stored.body)
        #expect(notModified == Self.confirming)
        #expect(requestDate == Self.requestDate)
        #expect(responseDate == Self.answerDate)
        #expect(lifecycle.response == head)
        _ = lifecycle.takeCallersToServe()
        _ = lifecycle.served()
        #expect(lifecycle.response == head, "the head outlives the operation (ImageDownloaderOperation.response)")
    }

    // MARK: Progress and the decoder

    @Test func progressIsThrottledWhileTheLengthIsKnownButNeverTheLastChunk() {
        var lifecycle = Lifecycle()
        _ = lifecycle.attach(Caller(id: 1))
        _ = lifecycle.start()
        _ = lifecycle.transferMade(Self.transfer, decodesProgressively: true)
        _ = lifecycle.responseReceived(Self.replacement, expectedSize: 100)
        func report(_ total: Int64, at now: UInt64) -> String {
            let action = lifecycle.bytesReceived(total: total, at: now, interval: 50)
            return "\(Self.ids(action.callers))\(action.decodesPartial ? " +partial" : "")"
        }
        #expect(report(10, at: 1_000) == "[1] +partial")
        #expect(report(20, at: 1_020) == "[]", "within the interval")
        #expect(report(30, at: 1_050) == "[1]", "a partial decode is still under way")
        #expect(Self.ids(lifecycle.endPartialDecode()) == "[1]")
        #expect(report(40, at: 1_060) == "[]")
        #expect(report(100, at: 1_061) == "[1]", "the last chunk, never held back nor decoded partially")
        #expect(report(50, at: 1_200) == "[1] +partial")
    }

    @Test func theDecoderMadeWhileTransferringIsTheOneProcessingUses() {
        var lifecycle = Lifecycle()
        _ = lifecycle.attach(Caller(id: 1))
        var made = 0
        func make() -> String {
            made += 1
            return "decoder \(made)"
        }
        #expect(lifecycle.decoder(orMake: make) == "decoder 1", "nothing keeps a decoder before the transfer")
        _ = lifecycle.start()
        _ = lifecycle.transferMade(Self.transfer)
        #expect(!lifecycle.hasDecoder)
        #expect(lifecycle.decoder(orMake: make) == "decoder 2")
        #expect(lifecycle.decoder(orMake: make) == "decoder 2")
        _ = lifecycle.transferCompleted(succeeded: true)
        #expect(lifecycle.hasDecoder)
        #expect(lifecycle.decoder(orMake: make) == "decoder 2")
        _ = lifecycle.takeCallersToServe()
        _ = lifecycle.served()
        #expect(!lifecycle.hasDecoder)

        var cancelled = Lifecycle()
        _ = cancelled.attach(Caller(id: 1))
        _ = cancelled.start()
        _ = cancelled.transferMade(Self.transfer)
        _ = cancelled.cancel()
        #expect(cancelled.decoder(orMake: make) == "decoder 3", "a stopped transfer keeps none")
        #expect(!cancelled.hasDecoder)
    }

    // MARK: Random sequences

    /// Splits a random event sequence into what each caller was handed and checks the operation's rules:
    /// each caller handed out at most once, every caller handed out by the time the queue is told, the
    /// queue told at most once and only after `start`, a partial image or progress never after the
    /// outcome, a cancelled operation never served, and the HTTP cache written at most once: a stored body
    /// served only after a 304 confirmed it, a refresh or removal only after a 304, a new answer stored
    /// only when it is served.
    @Test func randomSequencesKeepTheRules() {
        var random = SeededGenerator(seed: 0x5EED)
        let events =
            Self.events.filter { $0 != "cancelBoth" && $0 != "attach3" }
            + ["attach", "attach", "transferMadeValidating", "notModifiedIgnored", "notModifiedOther"]
        for _ in 0..<20_000 {
            var lifecycle = Lifecycle()
            var nextID: UInt64 = 1
            var attached: Set<UInt64> = []
            var handedOut: [UInt64: Int] = [:]
            var finishes = 0
            var started = false
            var cancelledWhole = false
            var outcomeKnown = false
            var storedBodyConfirmed = false
            var answered304 = false
            var cacheWrites = 0
            func hand(_ callers: [Caller]) {
                for caller in callers { handedOut[caller.id, default: 0] += 1 }
            }
            func written(_ write: HTTPCacheWrite?, served: Bool) {
                guard let write else { return }
                cacheWrites += 1
                switch write.change {
                case .store: #expect(served && !answered304, "an answer stored without being served, or a 304 stored")
                case .refresh, .remove: #expect(answered304, "a cache entry refreshed or removed without a 304")
                }
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
                case "transferMade", "transferMadeValidating":
                    let cache = event == "transferMade" ? nil : Self.exchange(.validating(Self.stored))
                    if case .finish = lifecycle.transferMade(Self.transfer, cache: cache) { finishes += 1 }
                case "notModified", "notModifiedIgnored", "notModifiedOther":
                    let answer = event == "notModifiedOther" ? Self.otherVersion : Self.confirming
                    let validating = Self.isValidating(lifecycle)
                    let action = lifecycle.notModified(
                        answer, at: Self.answerDate, ignoringCachedResponse: event == "notModifiedIgnored")
                    #expect(validating || action == .confirmsNothing, "a 304 confirmed what nobody asked about")
                    if validating {
                        answered304 = true
                        if case .serveStored = action { storedBodyConfirmed = true }
                    }
                case "response":
                    let callers = lifecycle.responseReceived(Self.replacement, expectedSize: 10)
                    #expect(callers.isEmpty || (!outcomeKnown && !cancelledWhole), "a response after the outcome")
                case "bytes":
                    let callers = lifecycle.bytesReceived(total: 5, at: 1_000, interval: 0).callers
                    #expect(callers.isEmpty || (!outcomeKnown && !cancelledWhole), "progress after the outcome")
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
                    case .process(let storedBody, let write):
                        #expect(!cancelledWhole, "a cancelled operation was processed")
                        #expect(storedBody == nil || storedBodyConfirmed, "a stored body served unconfirmed")
                        written(write, served: true)
                        outcomeKnown = true
                    case .fail(let callers, _, let write):
                        hand(callers)
                        written(write, served: false)
                        outcomeKnown = true
                        if lifecycle.served() { finishes += 1 }
                    case .stopAndFinish(let write):
                        written(write, served: false)
                        finishes += 1
                    case .finish: finishes += 1
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
                #expect(cacheWrites <= 1, "the cache was written twice")
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
        #expect(Self.name(lifecycle) == "preparing")
        #expect(lifecycle.callers == [Caller(id: 1), Caller(id: 2)])

        guard case .serve(let served)? = lifecycle.cacheHit(ifEvery: { _ in true }) else {
            Issue.record("a hit covering every caller must serve them")
            return
        }
        #expect(served == [Caller(id: 1), Caller(id: 2)])
        #expect(Self.name(lifecycle) == "processing")

        // A cancel during the lookup finishes the operation, whoever the hit covers.
        var cancelled = Lifecycle()
        _ = cancelled.attach(Caller(id: 1))
        _ = cancelled.start()
        _ = cancelled.cancel()
        guard case .finish? = cancelled.cacheHit(ifEvery: { _ in false }) else {
            Issue.record("a cancelled lookup must finish")
            return
        }
        #expect(Self.name(cancelled) == "finished")
    }
}
