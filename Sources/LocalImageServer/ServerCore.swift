import Foundation
import Locking

/// A file served by the file routes: either read from `root` or installed with `setFile`.
struct ServedFile: Sendable {
    var data: Data
    var contentType: String
    var etag: String
    var lastModified: Date
}

/// A custom route registered with `LocalImageServer.route(_:_:)`.
struct CustomRoute: Sendable {
    var prefix: String
    var handler: @Sendable (LocalImageServer.Request) -> LocalImageServer.Response
}

/// Everything the connection handlers share: routes, installed files, the request log and the
/// connection accounting. All mutable state sits in one `Lock`; route handlers run after unlocking.
package final class ServerCore: Sendable {
    struct State {
        var log: [LocalImageServer.LogEntry] = []
        /// Log position of each entry still in `log`, by sequence number.
        var logIndex: [Int: Int] = [:]
        var nextSequence = 1
        var nextConnectionID = 1
        var acceptedConnections = 0
        var openConnections = 0
        var inFlight = 0
        var maxInFlight = 0
        var files: [String: ServedFile] = [:]
        var routes: [CustomRoute] = []
        /// Gates opened with `openGate`, and the responses still waiting at the closed ones.
        var openGates: Set<String> = []
        var gateWaiters: [String: [@Sendable () -> Void]] = [:]
    }

    let root: URL?
    let state = Lock(State())
    /// Announced after every change of the log or the counters, so tests can wait for the server's
    /// side of an exchange as an event (`LocalImageServer.wait(timeout:until:)`) instead of polling.
    private let changes = ChangeSignal()

    init(root: URL?) {
        self.root = root
    }

    // MARK: Connections

    /// Counts an accepted connection and returns its id.
    func connectionOpened() -> Int {
        defer { announceChange() }
        return state.withLock { state in
            state.acceptedConnections += 1
            state.openConnections += 1
            defer { state.nextConnectionID += 1 }
            return state.nextConnectionID
        }
    }

    package func connectionClosed() {
        state.withLock { $0.openConnections -= 1 }
        announceChange()
    }

    // MARK: Request log

    /// Logs a request whose head just arrived and counts it in flight; returns its sequence number.
    func requestStarted(_ request: LocalImageServer.Request) -> Int {
        defer { announceChange() }
        return state.withLock { state in
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.logIndex[sequence] = state.log.count
            state.log.append(
                LocalImageServer.LogEntry(
                    sequence: sequence, request: request, status: nil, bytesSent: 0, outcome: .inFlight))
            state.inFlight += 1
            state.maxInFlight = max(state.maxInFlight, state.inFlight)
            return sequence
        }
    }

    /// Updates the entry `sequence` if it is still in the log; it is gone after `resetLog()`, which is
    /// fine: a reset means the test no longer cares about earlier requests.
    private func updateEntry(
        _ sequence: Int, in state: inout State, _ body: (inout LocalImageServer.LogEntry) -> Void
    ) {
        guard let index = state.logIndex[sequence] else { return }
        body(&state.log[index])
    }

    func responseHeadSent(_ sequence: Int, status: Int) {
        state.withLock { state in updateEntry(sequence, in: &state) { $0.status = status } }
        announceChange()
    }

    func bodyBytesSent(_ sequence: Int, count: Int) {
        state.withLock { state in updateEntry(sequence, in: &state) { $0.bytesSent += count } }
        announceChange()
    }

    /// Ends the request `sequence`: it leaves the in-flight count exactly once, whatever the outcome.
    func requestEnded(_ sequence: Int, outcome: LocalImageServer.Outcome) {
        state.withLock { state in
            state.inFlight -= 1
            updateEntry(sequence, in: &state) { $0.outcome = outcome }
        }
        announceChange()
    }

    func resetLog() {
        state.withLock { state in
            state.log.removeAll()
            state.logIndex.removeAll()
            state.acceptedConnections = 0
            state.maxInFlight = state.inFlight
        }
        announceChange()
    }

    // MARK: Waiting for changes

    private func announceChange() {
        changes.announce()
    }

    /// Waits until `condition` holds, re-checking it after every change of the log or the counters;
    /// returns false when `deadline` passes first.
    func wait(until deadline: Date, for condition: () -> Bool) -> Bool {
        changes.wait(until: deadline, for: condition)
    }

    // MARK: Gates

    /// Runs `action` once the gate `name` is open: now if it already is, else when `openGate` opens it.
    func whenGateOpens(_ name: String, _ action: @escaping @Sendable () -> Void) {
        let isOpen = state.withLock { state -> Bool in
            if state.openGates.contains(name) { return true }
            state.gateWaiters[name, default: []].append(action)
            return false
        }
        if isOpen {
            action()
        } else {
            changes.announce()  // a response now waits at the gate: `wait(until:)` callers re-check
        }
    }

    /// Opens the gate `name`: the responses waiting there go on, and later ones pass straight through.
    func openGate(_ name: String) {
        let waiting = state.withLock { state -> [@Sendable () -> Void] in
            state.openGates.insert(name)
            return state.gateWaiters.removeValue(forKey: name) ?? []
        }
        for action in waiting { action() }
        changes.announce()
    }

    /// Forgets the responses waiting at closed gates without sending them (the server shut down).
    func dropGateWaiters() {
        // Taken out under the lock and released after it: a waiter's captures may lock on deinit.
        let dropped = state.withLock { state in
            defer { state.gateWaiters = [:] }
            return state.gateWaiters
        }
        withExtendedLifetime(dropped) {}
    }

    /// How many responses wait at the gate `name` now.
    func waitingCount(at name: String) -> Int {
        state.withLock { $0.gateWaiters[name]?.count ?? 0 }
    }

    // MARK: Files and routes

    /// The file `name` (relative, percent-decoded): an installed one first, else one read from `root`.
    func file(named name: String) -> ServedFile? {
        if let installed = state.withLock({ $0.files[name] }) { return installed }
        guard let root, !name.isEmpty, !name.split(separator: "/").contains("..") else { return nil }
        let url = root.appendingPathComponent(name)
        guard let data = try? Data(contentsOf: url) else { return nil }
        return ServedFile(
            data: data,
            contentType: ContentTypes.forName(name),
            etag: ContentTypes.strongETag(for: data),
            lastModified: ContentTypes.fixedLastModified
        )
    }

    func setFile(name: String, data: Data, contentType: String?, etag: String?, lastModified: Date?) {
        state.withLock { state in
            // Whole seconds, and strictly later than the version it replaces: HTTP dates have one-second
            // resolution, and a "resource changed" test must see a newer Last-Modified.
            var modified = lastModified ?? Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            if lastModified == nil, let previous = state.files[name]?.lastModified, modified <= previous {
                modified = previous.addingTimeInterval(1)
            }
            state.files[name] = ServedFile(
                data: data,
                contentType: contentType ?? ContentTypes.forName(name),
                etag: etag ?? ContentTypes.strongETag(for: data),
                lastModified: modified
            )
        }
    }

    func removeFile(name: String) {
        _ = state.withLock { $0.files.removeValue(forKey: name) }
    }

    func addRoute(_ route: CustomRoute) {
        state.withLock { $0.routes.append(route) }
    }

    /// The custom route with the longest prefix matching `path`; the later one wins a tie.
    func customRoute(for path: String) -> CustomRoute? {
        state.withLock { state in
            var best: CustomRoute?
            for route in state.routes where path.hasPrefix(route.prefix) {
                if route.prefix.count >= (best?.prefix.count ?? -1) { best = route }
            }
            return best
        }
    }
}

/// A generation counter behind a condition variable: `announce` moves it on and wakes every waiter;
/// a waiter re-checks its condition after each announcement, so none is missed between the check and
/// the sleep (the waiter remembers the generation it checked against).
final class ChangeSignal: @unchecked Sendable {
    // @unchecked Sendable: `generation` is only read or written while `condition` is locked.
    private let condition = NSCondition()
    private var generation = 0

    func announce() {
        condition.lock()
        generation &+= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `check` returns true or `deadline` passes; `check` runs without `condition` locked.
    func wait(until deadline: Date, for check: () -> Bool) -> Bool {
        while true {
            condition.lock()
            let seen = generation
            condition.unlock()
            if check() { return true }
            condition.lock()
            defer { condition.unlock() }
            while generation == seen {
                guard condition.wait(until: deadline) else { return false }
            }
        }
    }
}
