import CoreMetrics
import Dispatch
import Foundation
import Locking
import Logging

/// A downloader's logging and metrics (`config.logger`, `config.metricsFactory`), shared by its
/// operations. The metrics it reports:
///
/// | Label | Kind | Dimensions | Counts |
/// | --- | --- | --- | --- |
/// | `webimage_downloads_total` | counter | `result`: `success`, `failure`, `cancelled` | terminal callbacks (one per caller) |
/// | `webimage_errors_total` | counter | `code`: the error code's name, e.g. `timedOut` | failed and cancelled callers |
/// | `webimage_cache_hits_total` | counter | `cache`: `image`, `http`, `processed` | callers served from the image cache, from a fresh or revalidated HTTP cache entry, or from the processed-image cache |
/// | `webimage_bytes_received_total` | counter | | body bytes each transfer received from the network |
/// | `webimage_download_duration` | timer | | from `downloadImage` to the caller's terminal callback |
/// | `webimage_retries_total` | counter | | retries scheduled (`config.retryPolicy`), one per caller and attempt |
///
/// What it logs: a transfer that failed at `.debug`; each transfer's start and end and each caller's
/// outcome at `.trace`; a cookie jar that could not be saved at `.warning`.
final class DownloadInstruments: Sendable {
    let logger: Logger
    private let factory: any MetricsFactory
    private let succeeded: Counter
    private let failed: Counter
    private let cancelled: Counter
    private let imageCacheHits: Counter
    private let httpCacheHits: Counter
    private let processedImageCacheHits: Counter
    private let bytesReceived: Counter
    private let duration: CoreMetrics.Timer
    private let retries: Counter
    /// `webimage_errors_total` by code, made on first use.
    private let errors = Lock<[Int: Counter]>([:])

    init(logger: Logger, factory: any MetricsFactory) {
        self.logger = logger
        self.factory = factory
        func downloads(_ result: String) -> Counter {
            Counter(label: "webimage_downloads_total", dimensions: [("result", result)], factory: factory)
        }
        succeeded = downloads("success")
        failed = downloads("failure")
        cancelled = downloads("cancelled")
        imageCacheHits = Counter(label: "webimage_cache_hits_total", dimensions: [("cache", "image")], factory: factory)
        httpCacheHits = Counter(label: "webimage_cache_hits_total", dimensions: [("cache", "http")], factory: factory)
        processedImageCacheHits = Counter(
            label: "webimage_cache_hits_total", dimensions: [("cache", "processed")], factory: factory)
        bytesReceived = Counter(label: "webimage_bytes_received_total", factory: factory)
        duration = CoreMetrics.Timer(label: "webimage_download_duration", factory: factory)
        retries = Counter(label: "webimage_retries_total", factory: factory)
    }

    /// A caller's attempt `attempt` failed with `error`; it is tried again in `delay` seconds.
    func retryScheduled(_ url: URL, attempt: Int, delay: TimeInterval, error: ImageDownloaderError) {
        retries.increment()
        logger.debug(
            "retrying after \(error.code)",
            metadata: ["url": "\(url.redactedString)", "attempt": "\(attempt)", "delay": "\(delay)"])
    }

    /// A transfer is handed to the transport.
    func transferStarted(_ url: URL) {
        logger.trace("transfer started", metadata: ["url": "\(url.redactedString)"])
    }

    /// A transfer ended (the network's part of an operation, once per operation that used the network).
    func transferCompleted(_ url: URL, _ result: Result<ImageDownloadMetrics, ImageDownloaderError>) {
        switch result {
        case .success(let metrics):
            bytesReceived.increment(by: metrics.bytesReceived)
            logger.trace(
                "transfer finished",
                metadata: [
                    "url": "\(url.redactedString)", "http_version": "\(metrics.httpVersion)",
                    "bytes": "\(metrics.bytesReceived)", "total_time": "\(metrics.totalTime)",
                ])
        case .failure(let error):
            logger.debug(
                "transfer failed: \(error.message)",
                metadata: ["url": "\(url.redactedString)", "code": "\(error.code)"])
        }
    }

    /// One caller got its terminal callback; `startedAt` is `DispatchTime.now().uptimeNanoseconds` of its
    /// `downloadImage` call.
    func served(_ url: URL?, error: ImageDownloaderError?, metrics: ImageDownloadMetrics?, startedAt: UInt64) {
        let elapsed = DispatchTime.now().uptimeNanoseconds &- startedAt
        duration.recordNanoseconds(Int64(clamping: elapsed))
        if let error {
            (error.code == .cancelled ? cancelled : failed).increment()
            errorCounter(error.code).increment()
        } else {
            succeeded.increment()
        }
        switch metrics?.cacheStatus {
        case .imageCache: imageCacheHits.increment()
        case .fresh, .revalidated: httpCacheHits.increment()
        case .processedImageCache: processedImageCacheHits.increment()
        case .network, nil: break
        }
        logger.trace(
            "download ended",
            metadata: [
                "url": "\(url?.redactedString ?? "")", "result": "\(error.map { "\($0.code)" } ?? "success")",
                "cache": "\(metrics.map { "\($0.cacheStatus)" } ?? "none")",
            ])
    }

    private func errorCounter(_ code: ImageDownloaderError.Code) -> Counter {
        errors.withLock { counters in
            if let counter = counters[code.rawValue] { return counter }
            let counter = Counter(
                label: "webimage_errors_total", dimensions: [("code", code.description)], factory: factory)
            counters[code.rawValue] = counter
            return counter
        }
    }
}
