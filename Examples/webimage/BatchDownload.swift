import Foundation
import WebImage

/// Downloads a list of URLs through one `ImageDownloader`, all queued at once, and reports each
/// outcome to a `ProgressDisplay` as it completes.
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
        let submitted = ContinuousClock.now
        // `events(for:)` queues the download while the stream is created, so the loop fixes the order.
        let streams = requests.enumerated().map { index, request in
            (index, request.url, downloader.events(for: request.url, options: request.options, context: request.context))
        }
        afterQueueing()
        return await withTaskGroup(of: DownloadOutcome.self) { group in
            for (index, url, stream) in streams {
                group.addTask {
                    await Self.consume(stream, index: index, url: url, submitted: submitted, display: display)
                }
            }
            var outcomes = [DownloadOutcome?](repeating: nil, count: requests.count)
            for await outcome in group {
                outcomes[outcome.index] = outcome
                display.finished(outcome)
            }
            return outcomes.compactMap { $0 }
        }
    }

    private static func consume(
        _ stream: AsyncThrowingStream<ImageDownloadEvent, Error>, index: Int, url: URL,
        submitted: ContinuousClock.Instant, display: ProgressDisplay
    ) async -> DownloadOutcome {
        var started: ContinuousClock.Instant?
        var partialImages = 0
        func elapsed() -> Int {
            let duration = ContinuousClock.now - (started ?? submitted)
            return Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        }
        do {
            for try await event in stream {
                switch event {
                case .progress(let received, let expected):
                    if started == nil { started = .now }
                    display.progress(index: index, url: url, received: received, expected: expected)
                case .partialImage:
                    partialImages += 1
                case .completed(let result):
                    return DownloadOutcome(
                        index: index, url: url, image: result.image, data: result.data, error: nil,
                        status: result.response?.statusCode, milliseconds: elapsed(),
                        cacheStatus: HTTPCacheSupport.cacheStatus(result), partialImages: partialImages)
                }
            }
            let error = ImageDownloaderError(.cancelled, "the download ended without a result", url: url)
            return DownloadOutcome(
                index: index, url: url, error: error, milliseconds: elapsed(), partialImages: partialImages)
        } catch {
            let error = ImageDownloaderError.wrap(error, url: url)
            return DownloadOutcome(
                index: index, url: url, error: error, status: error.statusCode ?? error.response?.statusCode,
                milliseconds: elapsed(), partialImages: partialImages)
        }
    }
}
