import Foundation

extension LocalImageServer {
    // MARK: Request log

    /// Every request since the start or the last ``resetLog()``, in arrival order.
    ///
    /// An entry appears when the request head arrives and is updated as the response goes out, so a
    /// hanging request is visible while it hangs.
    public var requests: [LogEntry] {
        core.state.withLock { $0.log }
    }

    /// The logged requests whose path (without query) is exactly `path`.
    public func requests(for path: String) -> [LogEntry] {
        core.state.withLock { $0.log.filter { $0.path == path } }
    }

    /// How many requests arrived for exactly `path` (without query).
    public func count(for path: String) -> Int {
        core.state.withLock { $0.log.lazy.filter { $0.path == path }.count }
    }

    /// Body bytes the socket accepted for all logged requests to `path`; lower than the file size when a
    /// client aborted (within what the kernel's socket buffers had already taken).
    public func bytesSent(for path: String) -> Int {
        core.state.withLock { $0.log.lazy.filter { $0.path == path }.reduce(0) { $0 + $1.bytesSent } }
    }

    /// Clears the log and ``acceptedConnections``, and lowers ``maxInFlight`` to the current ``inFlight``.
    /// Requests still running keep counting in ``inFlight`` but their log entries are gone.
    public func resetLog() {
        core.resetLog()
    }

    // MARK: Connection accounting

    /// Connections accepted since the start or the last ``resetLog()``; fewer than the requests when
    /// the client reused connections.
    public var acceptedConnections: Int {
        core.state.withLock { $0.acceptedConnections }
    }

    /// Connections open now.
    public var openConnections: Int {
        core.state.withLock { $0.openConnections }
    }

    /// Requests in flight now: from the arrival of the head until the response ends or the connection closes.
    public var inFlight: Int {
        core.state.withLock { $0.inFlight }
    }

    /// The most requests in flight at once since the start or the last ``resetLog()``.
    public var maxInFlight: Int {
        core.state.withLock { $0.maxInFlight }
    }

    // MARK: Waiting

    /// Waits until `condition` holds or `timeout` passes; returns whether it held. The condition is checked
    /// again after each change the server makes to its log or counters (a request arriving, a head or body
    /// bytes going out, a request ending, a connection opening or closing), not on a timer.
    ///
    /// For tests that must observe the server side, for example "the request has arrived" before
    /// cancelling a download:
    /// ```swift
    /// #expect(server.wait { $0.count(for: "/hang") == 1 })
    /// ```
    public func wait(timeout: Duration = .seconds(5), until condition: (LocalImageServer) -> Bool) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let deadline = Date().addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
        return core.wait(until: deadline) { condition(self) }
    }

    /// The same as ``wait(timeout:until:)`` for async code: the waiting happens on a thread of its own, so
    /// no thread of Swift's cooperative pool (or of Dispatch's global queues) is blocked.
    public func waitUntil(
        timeout: Duration = .seconds(5), _ condition: @escaping @Sendable (LocalImageServer) -> Bool
    ) async -> Bool {
        await withCheckedContinuation { continuation in
            // A thread of its own, not a Dispatch global queue: blocked blocks there (whose width on Linux
            // is the core count) would starve the queues of the downloader under test.
            Thread { continuation.resume(returning: self.wait(timeout: timeout, until: condition)) }.start()
        }
    }

    // MARK: Gates

    /// Opens the gate `name`: every response held with `?gate=<name>` (or ``Response/gate``) sends its
    /// head now, and later ones pass straight through. A gate lets a test keep a request open for exactly
    /// as long as it needs (until other callers have joined, say), with no delay to tune.
    ///
    /// ```swift
    /// let url = server.url("/files/a.png?gate=joined")
    /// downloader.downloadImage(with: url, completed: first)
    /// downloader.downloadImage(with: url, completed: second)   // joins the held transfer
    /// server.openGate("joined")
    /// ```
    public func openGate(_ name: String) {
        core.openGate(name)
    }

    /// How many responses are held at the gate `name` now.
    public func waitingCount(atGate name: String) -> Int {
        core.waitingCount(at: name)
    }
}
