/// The row slots of a bulk run (``BulkSettings/rowsUnderWay``), shared by the rows of every open shard.
///
/// A row holds a slot while it waits for its host's turn, downloads and processes its image, and gives it
/// back while it waits to retry, so rows waiting out a long `Retry-After` never keep other rows (another
/// host's) from running.
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
