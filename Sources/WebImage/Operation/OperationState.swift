import Dispatch
import Foundation

/// Everything one caller of `downloadImage` asked for.
struct DownloadCaller: Sendable {
    let id: UInt64
    let token: ImageDownloadToken
    let progress: ImageDownloaderProgressBlock?
    let completion: ImageDownloaderCompletedBlock?
    /// The async APIs' completion, which also needs the response and metrics of this very caller.
    let detailedCompletion: DetailedCompletion?
    let decoding: DecodeRequest
    let target: CallbackTarget

    /// Runs this caller's one terminal callback: records the outcome on the token first (so the token's
    /// response is set when the completion runs), then calls the completion on the caller's queue.
    func complete(
        image: Image?, data: Data?, error: ImageDownloaderError?, response: ImageDownloadResponse?,
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
        image: Image?, data: Data?, error: ImageDownloaderError?, response: ImageDownloadResponse?,
        metrics: ImageDownloadMetrics?
    ) -> (@Sendable () -> Void)? {
        let response = response ?? error?.response
        token.complete(response: response, metrics: metrics)
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
        Image?, Data?, ImageDownloaderError?, Bool, ImageDownloadResponse?, ImageDownloadMetrics?
    ) -> Void

/// How one group of callers wants the bytes turned into an image.
struct DecodeRequest: Sendable, Hashable {
    var avoidsDecoding: Bool
    var options: ImageDecodingOptions
}

/// The mutable state of one operation, changed only under the operation's lock.
struct OperationState {
    enum Phase: Equatable {
        /// Created or queued; `start()` has not run.
        case waiting
        /// `start()` ran; the transfer (or cache lookup) is under way.
        case transferring
        /// The body is complete (or the transfer failed) and the callers are being served.
        case processing
        /// The queue has been told `isFinished`.
        case finished
    }

    var phase = Phase.waiting
    /// Set when every caller left or the whole operation was cancelled; the transfer is stopped.
    var isCancelled = false
    var callers: [DownloadCaller] = []
    var transfer: CurlTransfer?
    var response: ImageDownloadResponse?
    var expectedSize: Int64 = -1
    var lastProgressTime: DispatchTime = .init(uptimeNanoseconds: 0)
    var progressiveDecodeInFlight = false
    /// The serial decode queue and incremental decoder, made on first use (progressive or final decoding).
    var decoderBox: IncrementalDecoderBox?
    /// With `.useURLCache`: the cache, when the request sent, and the stale entry being revalidated.
    var httpCache: (any HTTPCaching)?
    var requestDate = Date()
    var revalidating: CachedHTTPResponse?
    /// The stored entry a 304 confirmed; its body replaces the (empty) 304 body.
    var confirmedByServer: CachedHTTPResponse?
    /// What a 304 taught about the stored entry, written to the cache in the processing step.
    var pendingRevalidation: PendingRevalidation?

    /// Whether a new caller may still join (the transfer has not ended and was not cancelled).
    var acceptsCallers: Bool { !isCancelled && (phase == .waiting || phase == .transferring) }

    /// Removes and returns the caller with `id`, if it has not been served yet.
    mutating func removeCaller(_ id: UInt64) -> DownloadCaller? {
        guard let index = callers.firstIndex(where: { $0.id == id }) else { return nil }
        return callers.remove(at: index)
    }

    /// Removes and returns every caller not yet served.
    mutating func takeCallers() -> [DownloadCaller] {
        defer { callers.removeAll() }
        return callers
    }
}

/// What an operation needs from its downloader: one shared, immutable instance per downloader (a class,
/// so the hot paths read a field through one pointer instead of copying the whole configuration).
final class OperationEnvironment: Sendable {
    let transport: CurlTransport
    let config: ImageDownloaderConfig
    /// The downloader's callback queue, through the channel every library block for it takes.
    let callbacks: QueueChannel
    let decodeQueue: DispatchQueue
    let decoderRegistry: ImageDecoderRegistry
    let onFinish: @Sendable (ImageDownloaderOperation) -> Void
    /// `config.minimumProgressInterval` clamped to 0…1, in nanoseconds.
    let progressIntervalNanoseconds: UInt64

    init(
        transport: CurlTransport, config: ImageDownloaderConfig, callbacks: QueueChannel,
        decodeQueue: DispatchQueue, decoderRegistry: ImageDecoderRegistry,
        onFinish: @escaping @Sendable (ImageDownloaderOperation) -> Void
    ) {
        self.transport = transport
        self.config = config
        self.callbacks = callbacks
        self.decodeQueue = decodeQueue
        self.decoderRegistry = decoderRegistry
        self.onFinish = onFinish
        progressIntervalNanoseconds = UInt64(min(max(config.minimumProgressInterval, 0), 1) * 1e9)
    }
}

/// A cache write a 304 calls for, decided on the transport thread and done off it.
enum PendingRevalidation: Sendable {
    /// Merge the 304's fields into the stored entry.
    case refresh(notModified: ImageDownloadResponse, requestDate: Date, responseDate: Date)
    /// The 304 validated another representation: the stored entry is outdated.
    case remove
}
