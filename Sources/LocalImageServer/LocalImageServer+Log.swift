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

    /// Waits until `condition` holds or `timeout` passes, checking every 5 ms; returns whether it held.
    ///
    /// For tests that must observe the server side, for example "the request has arrived" before
    /// cancelling a download:
    /// ```swift
    /// let arrived = await server.waitUntil { $0.count(for: "/hang") == 1 }
    /// ```
    public func waitUntil(
        timeout: Duration = .seconds(5), _ condition: @Sendable (LocalImageServer) -> Bool
    ) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !condition(self) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}
