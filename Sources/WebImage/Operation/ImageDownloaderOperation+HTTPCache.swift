import Dispatch
import Foundation

/// The operation's side of the HTTP cache (`.useURLCache`): who may use it, a fresh hit, a 304, and the
/// writes the lifecycle's actions call for. What the cache exchange knows lives in the lifecycle
/// (`HTTPCacheExchange`, in its transferring state); the methods here carry out what it decides.
extension ImageDownloaderOperation {
    /// Whether this request may read and write the HTTP cache, which every downloader and process of the
    /// user shares: `RequestTrust.allowsSharedCaches` decides (a request that may not also sends no
    /// validators). A cache the configuration declares its own (`urlCacheIsPrivate`) holds only answers
    /// this policy judged, so the policy alone does not keep a request out of it.
    func usesHTTPCache(_ config: ImageDownloaderConfig) -> Bool {
        guard let trust = mergeKey?.trust else { return false }
        let privateCache = config.urlCacheIsPrivate && config.urlCache != nil
        return trust.allowsSharedCaches(
            secretHeaderFields: environment.secretHeaderFields,
            destinationPolicy: privateCache ? .allowAll : config.destinationPolicy,
            allowedURLs: privateCache ? nil : config.allowedURLPrefixes)
    }

    /// Serves a fresh cache entry without touching the network.
    func completeFromCache(_ cached: CachedHTTPResponse) {
        if options.contains(.ignoreCachedResponse) {
            failBeforeTransfer(
                ImageDownloaderError(
                    .cacheNotModified, "a fresh cached response exists and ignoreCachedResponse is set",
                    url: request.url,
                    statusCode: cached.response.statusCode, response: cached.response))
            return
        }
        switch state.withLock({ $0.cacheHit(response: cached.response) }) {
        case .serve(let callers):
            for caller in callers { caller.token.recordResponse(cached.response) }
            var metrics = ImageDownloadMetrics()
            metrics.cacheStatus = .fresh
            metrics.bytesReceived = Int64(cached.body.count)
            metrics.httpVersion = cached.response.httpVersion
            process(cached.body, metrics: metrics, cacheWrite: nil)
        case .finish:
            announceFinish()  // cancelled during the lookup: no callers left, no Finish
        case .none:
            break
        }
    }

    /// A 304 to our conditional request: the stored entry's head, refreshed, as a 200 (its body is served
    /// at the completion), or, with `ignoreCachedResponse`, cacheNotModified. Returns the response to check
    /// further; a 304 that confirmed nothing comes back unchanged, for `validate` to report.
    ///
    /// This runs on the transport thread, so it only decides: the stored entry was read before the
    /// transfer started, and the cache write the 304 calls for is carried out off this thread.
    func revalidated(by notModified: TransferResponse) -> (TransferResponse, ImageDownloaderError?) {
        let ignoring = options.contains(.ignoreCachedResponse)
        switch state.withLock({ $0.notModified(notModified, at: Date(), ignoringCachedResponse: ignoring) }) {
        case .serveStored(let head):
            return (head, nil)
        case .refuse(let refreshed):
            return (
                refreshed,
                ImageDownloaderError(
                    .cacheNotModified, "the server confirmed the cached response (304) and ignoreCachedResponse is set",
                    url: request.url, statusCode: 304, response: notModified)
            )
        case .confirmsNothing:
            return (notModified, nil)
        }
    }

    /// Carries out `write` on this thread, which is never the transport thread (SQLite): the processing
    /// step, or a global queue (`writeHTTPCacheOffThisThread`). `body`: the body served, which a new
    /// answer is stored with.
    func writeHTTPCache(_ write: HTTPCacheWrite, body: Data) {
        switch write.change {
        case .store(let response, let requestDate):
            storeHTTPResponse(response, body: body, in: write.cache, requestDate: requestDate)
        case .refresh(let notModified, let requestDate, let responseDate):
            write.cache.refresh(with: notModified, for: request, requestDate: requestDate, responseDate: responseDate)
        case .remove:
            write.cache.removeResponse(for: request.url)
        }
    }

    /// What a 304 taught the cache is written even when nobody is served (ignoreCachedResponse, another
    /// representation, a failure or a cancel after it); this may be the transport thread, so the write
    /// goes elsewhere.
    func writeHTTPCacheOffThisThread(_ write: HTTPCacheWrite?) {
        guard let write else { return }
        DispatchQueue.global(qos: .utility).async { self.writeHTTPCache(write, body: Data()) }
    }

    /// Stores a network response with `.useURLCache` (the cache decides whether RFC 9111 allows it).
    ///
    /// A redirected response is stored under the URL that served it, not the one requested: the
    /// redirect itself was not stored, so the next request for the first URL asks its server again.
    /// A response whose `Vary` names one of `config.secretHeaderFields` that the request sent is not
    /// stored: the index would have to hold the secret's value.
    private func storeHTTPResponse(
        _ response: TransferResponse, body: Data, in cache: any HTTPCaching, requestDate: Date
    ) {
        var served = request
        served.url = response.url
        let secrets = environment.secretHeaderFields
        let varyNames = response.headers.values(for: "Vary").flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        if varyNames.contains(where: { secrets.contains($0) && request.headers.contains($0) }) {
            cache.removeResponse(for: served.url)
            return
        }
        cache.store(response, body: body, for: served, requestDate: requestDate, responseDate: Date())
    }
}
