/// The row slots of a bulk run (``BulkSettings/rowsUnderWay``), shared by the rows of every open shard.
///
/// A row holds a slot from its start to its sample, waits included (its host's turn, a retry's delay in
/// the downloader): there are four times `--concurrency` of them, and a waiting row holds no connection,
/// so rows waiting out a long `Retry-After` keep other rows (another host's) from running only once all
/// of them wait.
/// Waiters are served in arrival order.
actor DownloadSlots {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { free = max(1, count) }

    /// Takes a slot if one is free now.
    func tryAcquire() -> Bool {
        guard free > 0 else { return false }
        free -= 1
        return true
    }

    /// Takes a slot, waiting for one to come free.
    func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Gives a slot back: to the longest waiter, else to the pool.
    func release() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
