import Dispatch

/// What an operation needs from its downloader: one shared, immutable instance per downloader (a class,
/// so the hot paths read a field through one pointer instead of copying the whole configuration).
final class OperationEnvironment: Sendable {
    let transport: any HTTPTransport
    let config: ImageDownloaderConfig
    /// The downloader's callback queue, through the channel every library block for it takes.
    let callbacks: QueueChannel
    let decodeQueue: DispatchQueue
    /// Decodes of complete bodies, at most `config.maximumConcurrentDecodes` at once.
    let decodeStage: WorkStage
    /// Transforms and encodes, at most `config.maximumConcurrentProcessing` at once.
    let processingStage: WorkStage
    /// `config.decoderRegistry`.
    let decoderRegistry: ImageDecoderRegistry
    /// The downloader's part of an operation's end: the URL table's removal, the cookie jar's checkpoint.
    /// Runs after the queue was told, off the transport thread when the transfer ended there.
    let onFinish: @Sendable (ImageDownloaderOperation) -> Void
    /// `config.logger` and the metrics, shared with the downloader.
    let instruments: DownloadInstruments
    /// `config.minimumProgressInterval` clamped to 0…1, in nanoseconds.
    let progressIntervalNanoseconds: UInt64
    /// `config.secretHeaderFields`, read once.
    let secretHeaderFields: SecretHeaderFields
    /// The body bytes all this downloader's operations share (`config.maximumInFlightBodyBytes`).
    let bodyBudget: BodyBytesBudget
    /// Tries a failed caller again after a delay (`config.retryPolicy`), off the queue.
    let retries: RetryScheduler

    init(
        transport: any HTTPTransport, config: ImageDownloaderConfig, callbacks: QueueChannel,
        decodeQueue: DispatchQueue, instruments: DownloadInstruments, bodyBudget: BodyBytesBudget,
        retries: RetryScheduler, onFinish: @escaping @Sendable (ImageDownloaderOperation) -> Void
    ) {
        self.transport = transport
        self.config = config
        self.callbacks = callbacks
        self.decodeQueue = decodeQueue
        decodeStage = WorkStage(width: config.maximumConcurrentDecodes, target: decodeQueue)
        processingStage = WorkStage(width: config.maximumConcurrentProcessing, target: decodeQueue)
        decoderRegistry = config.decoderRegistry
        self.instruments = instruments
        self.onFinish = onFinish
        progressIntervalNanoseconds = UInt64(min(max(config.minimumProgressInterval, 0), 1) * 1e9)
        secretHeaderFields = SecretHeaderFields(config.secretHeaderFields)
        self.bodyBudget = bodyBudget
        self.retries = retries
    }
}
