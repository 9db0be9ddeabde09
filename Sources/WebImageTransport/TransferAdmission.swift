/// Which transfers may enter the multi handle under the connection limits
/// (`ImageDownloaderConfig.maximumConnectionsPerHost`, `maximumTotalConnections`); the others wait here,
/// in arrival order, outside curl. Used on the transport thread only.
///
/// curl has the same limits (`CURLMOPT_MAX_HOST_CONNECTIONS`, `CURLMOPT_MAX_TOTAL_CONNECTIONS`), and the
/// transport sets them too, but a transfer past them waits inside the multi handle ("pending"), and
/// curl 7.88 retries one pending transfer per transfer that ends, the oldest first: one that still
/// cannot connect goes back to the end of the list. Host-sorted input then stalls another host's
/// transfers behind a slow host's waiting ones although its connections are idle (measured: `webimage
/// bulk`, ten rows of a held host then four of another, four connections in all: two of the four were
/// served). Here every ending transfer lets in every waiting one that fits, of any host. And curl counts
/// a pending transfer's wait against its `CURLOPT_TIMEOUT`; one that waits here is not in curl at all.
///
/// A transfer counts against the host (scheme, name and port) of its URL until it ends, redirect hops
/// included; curl's own limits still bound the connections a hop to another host opens.
struct TransferAdmission<Transfer: AnyObject> {
    /// At most this many transfers of one host at once; 0: no limit.
    let perHost: Int
    /// At most this many transfers at once; 0: no limit.
    let total: Int
    private var running: [String: Int] = [:]
    private var runningTotal = 0
    private var waiting: [(transfer: Transfer, host: String)] = []

    init(perHost: Int, total: Int) {
        self.perHost = max(0, perHost)
        self.total = max(0, total)
    }

    /// Whether any limit is set (without one every transfer enters at once).
    var isLimited: Bool { perHost > 0 || total > 0 }

    /// Transfers waiting to enter.
    var waitingCount: Int { waiting.count }

    private func fits(_ host: String) -> Bool {
        (total == 0 || runningTotal < total) && (perHost == 0 || running[host, default: 0] < perHost)
    }

    private mutating func enter(_ host: String) {
        runningTotal += 1
        running[host, default: 0] += 1
    }

    /// A transfer of `host` arrives: true when it may enter the multi handle now (it then counts as
    /// running), false when it waits until `leave` lets it in.
    mutating func arrive(_ transfer: Transfer, host: String) -> Bool {
        guard isLimited else { return true }
        if !waiting.contains(where: { $0.host == host }), fits(host) {
            enter(host)
            return true
        }
        waiting.append((transfer, host))
        return false
    }

    /// A running transfer of `host` ended. Returns the waiting transfers that may enter now, oldest first
    /// (they count as running).
    mutating func leave(host: String) -> [Transfer] {
        guard isLimited else { return [] }
        runningTotal -= 1
        if let count = running[host] { running[host] = count > 1 ? count - 1 : nil }
        var admitted: [Transfer] = []
        var index = 0
        while index < waiting.count, total == 0 || runningTotal < total {
            let host = waiting[index].host
            if fits(host) {
                enter(host)
                admitted.append(waiting.remove(at: index).transfer)
            } else {
                index += 1
            }
        }
        return admitted
    }

    /// Removes a waiting transfer (it was cancelled); false when it is not waiting.
    mutating func removeWaiting(_ transfer: Transfer) -> Bool {
        guard let index = waiting.firstIndex(where: { $0.transfer === transfer }) else { return false }
        waiting.remove(at: index)
        return true
    }

    /// Removes and returns every waiting transfer (the transport is closing).
    mutating func removeAllWaiting() -> [Transfer] {
        defer { waiting.removeAll() }
        return waiting.map(\.transfer)
    }
}
