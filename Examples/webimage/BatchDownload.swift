import Foundation
import Synchronization
import WebImage

/// Downloads a list of URLs through one `ImageDownloader`, all queued at once, and reports each
/// outcome to a `ProgressDisplay` as it completes.
///
/// It uses the callback API (`downloadImage(with:options:context:progress:completed:)`) because the
/// token carries the final response even when decoding fails, so a broken image still reports its
/// HTTP status.
struct BatchDownload {
    /// One URL with its own flags and context.
    struct Request {
        var url: URL
        var options: ImageDownloaderOptions = []
        var context: ImageDownloadContext?
    }

    let downloader: ImageDownloader

    /// Queues every request in order (so FIFO/LIFO see the list order), calls `afterQueueing`, then
    /// waits for all of them. Returns the outcomes in request order.
    func run(
        _ requests: [Request], display: ProgressDisplay, afterQueueing: () -> Void = {}
    ) async -> [DownloadOutcome] {
        let slots = requests.enumerated().map { index, request in start(request, index: index, display: display) }
        afterQueueing()
        return await withTaskGroup(of: DownloadOutcome.self) { group in
            for slot in slots {
                group.addTask { await slot.outcome() }
            }
            var outcomes = [DownloadOutcome?](repeating: nil, count: requests.count)
            for await outcome in group {
                outcomes[outcome.index] = outcome
                display.finished(outcome)
            }
            return outcomes.compactMap { $0 }
        }
    }
}

extension BatchDownload {
    /// Downloads `requests` with at most `window` of them queued on the downloader at a time, hands each
    /// outcome to `handle` as it completes (to save its file), reports it to `display`, and keeps only
    /// its summary row: memory stays flat however long the list is.
    ///
    /// FIFO or LIFO order applies within the window. Returns the rows in request order.
    func stream(
        _ requests: some Sequence<Request>, window: Int, display: ProgressDisplay,
        handle: @escaping @Sendable (DownloadOutcome) -> DownloadOutcome
    ) async -> [SummaryTable.Row] {
        await withTaskGroup(of: DownloadOutcome.self) { group in
            var rows: [SummaryTable.Row?] = []
            rows.reserveCapacity(requests.underestimatedCount)
            var pending = requests.makeIterator()
            func startNext() -> Bool {
                guard let request = pending.next() else { return false }
                let slot = start(request, index: rows.count, display: display)
                rows.append(nil)
                group.addTask { await slot.outcome() }
                return true
            }
            for _ in 0..<max(1, window) where !startNext() { break }
            while let outcome = await group.next() {
                let handled = handle(outcome)
                display.finished(handled)
                rows[handled.index] = SummaryTable.Row(handled)
                _ = startNext()
            }
            return rows.compactMap { $0 }
        }
    }

    /// Queues `request` as number `index` and returns the slot its outcome arrives in.
    private func start(_ request: Request, index: Int, display: ProgressDisplay) -> DownloadSlot {
        let slot = DownloadSlot(index: index, url: request.url)
        let token = downloader.downloadImage(
            with: request.url, options: request.options, context: request.context,
            progress: { received, expected, url in
                slot.markStarted()
                display.progress(index: index, url: url, received: received, expected: expected)
            },
            completed: { image, data, error, finished in
                slot.complete(image: image, data: data, error: error, finished: finished)
            })
        slot.setToken(token)
        return slot
    }
}

/// One download's callbacks gathered into one `DownloadOutcome`.
///
/// The outcome is ready when three things have happened, in any order: `downloadImage` returned the
/// token, the terminal completion ran, and someone awaits `outcome()`. The completion runs on the
/// downloader's callback queue and could in principle beat `downloadImage`'s return, so nothing
/// assumes an order.
final class DownloadSlot: Sendable {
    private struct Completion {
        var image: Image?
        var data: Data?
        var error: (any Error)?
    }

    private struct State {
        var tokenSet = false
        var token: ImageDownloadToken?
        var completion: Completion?
        var waiter: CheckedContinuation<DownloadOutcome, Never>?
        var started: ContinuousClock.Instant?
        var finishedAt: ContinuousClock.Instant?
        var partialImages = 0
    }

    let index: Int
    let url: URL
    private let submitted = ContinuousClock.now
    private let state = Mutex(State())

    init(index: Int, url: URL) {
        self.index = index
        self.url = url
    }

    func markStarted() {
        state.withLock { state in
            if state.started == nil { state.started = .now }
        }
    }

    func setToken(_ token: ImageDownloadToken?) {
        resumeIfReady { state in
            state.token = token
            state.tokenSet = true
        }
    }

    func complete(image: Image?, data: Data?, error: (any Error)?, finished: Bool) {
        resumeIfReady { state in
            guard finished else {
                if image != nil { state.partialImages += 1 }
                return
            }
            state.completion = Completion(image: image, data: data, error: error)
            state.finishedAt = .now
        }
    }

    func outcome() async -> DownloadOutcome {
        await withCheckedContinuation { continuation in
            resumeIfReady { $0.waiter = continuation }
        }
    }

    /// Applies `change`, and resumes the waiter (outside the lock) once everything has arrived.
    private func resumeIfReady(_ change: (inout State) -> Void) {
        let ready = state.withLock { state -> (CheckedContinuation<DownloadOutcome, Never>, DownloadOutcome)? in
            change(&state)
            guard state.tokenSet, let completion = state.completion, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return (waiter, makeOutcome(completion, state))
        }
        if let (waiter, outcome) = ready { waiter.resume(returning: outcome) }
    }

    private func makeOutcome(_ completion: Completion, _ state: State) -> DownloadOutcome {
        let duration = (state.finishedAt ?? .now) - (state.started ?? submitted)
        let milliseconds = Int(
            duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        let response = state.token?.response
        var outcome = DownloadOutcome(
            index: index, url: url, image: completion.image, data: completion.data, error: nil,
            status: response?.statusCode, httpVersion: state.token?.metrics?.httpVersion ?? response?.httpVersion,
            milliseconds: milliseconds, partialImages: state.partialImages)
        if let error = completion.error {
            let error = ImageDownloaderError.wrap(error, url: url)
            outcome.error = error
            outcome.status = error.statusCode ?? error.response?.statusCode ?? response?.statusCode
            outcome.httpVersion = error.response?.httpVersion ?? response?.httpVersion
        } else {
            outcome.cacheStatus = state.token?.metrics?.cacheStatus ?? .network
        }
        return outcome
    }
}
