import CCurl
import Foundation
import Locking
import Synchronization

/// Runs every transfer of one downloader on one curl multi handle, driven by one dedicated thread.
///
/// Other threads never call curl on the multi handle: they append a command under `commands` and wake
/// the loop with `curl_multi_wakeup`, the only multi call documented as safe from another thread.
/// All curl callbacks therefore run on the transport thread.
///
/// ```
///  caller threads ──start/cancel──▶ [command list] ──wakeup──▶ transport thread
///                                                                 curl_multi_perform / poll
///                                                                 write/header callbacks → delegate
///                                                                 DONE → remove handle → delegate
/// ```
package final class CurlTransport: HTTPTransport {
    private let loop: TransportLoop
    /// The share handle (cookies, DNS, TLS sessions) every transfer of this transport uses.
    package let share: CurlShare
    private let handles: EasyHandlePool

    /// Starts the transport thread. `maxConnectionsPerHost` caps the transfers (and curl's connections)
    /// to one host and `maxTotalConnections` those to all hosts together (0: no cap). A transfer past a
    /// cap waits, outside curl, until one of the host's transfers ends (see `TransferAdmission`).
    /// `share` is the cookie jar's share handle when the downloader has a jar; otherwise the transport
    /// makes its own (cookies then live as long as the transport).
    ///
    package convenience init(
        name: String = "WebImage.transport", maxConnectionsPerHost: Int = 0, maxTotalConnections: Int = 0,
        share: CurlShare? = nil
    ) throws(TransportError) {
        try self.init(
            name: name, maxConnectionsPerHost: maxConnectionsPerHost, maxTotalConnections: maxTotalConnections,
            share: share, poll: nil)
    }

    /// The same, with `poll` in place of `curl_multi_poll` (tests inject failures to check the loop cannot
    /// spin).
    init(
        name: String = "WebImage.transport", maxConnectionsPerHost: Int = 0, maxTotalConnections: Int = 0,
        share: CurlShare? = nil, poll: TransportLoop.Poll?
    ) throws(TransportError) {
        try CurlRuntime.ensureInitialized()
        if let share {
            self.share = share
        } else {
            self.share = try CurlShare(sharesCookies: true)
        }
        handles = EasyHandlePool(share: self.share)
        loop = try TransportLoop(
            maxConnectionsPerHost: maxConnectionsPerHost, maxTotalConnections: maxTotalConnections, handles: handles,
            poll: poll ?? TransportLoop.curlPoll)
        let loop = self.loop
        let thread = Thread { loop.run() }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    deinit {
        loop.submit(.shutdown)
    }

    /// Makes a configured transfer for `request` that reports to `delegate`.
    func makeTransfer(_ request: TransferRequest, delegate: any TransferDelegate) throws(TransportError)
        -> CurlTransfer
    {
        try CurlTransfer(request: request, pool: handles, share: share, delegate: delegate)
    }

    package func makeTransfer(_ request: TransferRequest, delegate: any TransferDelegate) throws(TransportError)
        -> any TransportTransfer
    {
        let transfer: CurlTransfer = try makeTransfer(request, delegate: delegate)
        return transfer
    }

    /// Hands a transfer to the transport thread. After shutdown it completes at once with `cancelled`.
    func start(_ transfer: CurlTransfer) {
        if !loop.submit(.add(transfer)) { transfer.finish(code: nil, cancelled: true) }
    }

    package func start(_ transfer: any TransportTransfer) {
        start(Self.curlTransfer(transfer))
    }

    /// Removes a transfer; it completes with `cancelled` unless it already completed. Any thread.
    func cancel(_ transfer: CurlTransfer) {
        loop.submit(.cancel(transfer))
    }

    package func cancel(_ transfer: any TransportTransfer) {
        cancel(Self.curlTransfer(transfer))
    }

    /// A transfer handed back to this transport is one it made (the protocol's contract).
    private static func curlTransfer(_ transfer: any TransportTransfer) -> CurlTransfer {
        guard let transfer = transfer as? CurlTransfer else {
            preconditionFailure("a transfer made by another transport was handed to CurlTransport")
        }
        return transfer
    }

    /// Cancels every transfer and stops the thread; the multi handle and every easy handle are freed.
    /// Idempotent. Later `start` calls complete with `cancelled`.
    package func shutdown() {
        loop.submit(.shutdown)
    }

    /// Blocks until the thread has stopped and freed the multi handle (after `shutdown()`), or until
    /// `timeout` seconds have passed; true when it stopped. Never call it on the transport thread.
    package func waitUntilStopped(timeout: Double) -> Bool {
        loop.running.wait(timeout: .now() + timeout) == .success
    }

    package func whenStopped(_ body: @escaping @Sendable () -> Void) {
        loop.running.notify(queue: .global(), execute: body)
    }

    /// Number of transfers currently in the multi handle or waiting to be added.
    package var activeTransferCount: Int { loop.activeCount.load(ordering: .relaxed) }

    /// True once the thread has left its loop and freed the multi handle.
    package var isStopped: Bool { loop.running.wait(timeout: .now()) == .success }

    /// Easy handles of this transport that still exist (running, waiting, or idle in the pool). Reaches 0
    /// after `shutdown()` once every transfer object is gone.
    package var liveHandleCount: Int { handles.liveHandleCount }
}

/// The state of the transport thread. Only `submit` and the atomics are used from other threads.
final class TransportLoop: @unchecked Sendable {
    // @unchecked Sendable: `multi` and `active` are used only on the transport thread, except
    // `curl_multi_wakeup(multi)` which `submit` calls under `commands` while `closed` is false; the
    // loop sets `closed` under the same lock before it calls curl_multi_cleanup.
    enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer)
        case shutdown
    }

    /// Waits up to `timeoutMilliseconds` for socket activity or a wake-up on the multi handle.
    typealias Poll = @Sendable (_ multi: UnsafeMutableRawPointer, _ timeoutMilliseconds: Int32) -> CURLMcode
    static let curlPoll: Poll = { multi, timeout in curl_multi_poll(multi, nil, 0, timeout, nil) }

    /// After this many failed polls in a row the loop gives up on the transfers it has: curl's poll only
    /// fails for reasons that do not go away (a broken multi handle, no memory).
    static let pollFailuresBeforeGivingUp = 8
    /// The wait in seconds after a failed poll doubles (from 2 ms) up to this, so a poll that fails at
    /// once cannot spin the loop.
    static let longestPollBackoff: TimeInterval = 0.2

    private struct Commands {
        var pending: [Command] = []
        var closed = false
        /// The loop is in (or about to enter) `curl_multi_poll` and must be woken for a new command.
        /// While it is busy it picks commands up before it would poll again, so `submit` skips the
        /// wake-up (a syscall, and a write the loop must read back).
        var polling = false
    }

    private let multi: UnsafeMutableRawPointer
    private let handles: EasyHandlePool
    private let poll: Poll
    private var failedPolls = 0
    private let commands = Lock(Commands())
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// The connection limits: which transfers enter the multi handle and which wait (see TransferAdmission).
    private var admission: TransferAdmission<CurlTransfer>
    /// Waiting transfers let in during this turn, added to the multi handle at its end.
    private var admitted: [CurlTransfer] = []
    let activeCount = Atomic<Int>(0)
    /// Entered while the loop runs; left once it has stopped and freed the multi handle.
    let running = DispatchGroup()

    init(maxConnectionsPerHost: Int, maxTotalConnections: Int, handles: EasyHandlePool, poll: @escaping Poll)
        throws(TransportError)
    {
        guard let multi = curl_multi_init() else {
            throw TransportError(.failed, "curl_multi_init failed")
        }
        do {
            // Connections kept for reuse: enough for several downloaders' worth of concurrency.
            try CurlRuntime.checkMulti(wi_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 64), "MAXCONNECTS")
            if maxConnectionsPerHost > 0 {
                try CurlRuntime.checkMulti(
                    wi_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost),
                    "MAX_HOST_CONNECTIONS")
            }
            if maxTotalConnections > 0 {
                try CurlRuntime.checkMulti(
                    wi_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, maxTotalConnections),
                    "MAX_TOTAL_CONNECTIONS")
            }
        } catch {
            curl_multi_cleanup(multi)
            throw error
        }
        running.enter()
        admission = TransferAdmission(perHost: maxConnectionsPerHost, total: maxTotalConnections)
        self.multi = multi
        self.handles = handles
        self.poll = poll
    }

    /// Queues a command and wakes the loop. Returns false when the loop has already stopped.
    @discardableResult
    func submit(_ command: Command) -> Bool {
        commands.withLock { state in
            guard !state.closed else { return false }
            if case .add = command { activeCount.add(1, ordering: .relaxed) }
            state.pending.append(command)
            if state.polling {
                state.polling = false
                curl_multi_wakeup(multi)
            }
            return true
        }
    }

    func run() {
        // Queue hops requested during a turn of the loop (callback drains, table removals) are
        // scheduled once, at its end. Installing the batch changes what code running on this thread does:
        // `QueueChannel.async` lists its block but schedules the drain only at `drains.flush()`, and
        // `DrainBatch.offload` (an operation's `finish()`) moves its work to another thread at the flush
        // instead of running it here. Another transport (a test's scripted one) installs no batch, and
        // both then act at once on the calling thread. QueueChannelTests show both behaviours.
        let drains = DrainBatch()
        drains.install()
        defer { drains.uninstall() }
        var running: Int32 = 0
        while true {
            let batch = commands.withLock { state in
                let batch = state.pending
                state.pending.removeAll(keepingCapacity: true)
                return batch
            }
            var shuttingDown = false
            for command in batch {
                switch command {
                case .add(let transfer):
                    add(transfer)
                case .cancel(let transfer):
                    if active.removeValue(forKey: transfer.easy) != nil {
                        // No DONE message follows a removal: report the cancel ourselves.
                        curl_multi_remove_handle(multi, transfer.easy)
                        release(transfer)
                        transfer.finish(code: nil, cancelled: true)
                    } else if admission.removeWaiting(transfer) {
                        activeCount.subtract(1, ordering: .relaxed)
                        transfer.finish(code: nil, cancelled: true)
                    } else {
                        // Not in the multi handle (yet): the cancel may have overtaken the transfer's own
                        // `.add` (an operation cancelled from its first progress callback submits its
                        // cancel before its start). Remember it, so `add` never lets the transfer run.
                        transfer.cancelledBeforeAdd = true
                    }
                case .shutdown:
                    shuttingDown = true
                }
            }
            if shuttingDown { break }

            let performed = curl_multi_perform(multi, &running)
            if performed != CURLM_OK {
                // Only a broken multi handle or no memory make perform fail; the transfers cannot go on.
                failEveryActiveTransfer(CurlRuntime.multiError(performed, "curl_multi_perform"))
            }
            readMessages()
            let entered = !admitted.isEmpty
            enterAdmitted()
            // Poll only when no command arrived meanwhile; `polling` is set under the same lock that
            // `submit` appends under, so a command is either seen here or wakes the poll.
            let idle = commands.withLock { state -> Bool in
                state.polling = state.pending.isEmpty && !entered
                return state.polling
            }
            drains.flush()  // never sleep on hops held back
            if idle { waitForActivity() }
        }
        close()
    }

    /// Polls; a failed poll returns at once, so the loop would spin on it: back off instead (doubling up
    /// to `longestPollBackoff`), and after `pollFailuresBeforeGivingUp` failures in a row end the
    /// transfers in flight with the poll's error. New commands still wake the loop during a backoff only
    /// at its end, which is at most `longestPollBackoff` late.
    private func waitForActivity() {
        let code = poll(multi, 1000)
        guard code != CURLM_OK else {
            failedPolls = 0
            return
        }
        failedPolls += 1
        if failedPolls == Self.pollFailuresBeforeGivingUp {
            failEveryActiveTransfer(CurlRuntime.multiError(code, "curl_multi_poll"))
        }
        Thread.sleep(forTimeInterval: min(Double(1 << min(failedPolls, 16)) / 1000, Self.longestPollBackoff))
    }

    /// Removes every transfer from the multi handle and completes it with `error`.
    private func failEveryActiveTransfer(_ error: TransportError) {
        let failed = active
        active.removeAll()
        for (easy, transfer) in failed {
            curl_multi_remove_handle(multi, easy)
            release(transfer)
            transfer.fail(error)
        }
    }

    private func add(_ transfer: CurlTransfer) {
        if transfer.cancelledBeforeAdd {
            activeCount.subtract(1, ordering: .relaxed)
            transfer.finish(code: nil, cancelled: true)
            return
        }
        if !admission.isLimited || admission.arrive(transfer, host: transfer.hostKey) { enter(transfer) }
    }

    /// Adds a transfer the limits let in to the multi handle.
    private func enter(_ transfer: CurlTransfer) {
        let code = curl_multi_add_handle(multi, transfer.easy)
        if code == CURLM_OK {
            active[transfer.easy] = transfer
            transfer.didStart()
        } else {
            release(transfer)
            transfer.finish(code: CURLE_FAILED_INIT)
        }
    }

    /// Adds the transfers let in during this turn (entering one may fail and let in another).
    private func enterAdmitted() {
        while !admitted.isEmpty {
            let batch = admitted
            admitted.removeAll()
            for transfer in batch { enter(transfer) }
        }
    }

    /// A transfer the limits let in is done with the multi handle: its place goes to waiting ones.
    private func release(_ transfer: CurlTransfer) {
        activeCount.subtract(1, ordering: .relaxed)
        if admission.isLimited { admitted += admission.leave(host: transfer.hostKey) }
    }

    private func readMessages() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = wi_msg_result(message)
            curl_multi_remove_handle(multi, easy)
            guard let transfer = active[easy] else { continue }
            // A redirect to follow: the same handle goes round again with the next hop's URL.
            if transfer.prepareRedirect(after: result) {
                if curl_multi_add_handle(multi, easy) == CURLM_OK { continue }
                active.removeValue(forKey: easy)
                release(transfer)
                transfer.finish(code: CURLE_FAILED_INIT)
                continue
            }
            active.removeValue(forKey: easy)
            release(transfer)
            transfer.finish(code: result)
        }
    }

    private func close() {
        let leftover = commands.withLock { state in
            state.closed = true
            let rest = state.pending
            state.pending.removeAll()
            return rest
        }
        for (easy, transfer) in active {
            curl_multi_remove_handle(multi, easy)
            transfer.finish(code: nil, cancelled: true)
        }
        active.removeAll()
        for transfer in admission.removeAllWaiting() + admitted {
            transfer.finish(code: nil, cancelled: true)
        }
        admitted.removeAll()
        for case .add(let transfer) in leftover {
            transfer.finish(code: nil, cancelled: true)
        }
        activeCount.store(0, ordering: .relaxed)
        curl_multi_cleanup(multi)
        handles.close()
        running.leave()
    }
}
