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
        transferRequest.maximumResponseSize = maximumBodySize
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
        transferRequest.hostAddresses = config.hostAddresses

        if completeFromProcessedCache() { return }
        var exchange: HTTPCacheExchange?
        if options.contains(.useURLCache), usesHTTPCache(config) {
            let cache = config.urlCache ?? HTTPCache.shared
            let now = Date()
            switch cache.lookup(request, now: now) {
            case .fresh(let cached):
                completeFromCache(cached)
                return
            case .stale(let cached, let conditionalHeaders):
                for field in conditionalHeaders { transferRequest.headers[field.name] = field.value }
                exchange = HTTPCacheExchange(cache: cache, requestDate: now, revalidation: .validating(cached))
            case .miss:
                exchange = HTTPCacheExchange(cache: cache, requestDate: now, revalidation: .fetching)
            }
        }

        let transfer: any TransportTransfer
        do {
            transfer = try environment.transport.makeTransfer(transferRequest, delegate: self)
        } catch {
            failBeforeTransfer(ImageDownloaderError(transportError: error))
            return
        }
        let decodesProgressively = options.contains(.progressiveLoad) && decryptor == nil
        let action = state.withLock {
            $0.transferMade(transfer, cache: exchange, decodesProgressively: decodesProgressively)
        }
        switch action {
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
        if let modifier = contextHooks.responseModifier ?? environment.config.responseModifier {
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
        let callers = state.withLock { $0.responseReceived(response, expectedSize: expected) }
        for caller in callers { caller.token.recordResponse(response) }
        if error == nil {
            for caller in callers { caller.progress?(0, Int(expected), request.url) }
        }
        return error
    }

    /// Response checks in SDWebImage's order: status, content type, then the 304 rule (a 304 still here
    /// confirmed nothing cached: `revalidated(by:)` turned one that did into the stored 200).
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
        if response.statusCode == 304 {
            return ImageDownloaderError(
                .cacheNotModified, "the server answered 304 Not Modified and nothing is cached", url: request.url,
                statusCode: 304, response: response)
        }
        return nil
    }

    package func transferDidReceiveData(_ bytes: UnsafeRawBufferPointer, totalReceived: Int64) -> (any Error)? {
        let budget = environment.bodyBudget
        guard budget.claim(Int64(bytes.count)) else {
            // Too large for the whole budget on its own, or only for what other downloads left of it: the
            // first never fits, the second may fit later.
            let held = claimedBodyBytes.load(ordering: .relaxed)
            if Int64(bytes.count) > budget.limit - held {
                return ImageDownloaderError(
                    .responseTooLarge,
                    "the body alone exceeds maximumInFlightBodyBytes (\(budget.limit) bytes)",
                    url: request.url, response: response)
            }
            return ImageDownloaderError(
                .inFlightBodyLimit,
                "the bodies this downloader holds would exceed maximumInFlightBodyBytes (\(budget.limit) bytes)",
                url: request.url, response: response)
        }
        claimedBodyBytes.add(Int64(bytes.count), ordering: .relaxed)
        body.append(bytes)
        let interval = environment.progressIntervalNanoseconds
        let now = DispatchTime.now().uptimeNanoseconds
        let action = state.withLock { $0.bytesReceived(total: totalReceived, at: now, interval: interval) }
        for caller in action.callers {
            caller.progress?(Int(totalReceived), Int(action.expectedSize), request.url)
        }
        if action.decodesPartial { decodeProgressively(body.snapshot) }
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
        switch (state.withLock { $0.transferCompleted(succeeded: succeeded) }, result) {
        case (.process(let storedBody, let cacheWrite), .success(var metrics)):
            var data = body.take()
            if let storedBody {
                data = storedBody  // a 304 confirmed the stored entry: its body replaces the 304's empty one
                metrics.cacheStatus = .revalidated
            }
            // From the transport thread, like the other transfer events: on a busy downloader it shares the
            // turn's one wake-up of the callback queue (see DrainBatch).
            post(.imageDownloadStop)
            process(data, metrics: metrics, cacheWrite: cacheWrite)
        case (.fail(let callers, let postsStop, let cacheWrite), .failure(let error)):
            dropBody()
            fail(callers, with: error, postsStop: postsStop, cacheWrite: cacheWrite)
        case (.stopAndFinish(let cacheWrite), _):
            dropBody()
            post(.imageDownloadStop)
            writeHTTPCacheOffThisThread(cacheWrite)
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
        switch state.withLock({ $0.preparationFailed() }) {
        case .fail(let callers, let postsStop, let cacheWrite):
            fail(callers, with: error, postsStop: postsStop, cacheWrite: cacheWrite)
        case .finish:
            announceFinish()
        default:
            break
        }
    }

    /// Gives `callers` the failure, then finishes. `cacheWrite`: what a 304 taught the HTTP cache.
    private func fail(
        _ callers: [DownloadCaller], with error: ImageDownloaderError, postsStop: Bool, cacheWrite: HTTPCacheWrite?
    ) {
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
        writeHTTPCacheOffThisThread(cacheWrite)
        if state.withLock({ $0.served() }) { announceFinish() }
    }

    /// The credentials curl may send after a 401: the URL's, else the configuration's.
    var credentials: RequestTrust.Credentials? { mergeKey?.trust.credentials }

    var decryptor: (any ImageDownloaderDecrypting)? {
        contextHooks.decryptor ?? environment.config.decryptor
    }

    // MARK: Processed-image cache

    /// When every waiting caller wants encoded bytes that `config.processedImageCache` holds, serves each
    /// its bytes (and no image) without a transfer, a decode or an encode, and returns true. Read here, on
    /// the operation's thread, not on the one that called `downloadImage`: the read is disk I/O.
    private func completeFromProcessedCache() -> Bool {
        guard let cache = environment.config.processedImageCache else { return false }
        let keys = state.withLock { $0.callers.map { $0.output?.cacheKey } }
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
        let action = state.withLock { state in state.cacheHit(ifEvery: { hit(for: $0) != nil }) }
        switch action {
        case nil:
            return false
        case .serve?:
            // Callers cancelled since the hit are no longer in the lifecycle and were told already.
            let callers = state.withLock { $0.takeCallersToServe() }
            var metrics = ImageDownloadMetrics()
            metrics.cacheStatus = .processedImageCache
            for caller in callers {
                caller.complete(image: nil, data: hit(for: caller), error: nil, response: nil, metrics: metrics)
            }
            if !callers.isEmpty { post(.imageDownloadFinish) }
            if state.withLock({ $0.served() }) { announceFinish() }
        case .finish?:
            announceFinish()  // cancelled during the lookup: no callers left, no Finish
        case .none?:
            break
        }
        return true
    }
}
