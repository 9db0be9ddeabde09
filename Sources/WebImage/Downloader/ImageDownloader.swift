import Dispatch
import Foundation
import Locking
import Metrics
import Synchronization

/// Called while a download runs: bytes received so far and the expected total (-1 when unknown).
/// May run on the transport thread: keep it cheap.
public typealias ImageDownloaderProgressBlock = @Sendable (_ receivedSize: Int, _ expectedSize: Int, _ url: URL) -> Void

/// Called with a partial image (`finished == false`, progressive loading only) and exactly once with the
/// outcome (`finished == true`): an image and its data, or an error.
///
/// A final image may still have `isPartial == true`: the whole body arrived, but the file inside it
/// ends early (a JPEG cut to a third decodes as its top third over filler). That is not an error, so
/// a caller that needs whole images checks it (`webimage get` and `bulk` count such an image as failed
/// unless `--allow-partial`).
public typealias ImageDownloaderCompletedBlock =
    @Sendable (_ image: Image?, _ data: Data?, _ error: Error?, _ finished: Bool) -> Void

/// Downloads and decodes images with SDWebImage's downloader semantics, on libcurl.
///
/// Requests for the same URL share one transfer; each caller gets its own token and exactly one
/// terminal callback. Downloads run on an `OperationQueue` (`maxConcurrentDownloads` at once, FIFO or
/// LIFO), transfers on one libcurl multi thread, decoding on a queue sized to the cores.
///
/// ```swift
/// let downloader = ImageDownloader()
/// downloader.downloadImage(with: URL(string: "https://example.com/cat.webp")) { image, data, error, finished in
///     guard finished else { return }   // a progressive partial image
///     if let image { print(image.width, image.height) }
/// }
/// // or
/// let result = try await downloader.image(for: url)
/// ```
public final class ImageDownloader: Sendable {
    /// A process-wide downloader with the default configuration; `invalidate` does nothing to it.
    public static let shared = ImageDownloader()

    /// The configuration, copied at init.
    public let config: ImageDownloaderConfig

    private let queue: OperationQueue
    let transport: (any HTTPTransport)?
    private let transportError: ImageDownloaderError?
    private let table: OperationTable
    /// Callers waiting to retry (`config.retryPolicy`).
    private let retries: RetryScheduler
    private let headers: Lock<HTTPHeaders>
    private let nextCallerID = Atomic<UInt64>(1)
    private let environment: OperationEnvironment?
    private let allowedSchemes: Set<String>
    private let invalidated = Atomic<Bool>(false)
    /// The pixel memory all this downloader's decodes share (`config.maximumDecodeMemory`).
    private let decodeMemory: DecodeMemoryBudget
    /// The body bytes all this downloader's downloads share (`config.maximumInFlightBodyBytes`).
    private let bodyBudget: BodyBytesBudget
    /// `config.logger` and the metrics (see DownloadInstruments).
    private let instruments: DownloadInstruments
    let callbackQueue: DispatchQueue
    /// Every block the library sends to `callbackQueue` goes through this channel (see QueueChannel).
    private let callbacks: QueueChannel

    /// Decoding runs here: a concurrent queue, which libdispatch runs about as wide as there are cores
    /// for CPU-bound work. Each operation decodes on its own serial queue targeting this one.
    static let decodeQueue = DispatchQueue(label: "WebImage.decode", qos: .userInitiated, attributes: .concurrent)

    /// Creates a downloader with its own queue, transport thread and connection pool.
    public convenience init(config: ImageDownloaderConfig = .default) {
        let transport: Result<any HTTPTransport, ImageDownloaderError>
        do {
            transport = .success(
                try CurlTransport(
                    maxConnectionsPerHost: config.maximumConnectionsPerHost,
                    maxTotalConnections: config.maximumTotalConnections, share: config.cookieStorage?.share))
        } catch {
            transport = .failure(ImageDownloaderError(transportError: error))
        }
        self.init(config: config, transport: transport)
    }

    /// Creates a downloader that runs its transfers on `transport` (tests pass a scripted one), or
    /// whose every request fails with the transport's error.
    init(config: ImageDownloaderConfig, transport: Result<any HTTPTransport, ImageDownloaderError>) {
        self.config = config
        decodeMemory = DecodeMemoryBudget(limit: config.maximumDecodeMemory)
        let bodyBudget = BodyBytesBudget(limit: config.maximumInFlightBodyBytes)
        self.bodyBudget = bodyBudget
        let instruments = DownloadInstruments(
            logger: config.logger, factory: config.metricsFactory ?? MetricsSystem.factory)
        self.instruments = instruments
        queue = OperationQueue()
        queue.name = "WebImage.downloads"
        queue.maxConcurrentOperationCount = max(1, config.maxConcurrentDownloads)
        switch transport {
        case .success(let made):
            self.transport = made
            transportError = nil
        case .failure(let error):
            self.transport = nil
            transportError = error
        }
        let table = OperationTable()
        self.table = table
        allowedSchemes = Set(config.allowedProtocols.map { $0.lowercased() })
        headers = Lock(config.headers)
        let callbackQueue = config.callbackQueue ?? DispatchQueue(label: "WebImage.callbacks")
        self.callbackQueue = callbackQueue
        let callbacks = QueueChannel(queue: callbackQueue)
        self.callbacks = callbacks
        let retries = RetryScheduler(table: table, queue: queue, config: config, instruments: instruments)
        self.retries = retries
        environment = self.transport.map { transport in
            OperationEnvironment(
                transport: transport, config: config, callbacks: callbacks, decodeQueue: Self.decodeQueue,
                instruments: instruments, bodyBudget: bodyBudget, retries: retries,
                onFinish: { operation in
                    table.remove(operation)
                    if operation.options.contains(.handleCookies), let jar = config.cookieStorage,
                        jar.fileURL != nil
                    {
                        // A checkpoint of the jar's file, off the thread that finished the operation (often
                        // the transport's); a failure is logged, and the next save retries.
                        DispatchQueue.global(qos: .utility).async {
                            do {
                                try jar.save()
                            } catch {
                                instruments.logger.warning("could not save the cookie jar: \(error)")
                            }
                        }
                    }
                })
        }
    }

    deinit {
        retries.cancelAll()
        queue.cancelAllOperations()
        transport?.shutdown()
    }

    // MARK: Live settings

    /// Downloads running at once; changing it takes effect immediately.
    public var maxConcurrentDownloads: Int {
        get { queue.maxConcurrentOperationCount }
        set { queue.maxConcurrentOperationCount = max(1, newValue) }
    }

    /// Operations queued or running.
    public var currentDownloadCount: Int { queue.operationCount }

    /// While true, no new download starts (running ones continue).
    public var isSuspended: Bool {
        get { queue.isSuspended }
        set { queue.isSuspended = newValue }
    }

    /// Sets (or with nil removes) a header field sent with every later request.
    public func setValue(_ value: String?, forHTTPHeaderField field: String) {
        headers.withLock { $0[field] = value }
    }

    /// The value of a header field sent with every request.
    public func value(forHTTPHeaderField field: String) -> String? {
        headers.withLock { $0[field] }
    }

    // MARK: Downloading

    /// Starts (or joins) the download of `url`.
    ///
    /// - Returns: a token that cancels this caller only, or nil when the request failed synchronously
    ///   (`completed` has then already run with `invalidURL` or `invalidDownloadOperation`).
    @discardableResult
    public func downloadImage(
        with url: URL?, options: ImageDownloaderOptions = [], context: ImageDownloadContext? = nil,
        progress: ImageDownloaderProgressBlock? = nil, completed: ImageDownloaderCompletedBlock? = nil
    ) -> ImageDownloadToken? {
        download(url, options: options, context: context, progress: progress, completed: completed, detailed: nil)
    }

    /// Starts (or joins) the download of `url`, reporting only the outcome; lets a trailing closure be
    /// the completion: `downloadImage(with: url) { image, data, error, finished in ... }`.
    @discardableResult
    public func downloadImage(
        with url: URL?, options: ImageDownloaderOptions = [], context: ImageDownloadContext? = nil,
        completed: ImageDownloaderCompletedBlock?
    ) -> ImageDownloadToken? {
        download(url, options: options, context: context, progress: nil, completed: completed, detailed: nil)
    }

    func download(
        _ requested: URL?, options: ImageDownloaderOptions, context: ImageDownloadContext?,
        progress: ImageDownloaderProgressBlock?, completed: ImageDownloaderCompletedBlock?,
        detailed: DetailedCompletion?, priority: Operation.QueuePriority? = nil
    ) -> ImageDownloadToken? {
        let startedAt = DispatchTime.now().uptimeNanoseconds
        // Credentials written into the URL (`user:password@`) are the request's credentials, not part of
        // its URL: from here on the URL is sent, logged, reported and used as a key without them.
        let given = requested?.splittingUserInfo
        func failNow(_ error: ImageDownloaderError) -> ImageDownloadToken? {
            instruments.served(given?.url, error: error, metrics: nil, startedAt: startedAt)
            if let detailed {
                detailed(nil, nil, error, true, nil, nil)
            } else {
                completed?(nil, nil, error, true)
            }
            return nil
        }
        guard let url = given?.url else { return failNow(ImageDownloaderError(.invalidURL, "the URL is nil")) }
        let environment: OperationEnvironment
        switch admit(url) {
        case .failure(let error): return failNow(error)
        case .success(let admitted): environment = admitted
        }
        let request: ImageDownloadRequest
        let urlCredentials: RequestTrust.Credentials?
        switch self.request(for: url, context: context, urlCredentials: given?.credentials) {
        case .failure(let error): return failNow(error)
        case .success(let made): (request, urlCredentials) = made
        }

        let decodeRequest = Self.decodeRequest(options: options, context: context, config: config, budget: decodeMemory)
        let trust = RequestTrust(request: request, options: options, config: config, urlCredentials: urlCredentials)
        let key = MergeKey(
            url: url, trust: trust,
            maximumResponseSize: min(config.maximumResponseSize, context?.maximumResponseSize ?? .max))
        // The decoded-image cache: looked up here, filled by the operation under the same key.
        let imageCacheKey =
            config.imageCache != nil && !decodeRequest.avoidsDecoding ? Self.imageCacheKey(key, decodeRequest) : nil
        let callerID = nextCallerID.wrappingAdd(1, ordering: .relaxed).oldValue
        let callerTarget = CallbackTarget(queue: context?.callbackQueue, default: callbacks)
        let output = outputEncoding(
            url: url, context: context, decodeRequest: decodeRequest, trust: trust, environment: environment)
        func caller(_ token: ImageDownloadToken, progress: ImageDownloaderProgressBlock?) -> DownloadCaller {
            DownloadCaller(
                id: callerID, token: token, progress: progress, completion: completed, detailedCompletion: detailed,
                decoding: decodeRequest, target: callerTarget, imageCacheKey: imageCacheKey, output: output,
                instruments: instruments, startedAt: startedAt, priority: priority ?? Operation.QueuePriority(options),
                stepObserver: context?.stepObserver)
        }
        // The processed-image cache is read by the operation when it starts (disk I/O stays off this thread).
        if output == nil, let imageCache = config.imageCache, let imageCacheKey,
            let image = imageCache.image(forKey: imageCacheKey)
        {
            let token = ImageDownloadToken(url: url, request: request, callerID: callerID, operation: nil)
            var metrics = ImageDownloadMetrics()
            metrics.cacheStatus = .imageCache
            caller(token, progress: nil).complete(image: image, data: nil, error: nil, response: nil, metrics: metrics)
            return token
        }
        return enqueue(
            request, key: key, options: options, context: context, environment: environment, callerID: callerID,
            priority: priority
        ) { token in caller(token, progress: progress) }
    }

    /// The key `config.processedImageCache` keeps the encoded output of this request under: the one the
    /// download itself reads and stores (URL, transformer key, encoder key, decode options). nil when there
    /// is no such cache, the context names no encoder, the request cannot be made, or it may not use a
    /// shared cache (see `ImageDownloadContext.encoder`). The request is made as a download makes it, so a
    /// request modifier runs.
    ///
    /// For a caller that looks the cache up before deciding to download at all, as an image proxy does to
    /// answer a stored result without taking a slot:
    ///
    /// ```swift
    /// if let key = downloader.processedImageKey(for: url, context: context),
    ///     let stored = downloader.config.processedImageCache?.data(for: key)
    /// {
    ///     return stored
    /// }
    /// ```
    public func processedImageKey(
        for url: URL, options: ImageDownloaderOptions = [], context: ImageDownloadContext
    ) -> ProcessedImageKey? {
        let given = url.splittingUserInfo
        guard config.processedImageCache != nil, context.encoder != nil,
            case .success(let environment) = admit(given.url),
            case .success(let (request, credentials)) = self.request(
                for: given.url, context: context, urlCredentials: given.credentials)
        else { return nil }
        let decodeRequest = Self.decodeRequest(options: options, context: context, config: config, budget: decodeMemory)
        let trust = RequestTrust(request: request, options: options, config: config, urlCredentials: credentials)
        return outputEncoding(
            url: given.url, context: context, decodeRequest: decodeRequest, trust: trust, environment: environment)?
            .cacheKey
    }

    /// The environment a request to `url` runs in, or why none may run: a scheme this downloader does not
    /// take, a destination policy that names an invalid network, an invalidated downloader, no transport.
    private func admit(_ url: URL) -> Result<OperationEnvironment, ImageDownloaderError> {
        let scheme = url.scheme?.lowercased() ?? ""
        guard allowedSchemes.contains(scheme), scheme == "file" || url.host?.isEmpty == false else {
            return .failure(
                ImageDownloaderError(
                    .invalidURL, "the URL scheme \"\(scheme)\" is not allowed or the URL has no host", url: url))
        }
        if let invalid = config.destinationPolicy.invalidNetworks.first {
            return .failure(
                ImageDownloaderError(transportError: DestinationPolicy.invalidNetworkError(invalid, url: url)))
        }
        guard !invalidated.load(ordering: .acquiring) else {
            return .failure(
                ImageDownloaderError(.invalidDownloadOperation, "the downloader was invalidated", url: url))
        }
        guard let environment else {
            return .failure(
                transportError ?? ImageDownloaderError(.invalidDownloadOperation, "no transport", url: url))
        }
        return .success(environment)
    }

    /// The request for `url`: the downloader's header fields, then the context's, then the request
    /// modifier's changes (credentials it writes into the URL replace `urlCredentials`), every field
    /// checked so none can inject another header line.
    private func request(
        for url: URL, context: ImageDownloadContext?, urlCredentials: RequestTrust.Credentials?
    ) -> Result<(ImageDownloadRequest, RequestTrust.Credentials?), ImageDownloaderError> {
        var credentials = urlCredentials
        var request = ImageDownloadRequest(
            url: url, headers: headers.withLock { $0 },
            timeout: config.downloadTimeout > 0 ? config.downloadTimeout : ImageDownloaderConfig.defaultDownloadTimeout)
        for field in context?.headers ?? HTTPHeaders() { request.headers[field.name] = field.value }
        if let modifier = context?.requestModifier ?? config.requestModifier {
            guard let modified = modifier.modifiedRequest(request) else {
                return .failure(
                    ImageDownloaderError(.invalidDownloadOperation, "the request modifier returned nil", url: url))
            }
            request = modified
            let (modifiedURL, modifiedCredentials) = request.url.splittingUserInfo
            request.url = modifiedURL
            credentials = modifiedCredentials ?? credentials
        }
        // Every source of headers (config, setValue, the context, the modifier) ends up here: a field that
        // could inject another header line is refused before anything is sent.
        if let field = request.headers.firstInvalidField() {
            return .failure(
                ImageDownloaderError(
                    .invalidDownloadOperation,
                    "the header field \(Self.describe(field)) contains CR, LF, NUL or a character not allowed in "
                        + "a field name; nothing was sent", url: url))
        }
        return .success((request, credentials))
    }

    /// How a caller's data becomes an image: the options' and the context's decoding settings, the
    /// downloader's limits and its pixel memory budget.
    private static func decodeRequest(
        options: ImageDownloaderOptions, context: ImageDownloadContext?, config: ImageDownloaderConfig,
        budget: DecodeMemoryBudget?
    ) -> DecodeRequest {
        var decodeOptions = ImageDecodingOptions(
            thumbnailPixelSize: context?.thumbnailPixelSize,
            scaleDownLargeImages: options.contains(.scaleDownLargeImages),
            scaleDownLimitBytes: config.scaleDownLimitBytes,
            maximumImagePixels: min(config.maximumImagePixels, context?.maximumImagePixels ?? .max),
            decodeFirstFrameOnly: options.contains(.decodeFirstFrameOnly),
            preloadAllFrames: options.contains(.preloadAllFrames))
        decodeOptions.memoryBudget = budget
        decodeOptions.maximumAnimationFrames = min(
            config.maximumAnimationFrames, context?.maximumAnimationFrames ?? .max)
        decodeOptions.maximumColorProfileBytes = config.maximumColorProfileBytes
        decodeOptions.colorSpace = context?.colorSpace ?? .sRGB
        decodeOptions.prefersEmbeddedThumbnail = context?.prefersEmbeddedThumbnail ?? false
        decodeOptions.minimumDecodeSize = context?.transformer?.minimumDecodeSize
        decodeOptions.keepsSixteenBits = context?.keepsSixteenBits ?? false
        decodeOptions.keepsEXIF = context?.keepsEXIF ?? false
        if decodeOptions.thumbnailPixelSize?.width ?? 1 <= 0 || decodeOptions.thumbnailPixelSize?.height ?? 1 <= 0 {
            decodeOptions.thumbnailPixelSize = nil
        }
        return DecodeRequest(
            avoidsDecoding: options.contains(.avoidDecodeImage), options: decodeOptions,
            transformer: context?.transformer)
    }

    /// For a caller that wants encoded bytes (the context's encoder): the encoder, and the processed-image
    /// cache key when this request's trust lets a shared cache hold the result.
    private func outputEncoding(
        url: URL, context: ImageDownloadContext?, decodeRequest: DecodeRequest, trust: RequestTrust,
        environment: OperationEnvironment
    ) -> OutputEncoding? {
        guard let encoder = context?.encoder, !decodeRequest.avoidsDecoding else { return nil }
        // A cache of this downloader's own holds only what its policy let through (see
        // `processedImageCacheIsPrivate`): the policy alone does not keep a request out of it.
        let privateCache = config.processedImageCacheIsPrivate
        let mayCache =
            config.processedImageCache != nil
            && trust.allowsSharedCaches(
                secretHeaderFields: environment.secretHeaderFields,
                destinationPolicy: privateCache ? .allowAll : config.destinationPolicy,
                allowedURLs: privateCache ? nil : config.allowedURLPrefixes)
        return OutputEncoding(
            encoder: encoder,
            cacheKey: mayCache
                ? ProcessedImageKey(
                    url: url, transformerKey: decodeRequest.transformer?.key, encoder: encoder,
                    variant: Self.decodeVariant(decodeRequest.options) + Self.limitVariant(context, config)) : nil)
    }

    /// A context's own limits as text for the processed-image key, so a result made under looser limits is
    /// never served to a caller with stricter ones; empty when it sets none (keys stay what they were).
    static func limitVariant(_ context: ImageDownloadContext?, _ config: ImageDownloaderConfig) -> String {
        guard let context,
            context.maximumResponseSize != nil || context.maximumImagePixels != nil
                || context.maximumAnimationFrames != nil
        else { return "" }
        let bytes = min(config.maximumResponseSize, context.maximumResponseSize ?? .max)
        let pixels = min(config.maximumImagePixels, context.maximumImagePixels ?? .max)
        let frames = min(config.maximumAnimationFrames, context.maximumAnimationFrames ?? .max)
        return ",limits=\(bytes):\(pixels):\(frames)"
    }

    /// Joins the live operation for `key`, or makes, chains (LIFO) and queues a new one; `caller` makes
    /// the caller for the token. Look-up, attach and enqueue are one critical section, so a caller never
    /// joins an operation that is finishing, and its handlers are attached before the queue can start the
    /// operation. Only a request of equal trust joins (see RequestTrust); any other gets its own operation.
    private func enqueue(
        _ request: ImageDownloadRequest, key: MergeKey, options: ImageDownloaderOptions,
        context: ImageDownloadContext?, environment: OperationEnvironment, callerID: UInt64,
        priority: Operation.QueuePriority?, caller: (ImageDownloadToken) -> DownloadCaller
    ) -> ImageDownloadToken {
        let url = request.url
        let (token, joined) = table.withBarrier { entries -> (ImageDownloadToken, ImageDownloaderOperation?) in
            if let existing = entries.operations[key] {
                let token = ImageDownloadToken(
                    url: url, request: existing.request, callerID: callerID, operation: existing)
                if existing.attach(caller(token)) { return (token, existing) }
            }
            let operation = config.operationClass.init(request: request, options: options, context: context)
            let gate = config.executionOrder == .lifo ? entries.chainLIFO(operation) : nil
            operation.install(environment: environment, mergeKey: key, gate: gate)
            let token = ImageDownloadToken(url: url, request: request, callerID: callerID, operation: operation)
            _ = operation.attach(caller(token))  // a fresh operation accepts its first caller
            if priority != nil { operation.updateQueuePriority() }  // not queued yet: only recorded
            entries.operations[key] = operation
            queue.addOperation(operation)
            return (token, nil)
        }
        // A caller that joins may ask for more than the operation has (outside the table's barrier: the
        // queue's locks are taken).
        joined?.updateQueuePriority()
        return token
    }

    /// The decoded-image cache key: the URL, every option that changes the decoded pixels (the colour space
    /// and the transformer's key included), the
    /// request's trust, so an image fetched under one trust is never served to a request of another, and
    /// its limits, so an image decoded under looser ones is never served to a request with stricter ones.
    static func imageCacheKey(_ key: MergeKey, _ decoding: DecodeRequest) -> String {
        "\(key.url.absoluteString)#\(decodeVariant(decoding.options))"
            + "\(decoding.transformer.map { "#" + $0.key } ?? "")#\(key.trust.cacheKeyComponent)"
            + "#limits=\(key.maximumResponseSize),\(decoding.options.maximumImagePixels),"
            + "\(decoding.options.maximumAnimationFrames)"
    }

    /// The decode options that change the pixels, as text: part of both image-cache keys
    /// (`ProcessedImageKey.variant` for the processed-image cache).
    static func decodeVariant(_ options: ImageDecodingOptions) -> String {
        let thumbnail = options.thumbnailPixelSize.map { "\($0.width)x\($0.height)" } ?? "full"
        return
            "\(thumbnail),\(options.scaleDownLargeImages ? options.scaleDownLimitBytes : 0),"
            + "\(options.decodeFirstFrameOnly ? 1 : 0),\(options.colorSpace.rawValue)"
            + (options.prefersEmbeddedThumbnail ? ",embedded-thumbnail" : "")
            + (options.keepsSixteenBits ? ",16-bit" : "") + (options.keepsEXIF ? ",exif" : "")
    }

    /// A field for an error message: the name as a Swift string literal (escapes visible), the value
    /// left out (it may be a secret).
    private static func describe(_ field: HTTPHeaders.Field) -> String {
        "\(field.name.debugDescription) (\(field.value.utf8.count)-byte value)"
    }

    /// Cancels every queued and running download; each caller gets `cancelled` once.
    public func cancelAllDownloads() {
        retries.cancelAll()
        queue.cancelAllOperations()
    }

    /// Stops the downloader: later requests fail with `invalidDownloadOperation`; with
    /// `cancelPendingDownloads` every download is cancelled now, otherwise running and queued ones
    /// finish first. Then the transport thread ends and every curl handle is freed. Does nothing to `shared`.
    public func invalidate(cancelPendingDownloads: Bool) {
        guard self !== ImageDownloader.shared else { return }
        guard !invalidated.exchange(true, ordering: .acquiringAndReleasing) else { return }
        retries.invalidate()
        if cancelPendingDownloads {
            retries.cancelAll()
            queue.cancelAllOperations()
            transport?.shutdown()
        } else {
            let queue = self.queue
            let transport = self.transport
            // A thread of its own for a wait as long as the downloads: on a global queue it would hold one of
            // the few threads async code shares (see BackgroundQueues).
            Thread {
                queue.waitUntilAllOperationsAreFinished()
                transport?.shutdown()
            }.start()
        }
    }

    /// Waits until an invalidated downloader has stopped: its remaining downloads ended (with
    /// `cancelPendingDownloads: false` they run to completion first) and its transport thread closed its
    /// connections and left. For a command-line tool that exits right after its downloads: otherwise the
    /// process may end while connections are still being closed. Returns false when `timeout` seconds
    /// pass first or the downloader was never invalidated. Not from this downloader's completions,
    /// progress blocks or notifications: the threads they run on may be the ones this waits for.
    @discardableResult
    public func waitUntilInvalidated(timeout: TimeInterval = 30) -> Bool {
        guard invalidated.load(ordering: .acquiring) else { return false }
        guard let transport else { return true }
        return transport.waitUntilStopped(timeout: timeout)
    }

    /// For tests: whether the transport thread has stopped and freed its handles.
    var isTransportStopped: Bool { transport?.isStopped ?? true }

    /// For tests: the transport, to watch it stop after the downloader is gone.
    var transportForTesting: CurlTransport? { transport as? CurlTransport }

    /// For tests: callers waiting on the live operation for `url`.
    func callerCount(for url: URL) -> Int {
        table.withBarrier { $0.operations.filter { $0.key.url == url }.reduce(0) { $0 + $1.value.callerCount } }
    }

    /// For tests: the pixel memory budget this downloader's decodes share.
    var decodeMemoryForTesting: DecodeMemoryBudget? { decodeMemory }

    /// For tests: the body bytes this downloader's downloads share.
    var bodyBudgetForTesting: BodyBytesBudget { bodyBudget }

    /// For tests: URLs with a live operation in the table.
    var tableCount: Int { table.count }
}
