import Dispatch
import Foundation
import WebImageTransport

extension ImageDownloaderOperation: TransferDelegate {
    /// Builds the transfer from the configuration and the first caller's options and hands it to the
    /// transport. Runs once, from `start()`.
    func beginTransfer() {
        let config = environment.config
        var transferRequest = TransferRequest(url: request.url)
        transferRequest.headers = request.headers
        transferRequest.idleTimeout = request.timeout
        transferRequest.connectTimeout = request.timeout
        transferRequest.totalTimeout = max(0, config.totalTimeout)
        transferRequest.maximumRedirects = config.maximumRedirects
        transferRequest.allowedProtocols = Set(config.allowedProtocols.map { $0.lowercased() })
        transferRequest.maximumResponseSize = config.maximumResponseSize
        transferRequest.verifiesTLS = !options.contains(.allowInvalidSSLCertificates)
        transferRequest.caBundlePath = config.caBundlePath
        // The URL's credentials or the configuration's (see RequestTrust), under the same rules.
        transferRequest.username = credentials?.user
        transferRequest.password = credentials?.password
        transferRequest.allowsCredentialsOverPlainHTTP = config.allowsCredentialsOverPlainHTTP
        transferRequest.secretHeaderFields = environment.secretHeaderFields
        transferRequest.handlesCookies = options.contains(.handleCookies)
        transferRequest.destinationPolicy = config.destinationPolicy
        transferRequest.allowedURLs = config.allowedURLPrefixes
        decodesProgressively = options.contains(.progressiveLoad) && decryptor == nil

        if completeFromProcessedCache() { return }
        if options.contains(.useURLCache), usesHTTPCache(config) {
            let cache = config.urlCache ?? HTTPCache.shared
            let now = Date()
            var exchange = HTTPCacheExchange(cache: cache, requestDate: now)
            switch cache.lookup(request, now: now) {
            case .fresh(let cached):
                completeFromCache(cached)
                return
            case .stale(let cached, let conditionalHeaders):
                for field in conditionalHeaders { transferRequest.headers[field.name] = field.value }
                exchange.revalidating = cached
            case .miss:
                break
            }
            state.withLock { $0.httpCache = exchange }
        }

        let transfer: any TransportTransfer
        do {
            transfer = try environment.transport.makeTransfer(transferRequest, delegate: self)
        } catch {
            failBeforeTransfer(ImageDownloaderError(transportError: error))
            return
        }
        switch state.withLock({ $0.lifecycle.transferMade(transfer) }) {
        case .startTransfer(let callers):
            for caller in callers { caller.progress?(0, -1, request.url) }
            environment.instruments.transferStarted(request.url)
            environment.transport.start(transfer)
        case .finish:
            announceFinish()  // cancelled during the set-up: the transfer is dropped unstarted
        case .none:
            break
        }
    }

    // MARK: TransferDelegate (transport thread)

    /// Posted from the transport thread, with the other events of the transfer: on a busy downloader
    /// they share one wake-up of the callback queue (see DrainBatch).
    package func transferDidStart() {
        post(.imageDownloadStart)
    }

    package func transferDidReceiveResponse(_ received: TransferResponse) -> (any Error)? {
        var response = received
        var error: ImageDownloaderError?
        if let modifier = context?.responseModifier ?? environment.config.responseModifier {
            if let modified = modifier.modifiedResponse(received) {
                response = modified
            } else {
                error = ImageDownloaderError(
                    .invalidDownloadResponse, "the response modifier returned nil", url: request.url,
                    statusCode: received.statusCode, response: received)
            }
        }
        post(.imageDownloadReceiveResponse)
        if error == nil, response.statusCode == 304 {
            (response, error) = revalidated(by: response)
        }
        if error == nil { error = validate(response) }
        // Content-Length counts encoded bytes; with gzip/br/zstd the decoded length is unknown.
        let encoding = response.headers["Content-Encoding"]?.lowercased() ?? "identity"
        let expected = error == nil && encoding == "identity" ? response.expectedContentLength : -1
        if expected > 0 {
            // One allocation for the whole body instead of repeated growth and copying (transport thread,
            // which owns `body`). The size limit still applies: curl refuses larger declared lengths.
            body.reserve(Int(min(expected, environment.config.maximumResponseSize)))
        }
        let callers = state.withLock { state -> [DownloadCaller] in
            state.response = response
            state.expectedSize = expected
            return state.lifecycle.callers
        }
        for caller in callers { caller.token.recordResponse(response) }
        if error == nil {
            for caller in callers { caller.progress?(0, Int(expected), request.url) }
        }
        return error
    }

    /// Response checks in SDWebImage's order: status, content type, then the 304 rule.
    private func validate(_ response: TransferResponse) -> ImageDownloaderError? {
        let config = environment.config
        if let acceptable = config.acceptableStatusCodes, !acceptable.contains(response.statusCode) {
            var message = "HTTP status \(response.statusCode) is not acceptable"
            if response.statusCode == 401, credentials != nil, !config.allowsCredentialsOverPlainHTTP,
                response.url.scheme?.lowercased() == "http"
            {
                message += " (the credentials were not sent over plain http: set allowsCredentialsOverPlainHTTP)"
            }
            return ImageDownloaderError(
                .invalidDownloadStatusCode, message, url: request.url, statusCode: response.statusCode,
                response: response)
        }
        if let acceptable = config.acceptableContentTypes {
            let type = response.mimeType ?? ""
            let family = type.split(separator: "/").first.map { "\($0)/*" } ?? ""
            if !acceptable.contains(type) && !acceptable.contains(family) {
                return ImageDownloaderError(
                    .invalidDownloadContentType, "content type \"\(type)\" is not acceptable", url: request.url,
                    statusCode: response.statusCode, response: response)
            }
        }
        if response.statusCode == 304, state.withLock({ $0.httpCache?.confirmedByServer == nil }) {
            return ImageDownloaderError(
                .cacheNotModified, "the server answered 304 Not Modified and nothing is cached", url: request.url,
                statusCode: 304, response: response)
        }
        return nil
    }

    package func transferDidReceiveData(_ bytes: UnsafeRawBufferPointer, totalReceived: Int64) -> (any Error)? {
        let budget = environment.bodyBudget
        guard budget.claim(Int64(bytes.count)) else {
            return ImageDownloaderError(
                .responseTooLarge,
                "the bodies this downloader holds would exceed maximumInFlightBodyBytes (\(budget.limit) bytes)",
                url: request.url, response: response)
        }
        claimedBodyBytes.add(Int64(bytes.count), ordering: .relaxed)
        body.append(bytes)
        let interval = environment.progressIntervalNanoseconds
        let now = DispatchTime.now()
        let wantsProgressive = decodesProgressively
        let (callers, expected, decodeNow) = state.withLock { state -> ([DownloadCaller], Int64, Bool) in
            let expected = state.expectedSize
            // Throttle only when the length is known, and never the last chunk.
            if expected > 0, interval > 0, totalReceived < expected,
                now.uptimeNanoseconds - state.lastProgressTime.uptimeNanoseconds < interval
            {
                return ([], expected, false)
            }
            state.lastProgressTime = now
            let decodeNow =
                wantsProgressive && expected > 0 && totalReceived < expected && state.lifecycle.beginPartialDecode()
            return (state.lifecycle.callers, expected, decodeNow)
        }
        for caller in callers { caller.progress?(Int(totalReceived), Int(expected), request.url) }
        if decodeNow { decodeProgressively(body.snapshot) }
        return nil
    }

    /// Gives the body's bytes back to the downloader's `BodyBytesBudget`: once the body was handed out,
    /// or when it is dropped. Only the first call gives anything back.
    func releaseBodyBytes() {
        environment.bodyBudget.release(claimedBodyBytes.exchange(0, ordering: .relaxed))
    }

    /// The transport's error becomes the downloader's here (`ImageDownloaderError(transportError:)`).
    package func transferDidComplete(_ transportResult: Result<ImageDownloadMetrics, TransportError>) {
        let result = transportResult.mapError { ImageDownloaderError(transportError: $0) }
        let succeeded = (try? result.get()) != nil
        environment.instruments.transferCompleted(request.url, result)
        let (action, confirmed) = state.withLock { state in
            (state.lifecycle.transferCompleted(succeeded: succeeded), state.httpCache?.confirmedByServer)
        }
        switch (action, result) {
        case (.process, .success(var metrics)):
            var data = body.take()
            if let confirmed {
                data = confirmed.body
                metrics.cacheStatus = .revalidated
            }
            // From the transport thread, like the other transfer events: on a busy downloader it shares the
            // turn's one wake-up of the callback queue (see DrainBatch).
            post(.imageDownloadStop)
            process(data, metrics: metrics, storeInCache: confirmed == nil)
        case (.fail(let callers, let postsStop), .failure(let error)):
            dropBody()
            fail(callers, with: error, postsStop: postsStop)
        case (.stopAndFinish, _):
            dropBody()
            post(.imageDownloadStop)
            writeRevalidationOffThisThread()
            announceFinish()
        default:
            dropBody()
        }
    }

    /// Frees what arrived of a body nobody will be served (transport thread, which owns `body`).
    private func dropBody() {
        _ = body.take()
        releaseBodyBytes()
    }

    /// Ends the operation with `error` before any transfer was started (the cache refused, or the
    /// transfer could not be set up).
    func failBeforeTransfer(_ error: ImageDownloaderError) {
        switch state.withLock({ $0.lifecycle.preparationFailed() }) {
        case .fail(let callers, let postsStop):
            fail(callers, with: error, postsStop: postsStop)
        case .finish:
            announceFinish()
        default:
            break
        }
    }

    /// Gives `callers` the failure, then finishes.
    private func fail(_ callers: [DownloadCaller], with error: ImageDownloaderError, postsStop: Bool) {
        var error = error
        if error.url == nil { error.url = request.url }
        let response = self.response
        if error.response == nil, error.code != .cancelled { error.response = response }
        let policy = environment.config.retryPolicy
        for caller in callers {
            // A caller with attempts left waits off the queue and joins a new operation (RetryScheduler).
            if let mergeKey, let delay = policy.delay(after: error, attempt: caller.attempt) {
                environment.retries.schedule(
                    caller, after: delay, error: error,
                    attempt: RetryScheduler.Attempt(
                        environment: environment, key: mergeKey, request: request, options: options,
                        context: context))
                continue
            }
            caller.complete(image: nil, data: nil, error: error, response: response, metrics: nil)
        }
        if postsStop { post(.imageDownloadStop) }
        writeRevalidationOffThisThread()
        if state.withLock({ $0.lifecycle.served() }) { announceFinish() }
    }

    /// A 304 answered with ignoreCachedResponse (or for another representation, or after a cancel) still
    /// updates the cache; this may be the transport thread, so the SQLite write goes elsewhere.
    private func writeRevalidationOffThisThread() {
        if state.withLock({ $0.httpCache?.pendingRevalidation != nil }) {
            DispatchQueue.global(qos: .utility).async { self.persistRevalidation() }
        }
    }

    /// The credentials curl may send after a 401: the URL's, else the configuration's.
    var credentials: RequestTrust.Credentials? { mergeKey?.trust.credentials }

    var decryptor: (any ImageDownloaderDecrypting)? {
        context?.decryptor ?? environment.config.decryptor
    }

    // MARK: HTTP cache

    /// Whether this request may read and write the HTTP cache, which every downloader and process of the
    /// user shares: `RequestTrust.allowsSharedCaches` decides (a request that may not also sends no
    /// validators). A cache the configuration declares its own (`urlCacheIsPrivate`) holds only answers
    /// this policy judged, so the policy alone does not keep a request out of it.
    private func usesHTTPCache(_ config: ImageDownloaderConfig) -> Bool {
        guard let trust = mergeKey?.trust else { return false }
        let privateCache = config.urlCacheIsPrivate && config.urlCache != nil
        return trust.allowsSharedCaches(
            secretHeaderFields: environment.secretHeaderFields,
            destinationPolicy: privateCache ? .allowAll : config.destinationPolicy,
            allowedURLs: privateCache ? nil : config.allowedURLPrefixes)
    }

    // MARK: Processed-image cache

    /// When every waiting caller wants encoded bytes that `config.processedImageCache` holds, serves each
    /// its bytes (and no image) without a transfer, a decode or an encode, and returns true. Read here, on
    /// the operation's thread, not on the one that called `downloadImage`: the read is disk I/O.
    private func completeFromProcessedCache() -> Bool {
        guard let cache = environment.config.processedImageCache else { return false }
        let keys = state.withLock { $0.lifecycle.callers.map { $0.output?.cacheKey } }
        guard !keys.isEmpty else { return false }
        var hits: [ProcessedImageKey: Data] = [:]
        for key in keys {
            guard let key else { return false }
            if hits[key] == nil {
                guard let data = cache.data(for: key) else { return false }
                hits[key] = data
            }
        }
        func hit(for caller: DownloadCaller) -> Data? { caller.output?.cacheKey.flatMap { hits[$0] } }
        let action = state.withLock { state in state.lifecycle.cacheHit(ifEvery: { hit(for: $0) != nil }) }
        switch action {
        case nil:
            return false
        case .serve?:
            // Callers cancelled since the hit are no longer in the lifecycle and were told already.
            let callers = state.withLock { $0.lifecycle.takeCallersToServe() }
            var metrics = ImageDownloadMetrics()
            metrics.cacheStatus = .processedImageCache
            for caller in callers {
                caller.complete(image: nil, data: hit(for: caller), error: nil, response: nil, metrics: metrics)
            }
            if !callers.isEmpty { post(.imageDownloadFinish) }
            if state.withLock({ $0.lifecycle.served() }) { announceFinish() }
        case .finish?:
            announceFinish()  // cancelled during the lookup: no callers left, no Finish
        case .none?:
            break
        }
        return true
    }

    /// A 304 to our conditional request: serve the stored body with the 304's fields merged in (or, with
    /// `ignoreCachedResponse`, report cacheNotModified). Returns the response to validate further.
    ///
    /// This runs on the transport thread, so it only computes: the stored entry was read before the
    /// transfer started, and writing the refreshed head to the cache (SQLite) is left to the processing
    /// step (`persistRevalidation`), off the thread that drives every other transfer's bytes.
    private func revalidated(by notModified: TransferResponse) -> (TransferResponse, ImageDownloaderError?) {
        let now = Date()
        let (requestDate, revalidating) = state.withLock {
            ($0.httpCache?.requestDate ?? now, $0.httpCache?.revalidating)
        }
        guard let stored = revalidating else { return (notModified, nil) }  // the 304 rule: cacheNotModified
        guard HTTPCachePolicy.notModified(notModified.headers, matches: stored.response.headers) else {
            // The server validated another representation: what is stored is outdated.
            state.withLock { $0.httpCache?.pendingRevalidation = .remove }
            return (notModified, nil)
        }
        var refreshed = stored
        refreshed.response.headers = HTTPCachePolicy.mergedHeaders(
            stored: stored.response.headers, notModified: notModified.headers, receivedAt: now)
        refreshed.requestDate = requestDate
        refreshed.responseDate = now
        state.withLock {
            $0.httpCache?.pendingRevalidation = .refresh(
                notModified: notModified, requestDate: requestDate, responseDate: now)
        }
        if options.contains(.ignoreCachedResponse) {
            return (
                refreshed.response,
                ImageDownloaderError(
                    .cacheNotModified, "the server confirmed the cached response (304) and ignoreCachedResponse is set",
                    url: request.url, statusCode: 304, response: notModified)
            )
        }
        state.withLock { $0.httpCache?.confirmedByServer = refreshed }
        var served = refreshed.response
        served.statusCode = 200
        return (served, nil)
    }

    /// Writes what a 304 taught about the stored entry (its refreshed head, or its removal) to the cache.
    /// From the processing step or a failure path: never on the transport thread.
    func persistRevalidation() {
        let (cache, pending) = state.withLock { state -> ((any HTTPCaching)?, PendingRevalidation?) in
            defer { state.httpCache?.pendingRevalidation = nil }
            return (state.httpCache?.cache, state.httpCache?.pendingRevalidation)
        }
        guard let cache, let pending else { return }
        switch pending {
        case .refresh(let notModified, let requestDate, let responseDate):
            cache.refresh(with: notModified, for: request, requestDate: requestDate, responseDate: responseDate)
        case .remove:
            cache.removeResponse(for: request.url)
        }
    }

    /// Serves a fresh cache entry without touching the network.
    private func completeFromCache(_ cached: CachedHTTPResponse) {
        if options.contains(.ignoreCachedResponse) {
            failBeforeTransfer(
                ImageDownloaderError(
                    .cacheNotModified, "a fresh cached response exists and ignoreCachedResponse is set",
                    url: request.url,
                    statusCode: cached.response.statusCode, response: cached.response))
            return
        }
        let action = state.withLock { state in
            state.response = cached.response
            return state.lifecycle.cacheHit()
        }
        switch action {
        case .serve(let callers):
            for caller in callers { caller.token.recordResponse(cached.response) }
            var metrics = ImageDownloadMetrics()
            metrics.cacheStatus = .fresh
            metrics.bytesReceived = Int64(cached.body.count)
            metrics.httpVersion = cached.response.httpVersion
            process(cached.body, metrics: metrics, storeInCache: false)
        case .finish:
            announceFinish()  // cancelled during the lookup: no callers left, no Finish
        case .none:
            break
        }
    }
}
