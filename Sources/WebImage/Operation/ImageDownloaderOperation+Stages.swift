import Dispatch
import Foundation
import Locking

/// One complete body on its way through the stages: what every job of it shares, and how many of its
/// jobs are still to end. The last to end serves whoever is left and finishes the operation.
final class BodyRun: Sendable {
    let payload: Data
    let metrics: ImageDownloadMetrics
    let response: TransferResponse?

    private struct Progress {
        /// Jobs submitted and not ended, plus one held by the code that plans them until it is done.
        var outstanding = 1
        /// Whether some caller got an image or bytes (Finish is posted then, as SDWebImage does).
        var succeeded = false
        /// Completions for the notification queue, sent when the job that made them ends: by the last job
        /// in one block with the Finish notification, so a completion never runs before its Finish is queued.
        var pending: [@Sendable () -> Void] = []
    }

    private let progress = Lock(Progress())

    init(payload: Data, metrics: ImageDownloadMetrics, response: TransferResponse?) {
        self.payload = payload
        self.metrics = metrics
        self.response = response
    }

    /// A job is about to be submitted. Called before the job that submits it ends, so the count cannot
    /// reach zero while work is still to come.
    func begin() {
        progress.withLock { $0.outstanding += 1 }
    }

    func noteSuccess() {
        progress.withLock { $0.succeeded = true }
    }

    /// Keeps completions for the notification queue until the job that made them ends.
    func hold(_ callbacks: [@Sendable () -> Void]) {
        progress.withLock { $0.pending += callbacks }
    }

    /// The completions held so far, handed out once.
    func takeHeld() -> [@Sendable () -> Void] {
        progress.withLock { progress in
            defer { progress.pending = [] }
            return progress.pending
        }
    }

    /// A job (or the planning) ended; the last one finishes the operation's processing, the others send the
    /// completions they made.
    func end(_ operation: ImageDownloaderOperation) {
        let (done, succeeded) = progress.withLock { progress in
            progress.outstanding -= 1
            return (progress.outstanding == 0, progress.succeeded)
        }
        if done {
            operation.finishProcessing(self, succeeded: succeeded)
        } else {
            let held = takeHeld()
            if !held.isEmpty { operation.notificationTarget.async { for callback in held { callback() } } }
        }
    }
}

extension ImageDownloaderOperation {
    /// Serves the waiting callers from the complete body through the downloader's stages:
    ///
    /// ```
    /// body ─▶ decode, once per distinct decode options           (decode stage, config.maximumConcurrentDecodes)
    ///           └─▶ transform, once per distinct transformer key (processing stage,
    ///                 │                                            config.maximumConcurrentProcessing)
    ///                 ├─▶ callers without an encoder: served with the image
    ///                 └─▶ encode, once per distinct encoder key  (processing stage) ─▶ its callers served
    /// ```
    ///
    /// So different outputs of one source (five sizes for the proxy) are made on as many cores as the
    /// processing stage is wide, while identical requests share one job at every step. Each output's
    /// callers are served as soon as it is made. A job starts only if a caller still waits for it: one
    /// whose callers all cancelled (each got its `cancelled` at once) is dropped, with what follows it.
    /// Jobs are submitted, never waited for, and run on Dispatch threads, off the Swift cooperative pool.
    func runStages(_ run: BodyRun, box: IncrementalDecoderBox?) {
        let waiting = state.withLock { $0.callers }
        let fetchStart = Date(timeIntervalSinceNow: -run.metrics.totalTime)
        for caller in waiting { caller.report(.fetch, from: fetchStart) }
        serveCallers(run, result: .success(nil), data: run.payload) { $0.decoding.avoidsDecoding }
        let decoding = waiting.filter { !$0.decoding.avoidsDecoding }
        for options in Set(decoding.map(\.decoding.options)) {
            let requests = Set(decoding.lazy.filter { $0.decoding.options == options }.map(\.decoding))
            let callers = decoding.filter { $0.decoding.options == options }
            run.begin()
            environment.decodeStage.submit { [self] in
                defer { run.end(self) }
                guard isWaited(for: { !$0.decoding.avoidsDecoding && $0.decoding.options == options }) else { return }
                let decodeStart = Date()
                let decoded = decodeImage(run.payload, options: options, box: box)
                for caller in callers {
                    caller.report(.decode, from: decodeStart, error: decoded.failure)
                }
                for request in requests {
                    switch decoded {
                    case .success(let image):
                        runTransform(image, for: request, callers: callers.filter { $0.decoding == request }, run: run)
                    case .failure(let error):
                        serveCallers(run, result: .failure(error), data: nil) { $0.decoding == request }
                    }
                }
            }
        }
    }

    /// The transform step of `request` (a job of its own when there is a transformer), then its encodes.
    private func runTransform(_ image: Image, for request: DecodeRequest, callers: [DownloadCaller], run: BodyRun) {
        guard let transformer = request.transformer else {
            runEncodes(image, for: request, callers: callers, run: run)
            return
        }
        run.begin()
        environment.processingStage.submit { [self] in
            defer { run.end(self) }
            guard isWaited(for: { $0.decoding == request }) else { return }
            let transformStart = Date()
            do {
                let transformed = try transformer.transform(image, budget: request.options.memoryBudget)
                for caller in callers { caller.report(.transform, from: transformStart) }
                runEncodes(transformed, for: request, callers: callers, run: run)
            } catch {
                for caller in callers { caller.report(.transform, from: transformStart, error: error) }
                let failure = ImageDownloaderError.codecFailure(
                    error, url: self.request.url, context: "the transformer \(transformer.key) failed")
                serveCallers(run, result: .failure(failure), data: nil) { $0.decoding == request }
            }
        }
    }

    /// Serves `request`'s callers that want the image itself, and submits one encode per distinct encoder
    /// the others ask for.
    private func runEncodes(_ image: Image, for request: DecodeRequest, callers: [DownloadCaller], run: BodyRun) {
        serveCallers(run, result: .success(image), data: run.payload) { $0.decoding == request && $0.output == nil }
        var seen = Set<String>()
        let observed = callers.contains { $0.stepObserver != nil }
        for case let output? in callers.map(\.output) where seen.insert(output.encoder.key).inserted {
            let encoderKey = output.encoder.key
            let wants: @Sendable (DownloadCaller) -> Bool = { caller in
                caller.decoding == request && caller.output?.encoder.key == encoderKey
            }
            run.begin()
            environment.processingStage.submit { [self] in
                defer { run.end(self) }
                // The encoder of a caller still waiting: callers with one key make the same bytes, but an
                // encoder may carry its caller's own stop check (the proxy's), which a caller that left has
                // set.
                guard let output = state.withLock({ $0.callers.first(where: wants)?.output }) else {
                    return
                }
                let encodeStart = Date()
                let encoded = encodeImage(image, output)
                // Only a caller still waiting hears of the encode; the lock is taken only when one of them
                // observes steps at all (most callers do not).
                if observed {
                    for caller in state.withLock({ $0.callers.filter(wants) }) {
                        caller.report(.encode, from: encodeStart, error: encoded.failure)
                    }
                }
                switch encoded {
                case .success(let data): serveCallers(run, result: .success(image), data: data, where: wants)
                case .failure(let error): serveCallers(run, result: .failure(error), data: nil, where: wants)
                }
            }
        }
    }

    /// Whether a caller still waits for what `wants` picks: a job nobody waits for is not started.
    private func isWaited(for wants: (DownloadCaller) -> Bool) -> Bool {
        state.withLock { $0.callers.contains(where: wants) }
    }

    /// Hands `result` to the waiting callers `include` picks, each on its own queue. A caller cancelled
    /// meanwhile is no longer waiting: it got its `cancelled` and nothing else.
    func serveCallers(
        _ run: BodyRun, result: Result<Image?, ImageDownloaderError>, data: Data?,
        where include: (DownloadCaller) -> Bool
    ) {
        let callers = state.withLock { $0.takeCallersToServe(where: include) }
        guard !callers.isEmpty else { return }
        if case .success = result { run.noteSuccess() }
        // Completions for the notification queue go in one block (one wake-up instead of one per callback).
        let notificationTarget = self.notificationTarget
        var onNotificationQueue: [@Sendable () -> Void] = []
        for caller in callers {
            guard
                let callback = terminalCallback(
                    caller, result: result, data: data ?? run.payload, response: run.response, metrics: run.metrics)
            else { continue }
            if caller.target.queue === notificationTarget.queue {
                onNotificationQueue.append(callback)
            } else {
                caller.target.async(callback)
            }
        }
        // Sent when this job ends (`BodyRun.end`), with the Finish notification when it is the last.
        run.hold(onNotificationQueue)
    }

    /// The last job of the body ended: every caller was served (each output's as it was made), so the
    /// body is given back to the downloader's budget, Finish is posted and the queue told.
    func finishProcessing(_ run: BodyRun, succeeded: Bool) {
        // Every waiting caller belongs to a job that serves it, or to a dropped job nobody waits for; one
        // left here would be a planning mistake, and still gets its one terminal callback.
        let missed = ImageDownloaderError(.badImageData, "the image was not processed", url: request.url)
        serveCallers(run, result: .failure(missed), data: nil) { _ in true }
        // The body is the callers' from here on: it no longer counts against the downloader's limit.
        releaseBodyBytes()
        // Finish means success for somebody (as SDWebImage posts it): not when every caller left (cancelled)
        // before being served. Posted in one block with the last completions for the notification queue, so
        // a caller whose completion ran knows the Finish is already queued (before the pipeline had stages,
        // every completion and the Finish went in one block).
        let held = run.takeHeld()
        if succeeded || !held.isEmpty {
            notificationTarget.async { [self] in
                for callback in held { callback() }
                if succeeded { NotificationCenter.default.post(name: .imageDownloadFinish, object: self) }
            }
        }
        if state.withLock({ $0.served() }) { announceFinish() }
    }

    /// The completion `caller` gets for `result` (nil when it asked for none), after a decoded image is put
    /// in the image cache under the caller's key.
    private func terminalCallback(
        _ caller: DownloadCaller, result: Result<Image?, ImageDownloaderError>, data: Data,
        response: TransferResponse?, metrics: ImageDownloadMetrics
    ) -> (@Sendable () -> Void)? {
        switch result {
        case .success(let image):
            if let image, let key = caller.imageCacheKey {
                environment.config.imageCache?.setImage(image, forKey: key)
            }
            return caller.terminalCallback(image: image, data: data, error: nil, response: response, metrics: metrics)
        case .failure(var error):
            // Decode failures still came with a response: keep it on the error, as status failures do.
            if error.response == nil, let response {
                error.response = response
                error.statusCode = response.statusCode
            }
            return caller.terminalCallback(image: nil, data: nil, error: error, response: response, metrics: metrics)
        }
    }

    /// `data` decoded with `options`. The operation's incremental decoder finishes the image when it was
    /// made with these options (see IncrementalDecoderBox for why only this job touches it).
    private func decodeImage(_ data: Data, options: ImageDecodingOptions, box: IncrementalDecoderBox?) -> Result<
        Image, ImageDownloaderError
    > {
        do {
            var image: Image
            if let box, let decoder = box.decoder, box.options == options {
                image = try decoder.decodeFinal(data)
                if options.keepsEXIF { image.exif = EXIFMetadata.block(in: data, format: image.format) }
            } else {
                image = try registry.decode(data, options: options)
            }
            guard image.width > 0, image.height > 0, !image.frames.isEmpty else {
                return .failure(ImageDownloaderError(.badImageData, "the image has no pixels", url: request.url))
            }
            return .success(image)
        } catch {
            return .failure(ImageDownloaderError.codecFailure(error, url: request.url, context: nil))
        }
    }

    /// Encodes a caller's image with its `context.encoder` and stores the bytes in the processed-image cache
    /// when the caller has a key there.
    private func encodeImage(_ image: Image, _ output: OutputEncoding) -> Result<Data, ImageDownloaderError> {
        do {
            let data = try output.encoder.encode(image)
            if let key = output.cacheKey { environment.config.processedImageCache?.store(data, for: key) }
            return .success(data)
        } catch {
            return .failure(
                ImageDownloaderError.codecFailure(
                    error, url: request.url, context: "the encoder \(output.encoder.key) failed"))
        }
    }
}

extension Result {
    /// The error of a failure; nil for a success.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
