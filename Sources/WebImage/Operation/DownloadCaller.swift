import Dispatch
import Foundation

/// Everything one caller of `downloadImage` asked for.
struct DownloadCaller: LifecycleCaller, Sendable {
    let id: UInt64
    let token: ImageDownloadToken
    let progress: ImageDownloaderProgressBlock?
    let completion: ImageDownloaderCompletedBlock?
    /// The async APIs' completion, which also needs the response and metrics of this very caller.
    let detailedCompletion: DetailedCompletion?
    let decoding: DecodeRequest
    let target: CallbackTarget
    /// Where a decoded image for this caller is stored in `config.imageCache` (nil: no image cache, or
    /// nothing decoded). Computed by the downloader, which also looks it up.
    let imageCacheKey: String?
    /// `context.encoder` and where its output is cached; nil when the caller wants the downloaded bytes.
    let output: OutputEncoding?
    /// The downloader's metrics and logger, told of the outcome.
    let instruments: DownloadInstruments
    /// `DispatchTime.now().uptimeNanoseconds` when the caller called `downloadImage`.
    let startedAt: UInt64
    /// The queue priority this caller asks for while its operation waits (see
    /// `ImageDownloaderOperation.updateQueuePriority()`); an `ImageTask` may change it.
    var priority: Operation.QueuePriority
    /// This caller's attempt (`config.retryPolicy`), 1 for the first.
    var attempt = 1
    /// `context.stepObserver`: told when each step of this caller's image ran.
    var stepObserver: (any ImageDownloadStepObserving)?

    /// Tells this caller's step observer that `step` ran from `start` until now.
    func report(_ step: ImageDownloadStep, from start: Date, error: (any Error)? = nil) {
        stepObserver?.downloadStep(step, ranFrom: start, to: Date(), error: error)
    }

    /// Runs this caller's one terminal callback: records the outcome on the token first (so the token's
    /// response is set when the completion runs), then calls the completion on the caller's queue.
    func complete(
        image: Image?, data: Data?, error: ImageDownloaderError?, response: TransferResponse?,
        metrics: ImageDownloadMetrics?
    ) {
        guard
            let callback = terminalCallback(
                image: image, data: data, error: error, response: response, metrics: metrics)
        else { return }
        target.async(callback)
    }

    /// Records the outcome on the token now and returns the completion call, to be run on `target` by the
    /// caller of this method (nil when this caller passed no completion).
    func terminalCallback(
        image: Image?, data: Data?, error: ImageDownloaderError?, response: TransferResponse?,
        metrics: ImageDownloadMetrics?
    ) -> (@Sendable () -> Void)? {
        let response = response ?? error?.response
        let attempt = self.attempt
        let error = error.map { error in
            var counted = error
            counted.attempts = attempt
            return counted
        }
        let metrics = metrics.map { metrics in
            var counted = metrics
            counted.attempts = attempt
            return counted
        }
        token.complete(response: response, metrics: metrics)
        instruments.served(token.url, error: error, metrics: metrics, startedAt: startedAt)
        if let detailedCompletion {
            return { detailedCompletion(image, data, error, true, response, metrics) }
        } else if let completion {
            return { completion(image, data, error, true) }
        }
        return nil
    }

    /// Hands a partial image to this caller as `(image, nil, nil, false)`.
    func deliverPartial(_ image: Image) {
        if let detailedCompletion {
            target.async { detailedCompletion(image, nil, nil, false, nil, nil) }
        } else if let completion {
            target.async { completion(image, nil, nil, false) }
        }
    }
}

/// (image, data, error, finished, response, metrics)
typealias DetailedCompletion =
    @Sendable (
        Image?, Data?, ImageDownloaderError?, Bool, TransferResponse?, ImageDownloadMetrics?
    ) -> Void

/// How one group of callers wants the bytes turned into an image.
struct DecodeRequest: Sendable, Hashable {
    var avoidsDecoding: Bool
    var options: ImageDecodingOptions
    /// Applied to the decoded image (not to progressive partial images); compared by its key.
    var transformer: (any ImageTransforming)?

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.avoidsDecoding == rhs.avoidsDecoding && lhs.options == rhs.options
            && lhs.transformer?.key == rhs.transformer?.key
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(avoidsDecoding)
        hasher.combine(options)
        hasher.combine(transformer?.key)
    }
}

extension Operation.QueuePriority {
    /// The priority `downloadImage`'s options ask for: `highPriority` wins over `lowPriority`.
    init(_ options: ImageDownloaderOptions) {
        if options.contains(.highPriority) {
            self = .high
        } else if options.contains(.lowPriority) {
            self = .low
        } else {
            self = .normal
        }
    }
}

/// What a caller with `context.encoder` wants done with its image. Callers whose `DecodeRequest` and
/// encoder key are the same share one encode job (`runEncodes`).
struct OutputEncoding: Sendable {
    var encoder: any ImageEncoding
    /// Where the encoded bytes are stored in `config.processedImageCache`: nil when there is none or the
    /// request may not use shared caches. Computed by the downloader, which also looks it up.
    var cacheKey: ProcessedImageKey?
}
