import Crypto
import Foundation
import Locking
import Logging
import Prometheus
import WebImage

/// The image proxy's engine, free of any HTTP server: a request's method, path and two header fields in,
/// a status, header fields and body out. `ProxyServer` puts it behind Hummingbird.
///
/// One request: check the signature (403) → parse the URL (400) → check the source against
/// `allowedSources` (403; redirects too, as they come) → decide the format and the ETag, and answer an
/// `If-None-Match` naming it with 304 without fetching → look the result up in `resultCache` → join the
/// work already making the same result, or start it: take a slot (`maximumConcurrentJobs`) or a place in
/// the queue (`maximumQueuedJobs`), else 503 with `Retry-After` → fetch, decode (first frame), resize and
/// encode through one `ImageDownloader` call, with the destination policy and limits of the configuration;
/// the downloader stores the result in `resultCache`, which is its `processedImageCache` → 200 with the
/// image.
///
/// Results whose source is the same URL share its download: the downloader merges callers of one URL into
/// one operation, each caller with its own transformer and encoder, and makes the different results side
/// by side on its decode and processing stages (results with the same decode options share one decode). There is one result cache, the downloader's:
/// the proxy reads it (before taking a slot) under the key the downloader stores under.
///
/// ```swift
/// let proxy = ImageProxy(configuration: configuration)
/// let response = await proxy.respond(to: ProxyRequest(path: "/insecure/w:300/plain/https://example.com/a.jpg"))
/// response.status  // 200
/// ```
public final class ImageProxy: Sendable {
    /// The configuration, as given.
    public let configuration: ImageProxyConfiguration
    let signature: URLSignature
    let downloader: ImageDownloader
    /// `configuration.localFilesystemRoot`'s files, nil when there is none (or it is not a directory).
    let localFiles: LocalFileSource?
    /// The downloader of `local://` and `s3://` sources (`storage(_:base:logger:)`); nil without them.
    let storageDownloader: ImageDownloader?
    let logger: Logger
    let accessLogger: Logger
    let metrics: ProxyMetrics
    let limiter: WorkLimiter
    let results = ResultCoalescer()
    /// `configuration.allowedSources`, parsed; nil when every source is allowed.
    let allowedSources: URLPrefixList?
    let state = Lock(OperationalState())

    /// A proxy fetching through its own downloader, configured from `configuration`.
    ///
    /// - Parameters:
    ///   - logger: source failures and deadlines, at `.info`. Labelled `WebImageProxy` by default.
    ///   - accessLogger: one line per request (see `respond(to:)`). Labelled `webimage.serve.access` by
    ///     default.
    ///   - metricsRegistry: where `GET /metrics` reads from; one of the proxy's own by default.
    public init(
        configuration: ImageProxyConfiguration, logger: Logger = Logger(label: "WebImageProxy"),
        accessLogger: Logger = Logger(label: "webimage.serve.access"),
        metricsRegistry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()
    ) {
        self.configuration = configuration
        self.signature = URLSignature(keys: configuration.signingKeys, size: configuration.signatureSize)
        self.logger = logger
        self.accessLogger = accessLogger
        self.metrics = ProxyMetrics(registry: metricsRegistry, namespace: configuration.metricsNamespace)
        self.limiter = WorkLimiter(
            maximumRunning: configuration.maximumConcurrentJobs, maximumQueued: configuration.maximumQueuedJobs)
        var config = Self.fetchConfig(configuration)
        self.allowedSources = Self.allowedSources(configuration.allowedSources, logger: logger)
        // Redirects are judged by the same list, in the transport, before they are followed.
        config.allowedURLPrefixes = allowedSources
        config.maximumImagePixels = configuration.maximumSourcePixels
        config.maximumAnimationFrames = configuration.maximumAnimationFrames
        config.urlCache = configuration.sourceCache
        config.urlCacheIsPrivate = true  // the proxy's source cache serves this downloader alone
        // One result cache: the downloader stores each result as it encodes it, and `process` reads it.
        config.processedImageCache = configuration.resultCache
        config.processedImageCacheIsPrivate = true
        // Every running job may be downloading: the limiter, not the downloader's queue, is the bound.
        config.maxConcurrentDownloads = max(config.maxConcurrentDownloads, limiter.maximumRunning)
        config.logger = logger
        // The downloader's own counters (downloads by result, errors by code, bytes received, its timer)
        // join the proxy's in `/metrics`.
        var factory = PrometheusMetricsFactory(registry: metrics.registry)
        if let namespace = configuration.metricsNamespace {
            factory.nameAndLabelSanitizer = { (namespace + "_" + $0, $1) }
        }
        config.metricsFactory = factory
        self.downloader = ImageDownloader(config: config)
        (self.localFiles, self.storageDownloader) = Self.storage(configuration, base: config, logger: logger)
    }

    /// What every fetch of the proxy shares, sources and the images read once at the start alike: the
    /// destination policy, the size limit, the time limits (the download's own inside the request's, since
    /// the deadline also covers the decode and encode), 2xx only, and no cookie jar (a private one: one
    /// client's cookies never reach another's request).
    static func fetchConfig(_ configuration: ImageProxyConfiguration) -> ImageDownloaderConfig {
        var config = ImageDownloaderConfig.default
        config.destinationPolicy = .publicOnly.allowing(configuration.allowedDestinations)
        config.maximumResponseSize = configuration.maximumSourceBytes
        let seconds = min(
            Self.seconds(configuration.requestDeadline),
            Self.seconds(configuration.sourceTimeout ?? configuration.requestDeadline))
        config.totalTimeout = max(seconds, 0.001)
        config.downloadTimeout = min(max(Self.seconds(configuration.sourceIdleTimeout), 0.001), config.totalTimeout)
        config.acceptableStatusCodes = Set(200..<300)
        config.cookieStorage = nil
        return config
    }

    /// `prefixes` parsed; a prefix that does not parse is logged and matches nothing (never everything).
    private static func allowedSources(_ prefixes: [String], logger: Logger) -> URLPrefixList? {
        guard !prefixes.isEmpty else { return nil }
        var valid: [String] = []
        // `local://` and `s3://` prefixes are `StorageSourcePrefix`es, matched by `allowsSource`.
        for prefix in prefixes where StorageSourcePrefix(prefix) == nil {
            do throws(URLPrefixList.InvalidPrefix) {
                _ = try URLPrefixList([prefix])
                valid.append(prefix)
            } catch {
                logger.error("an allowed source that does not parse matches nothing", metadata: ["error": "\(error)"])
            }
        }
        // Every prefix valid by now; an empty list (all invalid) allows nothing.
        return (try? URLPrefixList(valid)) ?? (try? URLPrefixList([]))
    }

    /// The registry `GET /metrics` reads from (to add the process's own metrics to it).
    public var metricsRegistry: PrometheusCollectorRegistry { metrics.registry }

    func process(_ request: ProxyRequest) async throws(ProxyError) -> ProxyResponse {
        let deadline = ContinuousClock.now + configuration.requestDeadline
        try checkAccess(request, path: request.path)
        var url = try ProxyURL(
            path: request.path, presets: configuration.presets, onlyPresets: configuration.onlyPresets,
            defaults: configuration.defaultOptions, baseURL: configuration.baseURL,
            clientHints: configuration.usesClientHints ? request.clientHints : nil)
        try checkSecurityOptions(url.options)
        // imgproxy answers a URL past its `expires` with 404, as a URL that does not exist.
        if url.options.expires > 0, url.options.expires < Int64(Date().timeIntervalSince1970) {
            throw ProxyError(status: 404, "the URL has expired")
        }
        let sourceText = url.source.absoluteString
        guard allowsSource(url.source) else { throw .forbidden("the source URL is not allowed") }
        url.fetchURL = try fetchURL(for: url.source)
        let choice = FormatChoice(
            format: url.options.format, accept: request.accept, negotiation: configuration.formatNegotiation)
        let etag = Self.etag(source: sourceText, options: url.options, choice: choice)
        var headers = [
            ("Cache-Control", "public, max-age=\(configuration.cacheMaxAge)"),
            ("Expires", HTTPDate.format(Date(timeIntervalSinceNow: TimeInterval(configuration.cacheMaxAge)))),
            ("ETag", etag),
            ("X-Content-Type-Options", "nosniff"), ("Content-Security-Policy", "default-src 'none'"),
        ]
        let ifNoneMatch = configuration.usesETags ? request.ifNoneMatch : nil
        if !configuration.usesETags { headers.removeAll { $0.0 == "ETag" } }
        var vary: [String] = []
        if configuration.formatNegotiation.isOn { vary.append("Accept") }
        if configuration.usesClientHints { vary += ["Sec-CH-DPR", "DPR", "Sec-CH-Width", "Width"] }
        if !vary.isEmpty { headers.append(("Vary", vary.joined(separator: ", "))) }
        // A validator naming this ETag is answered without fetching: the ETag is the result's identity. `*`
        // ("any representation exists") is answered only once the result exists, below, so it never
        // vouches for a source that fails.
        if let ifNoneMatch, Self.matches(ifNoneMatch, etag) {
            var notModified = ProxyResponse(status: 304, headers: headers, body: Data())
            notModified.cacheStatus = .revalidated
            return notModified
        }

        let (outcome, cacheStatus) = await result(for: url, choice: choice, deadline: deadline)
        let made: ResultCoalescer.Made
        switch outcome {
        case .success(let value): made = value
        case .failure(let error) where error.isSourceFailure && configuration.fallbackImage != nil:
            return try await fallback(for: url, choice: choice, failure: error, headers: headers)
        case .failure(let error): throw error
        }
        let (data, fields) = (made.data, made.sourceFields)
        if let ifNoneMatch, Self.isWildcard(ifNoneMatch) {
            var notModified = ProxyResponse(status: 304, headers: headers, body: Data())
            notModified.cacheStatus = cacheStatus
            return notModified
        }
        headers = fields.applied(to: headers)
        if configuration.usesLastModified, fields.notModified(since: request.ifModifiedSince) {
            var notModified = ProxyResponse(status: 304, headers: headers, body: Data())
            notModified.cacheStatus = cacheStatus
            return notModified
        }
        let format = ImageFormat.detect(data)
        // A skipped source (`skip_processing`, `raw`) may be any format the codecs detect.
        let contentType = format == .unknown ? "application/octet-stream" : "image/\(format.rawValue)"
        headers.insert(("Content-Type", contentType), at: 0)
        headers.append(
            ("Content-Disposition", ContentDisposition.value(options: url.options, source: url.source, format: format)))
        var response = ProxyResponse(status: 200, headers: headers, body: data)
        response.cacheStatus = cacheStatus
        return response
    }

    /// Throws 403 unless `request` has the secret (when one is configured) and `path`'s signature segment
    /// signs the rest of it (or is `insecure` where unsigned URLs are allowed). Checked before anything else
    /// is parsed, so an unsigned request learns nothing about the option grammar.
    func checkAccess(_ request: ProxyRequest, path: String) throws(ProxyError) {
        if let secret = configuration.secret, !Self.hasSecret(request.authorization, secret) {
            throw .forbidden("invalid secret")
        }
        let (signatureText, signedPath) = try ProxyURL.splitSignature(path)
        let unsignedAllowed = configuration.allowsUnsigned && signatureText == "insecure"
        guard unsignedAllowed || signature.isValid(signature: signatureText, for: signedPath) else {
            throw .forbidden("invalid signature")
        }
    }

    /// The result for `url` as `choice`: from the result cache, or from the work making it (joined or
    /// started), with where it came from. The source fields of a result the work made are stored beside it.
    private func result(for url: ProxyURL, choice: FormatChoice, deadline: ContinuousClock.Instant) async
        -> (ResultCoalescer.Outcome, ResultCacheStatus)
    {
        // The downloader's processed-image cache, under the key its download stores this result under.
        let cache = downloader.config.processedImageCache
        let cacheKey = downloader(for: url).processedImageKey(
            for: url.fetchURL ?? url.source, options: storageOptions(sourceOptions(for: choice), for: url),
            context: sourceContext(
                limitedContext(context(for: url, choice: choice, cancellation: JobCancellation()), for: url), for: url)
                ?? ImageDownloadContext())
        if let cache, let cacheKey,
            let hit = await ProxyTracing.cacheLookup({ await Self.offPool({ cache.data(for: cacheKey) }) })
        {
            metrics.resultCache(hit: true)
            let fields = await storedSourceFields(cache: cache, key: cacheKey)
            return (.success(.init(data: hit, sourceFields: fields)), .hit)
        }
        if cache != nil { metrics.resultCache(hit: false) }
        // The ETag's identity, as a key: the same three parts make the same bytes. Requests for one key share
        // one piece of work.
        let key = ProcessedImageKey(
            url: url.source, transformerKey: url.options.canonical, encoderKey: choice.tag, variant: "serve")
        let shared = await result(for: key, url: url, choice: choice, deadline: deadline)
        if shared.joined { metrics.joined() }
        if !shared.joined, case .success(let made) = shared.outcome, let cache, let cacheKey {
            await store(made.sourceFields, cache: cache, key: cacheKey)
        }
        return (shared.outcome, shared.joined ? .joined : .miss)
    }

    /// The shared outcome for `key`, waited for until the request's `deadline`. Leaving at the deadline
    /// leaves the work to the other requests for it, or cancels it when there are none.
    func result(
        for key: ProcessedImageKey, url: ProxyURL, choice: FormatChoice, deadline: ContinuousClock.Instant
    ) async -> ResultCoalescer.Shared {
        await withTaskGroup(of: ResultCoalescer.Shared?.self) { group in
            group.addTask {
                await self.results.result(for: key) { await self.makeResult(key: key, url: url, choice: choice) }
            }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            guard let first else {
                logger.info("deadline passed", metadata: ["source": "\(url.source.redactedString)"])
                return ResultCoalescer.Shared(
                    outcome: .failure(ProxyError(status: 504, "the request took longer than its deadline")),
                    joined: false)
            }
            return first
        }
    }

    /// The one piece of work for a result: wait for a slot, fetch and process (the downloader stores the
    /// result in the cache before it hands it over, so a request arriving after the work ends finds it).
    ///
    /// It runs while someone waits for it (`ResultCoalescer` cancels its task when the last request
    /// left, at the latest at that request's deadline): a queued job then leaves the queue without
    /// running, and a running one cancels its download (the downloader's cancel token) and stops its
    /// encode, and keeps its slot until that encode has stopped.
    private func makeResult(key: ProcessedImageKey, url: ProxyURL, choice: FormatChoice) async
        -> ResultCoalescer.Outcome
    {
        switch limiter.admit() {
        case .refused:
            metrics.refused()
            return .failure(ProxyError(status: 503, "the server is busy; try again shortly"))
        case .queued:
            guard await limiter.waitForTurn() else { return .failure(Self.abandoned) }
        case .granted:
            break
        }
        defer { limiter.release() }
        guard !Task.isCancelled else { return .failure(Self.abandoned) }
        let cancellation = JobCancellation()
        let outcome = await withTaskCancellationHandler { () async -> ResultCoalescer.Outcome in
            do throws(ProxyError) {
                return .success(try await fetch(url, choice: choice, cancellation: cancellation))
            } catch {
                return .failure(error)
            }
        } onCancel: {
            cancellation.cancel()
        }
        if Task.isCancelled {
            cancellation.cancel()  // again: the download's own handler may have ended the wait first
            await cancellation.untilStepsEnded()
        }
        return outcome
    }

    private static let abandoned = ProxyError(status: 504, "the request took longer than its deadline")

    /// Fetch, decode, transform and encode in the downloader, until done or the job is cancelled.
    private func fetch(_ url: ProxyURL, choice: FormatChoice, cancellation: JobCancellation) async throws(ProxyError)
        -> ResultCoalescer.Made
    {
        if let info = url.info { return try await summary(of: url, info: info, cancellation: cancellation) }
        var context = context(for: url, choice: choice, cancellation: cancellation)
        context.stepObserver = ProxyStepSpans.current
        if url.options.raw || !url.options.skipProcessing.isEmpty {
            // The bytes first, undecoded: a source of a skipped format is answered as it came. Any other is
            // then fetched again below for processing (from the source cache when there is one).
            let cacheOption: ImageDownloaderOptions = configuration.sourceCache == nil ? [] : [.useURLCache]
            let unprocessed = try await download(
                url, options: cacheOption.union(.avoidDecodeImage), context: nil, cancellation: cancellation)
            let bytes = unprocessed.data
            if url.options.raw || url.options.skipProcessing.contains(ImageFormat.detect(bytes)) {
                return .init(
                    data: bytes, sourceFields: SourceFields(unprocessed.response?.headers, configuration: configuration)
                )
            }
        }
        let made = try await download(
            url, options: sourceOptions(for: choice), context: context, cancellation: cancellation)
        return .init(data: made.data, sourceFields: SourceFields(made.response?.headers, configuration: configuration))
    }

    /// One downloader call for `url`'s source, its failures turned into the proxy's answers.
    func download(
        _ url: ProxyURL, options: ImageDownloaderOptions, context: ImageDownloadContext?,
        cancellation: JobCancellation
    ) async throws(ProxyError) -> ImageDownloadResult {
        let source = url.source
        // Returned once this caller is attached to the URL's operation (started or joined).
        let task = downloader(for: url).imageTask(
            for: url.fetchURL ?? source, options: storageOptions(options, for: url),
            context: sourceContext(limitedContext(context, for: url), for: url))
        state.withLock { $0.sourceRequests += 1 }
        // Cancelling this task (the job's) cancels the image task: its caller leaves the download, and the
        // transfer stops when no other caller of the URL is left.
        let result: ImageDownloadResult
        do throws(ImageDownloaderError) {
            result = try await task.value
        } catch  where cancellation.isCancelled || Task.isCancelled {
            logger.info("deadline passed", metadata: ["source": "\(source.redactedString)"])
            metrics.sourceError(code: "deadline")
            throw Self.abandoned
        } catch {
            // The transformer's refusals of the source (`ProxyTransformer`), before anything was encoded.
            switch error.underlying as? ProxyError {
            case ProxyTransformer.tooManyFrames?:
                throw ProxyTransformer.tooManyFrames
            case ProxyTransformer.truncated?:
                logger.info("source truncated", metadata: ["source": "\(source.redactedString)"])
                metrics.sourceError(code: "truncated")
                throw ProxyTransformer.truncated
            default:
                logger.info("source failed", metadata: ["source": "\(source.redactedString)", "error": "\(error)"])
                metrics.sourceError(code: error.code.description)
                var failure = Self.proxyError(for: error)
                failure.isSourceFailure = [403, 404, 502, 504].contains(failure.status)
                throw failure
            }
        }
        return result
    }

    /// What the downloader is asked for a result: its transformer, and its encoder run as a step of the job.
    /// The cache key comes from this too (`processedImageKey`), so the proxy reads what the download stores.
    func context(for url: ProxyURL, choice: FormatChoice, cancellation: JobCancellation)
        -> ImageDownloadContext
    {
        var context = ImageDownloadContext()
        context.transformer = ProxyTransformer(
            options: url.options,
            maximumDimension: url.options.limits.resultDimension(under: configuration.maximumResultDimension),
            background: choice == .jpegOrPNG ? .whiteUnlessAlpha : .transparent,
            maximumAnimationFrames: url.options.limits.animationFrames(under: configuration.maximumAnimationFrames),
            keepsAnimation: choice.animates && configuration.keepsAnimations,
            watermark: url.options.watermark.isEnabled ? configuration.watermark : nil)
        context.encoder = JobEncoder(
            base: OutputEncoder(choice: choice, options: url.options, stopCheck: cancellation.stopCheck),
            cancellation: cancellation)
        // `strip_color_profile:0`: the pixels as stored, their profile embedded by the encoder.
        if !url.options.stripColorProfile { context.colorSpace = .preserve }
        // `enforce_thumbnail`: a HEIC's embedded thumbnail is the source, as imgproxy takes it.
        context.prefersEmbeddedThumbnail = url.options.enforceThumbnail
        // `preserve_hdr`: 16 bits kept for a result that can be a PNG, the one format written at 16 bits here.
        context.keepsSixteenBits =
            url.options.preserveHDR && [.explicit(.png), .negotiated(.png), .jpegOrPNG].contains(choice)
        // `strip_metadata:0` and `keep_copyright`: the source's EXIF, for the formats whose encoders write it.
        context.keepsEXIF =
            (!url.options.stripMetadata || url.options.keepCopyright) && ProxyTransformer.writesEXIF(choice)
        return context
    }

    /// The options of a source download for a still result: the first frame only, through the source cache
    /// when there is one.
    var sourceOptions: ImageDownloaderOptions {
        configuration.sourceCache == nil ? [.decodeFirstFrameOnly] : [.decodeFirstFrameOnly, .useURLCache]
    }

    /// The options of a source download for `choice`: every frame when the result keeps an animation.
    func sourceOptions(for choice: FormatChoice) -> ImageDownloaderOptions {
        choice.animates && configuration.keepsAnimations
            ? sourceOptions.subtracting(.decodeFirstFrameOnly) : sourceOptions
    }

    /// The result cache's calls block on SQLite and files; they run on `BackgroundQueues`, never on the
    /// cooperative pool the server's handlers share (nor on a concurrent queue, whose threads are that pool's).
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            BackgroundQueues.next.async { continuation.resume(returning: body()) }
        }
    }

    /// The status a source failure is answered with; the sentence carries no detail of the failure.
    static func proxyError(for error: ImageDownloaderError) -> ProxyError {
        // The proxy's own refusals from inside the decode step (`ProxyTransformer`) keep their answer.
        if let own = error.underlying as? ProxyError { return own }
        // A limit names itself, so the URL's author knows another request, not another file, is the fix.
        if let limit = (error.underlying as? ImageCodecError)?.limit {
            switch limit {
            case .maximumImagePixels:
                return ProxyError(status: 422, "the source image has more pixels than this server processes")
            case .maximumDecodeMemory:
                return ProxyError(
                    status: 422, "the image needs more pixel memory than this server allows for one image")
            case .decodeMemoryInUse:
                return ProxyError(status: 503, "the server is busy; try again shortly")
            }
        }
        return switch error.code {
        case .invalidDownloadStatusCode where error.statusCode == 404 || error.statusCode == 410:
            ProxyError(status: 404, "the source image was not found")
        case .timedOut, .cancelled:
            ProxyError(status: 504, "the source did not answer in time")
        case .destinationNotAllowed:
            ProxyError(status: 403, "the source's address is not allowed")
        case .badImageData:
            ProxyError(status: 422, "the source is not an image that can be processed")
        // imgproxy's answer to a source over its file size limit, the server's or the URL's (`msfs`).
        case .responseTooLarge:
            ProxyError(status: 422, "the source file is larger than allowed")
        // The server's own shared budget for bodies in flight, full with other requests' sources: not this
        // source's fault, and the same request can succeed later.
        case .inFlightBodyLimit:
            ProxyError(status: 503, "the server is busy; try again shortly")
        default:
            ProxyError(status: 502, "the source could not be fetched")
        }
    }

    /// Whether `authorization` is `Bearer SECRET`, compared in constant time (as imgproxy's
    /// `subtle.ConstantTimeCompare`), so the time taken does not tell how much of a guess was right.
    static func hasSecret(_ authorization: String?, _ secret: String) -> Bool {
        let expected = Array("Bearer \(secret)".utf8)
        let given = Array((authorization ?? "").utf8)
        var difference = UInt8(expected.count == given.count ? 0 : 1)
        for index in expected.indices {
            difference |= expected[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0
    }

    /// A strong ETag over the source, the canonical options and the format choice.
    static func etag(source: String, options: ProcessingOptions, choice: FormatChoice) -> String {
        let digest = SHA256.hash(data: Data("\(source)\n\(options.canonical)\n\(choice.tag)".utf8))
        return "\"" + HexDigits.lowercase(digest.prefix(16)) + "\""
    }

    /// Whether an `If-None-Match` value names `etag`; weak validators compare by their opaque part, as
    /// RFC 9110 asks for `If-None-Match`. `*` is not a name (see `isWildcard`).
    static func matches(_ ifNoneMatch: String, _ etag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { item in
            var tag = item.trimmingCharacters(in: .whitespaces)
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag
        }
    }

    /// Whether an `If-None-Match` value is `*`: true for any representation that exists, so for a result
    /// only once it was made (or found in the cache).
    static func isWildcard(_ ifNoneMatch: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == "*" }
    }

    /// `duration` in seconds.
    static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
