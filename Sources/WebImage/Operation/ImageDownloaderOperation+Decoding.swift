import Dispatch
import Foundation
import Synchronization

/// The incremental decoder of one operation. Confined to the operation's serial decode queue: progressive
/// decodes and the final decode run there one after another, never at the same time.
final class IncrementalDecoderBox: @unchecked Sendable {
    // @unchecked Sendable: touched only from the operation's serial decode queue (see above).
    var decoder: (any ImageIncrementalDecoding)?
    var options: ImageDecodingOptions?
    let queue: DispatchQueue

    init(target: DispatchQueue) {
        queue = DispatchQueue(label: "WebImage.decode.operation", target: target)
    }
}

extension ImageDownloaderOperation {
    /// The operation's serial decode queue and incremental decoder, made on first use: an operation that
    /// decodes nothing (`avoidDecodeImage`) never creates a queue.
    var decoderBox: IncrementalDecoderBox {
        let target = environment.decodeQueue
        return state.withLock { $0.decoder(orMake: { IncrementalDecoderBox(target: target) }) }
    }

    /// Makes a partial image from the bytes so far and hands it to every caller as `(image, nil, nil, false)`.
    /// At most one runs at a time per operation, and none is delivered once the transfer has ended, so a
    /// partial image never follows the final one (`OperationLifecycle.beginPartialDecode`/`endPartialDecode`).
    func decodeProgressively(_ snapshot: Data) {
        let box = decoderBox
        let firstOptions = state.withLock { $0.callers.first?.decoding.options } ?? ImageDecodingOptions()
        box.queue.async { [self] in
            if box.decoder == nil {
                box.decoder = registry.makeIncrementalDecoder(for: snapshot, options: firstOptions)
                box.options = firstOptions
            }
            let partial = box.decoder?.decodePartial(snapshot)
            state.withLock { state in
                let callers = state.endPartialDecode()
                guard let partial else { return }
                // Dispatched under the lock: the final result is queued only after the transfer's end
                // changed the state (also under this lock), so on each callback queue a partial comes first.
                for caller in callers { caller.deliverPartial(partial) }
            }
        }
    }

    /// Turns the complete body into one result per distinct decode request and serves every caller.
    ///
    /// Decoding, decrypting and writing to the HTTP cache run on the decode queue. When there is none of
    /// that to do (every caller asked for `avoidDecodeImage`), the callers are served right here, on the
    /// transport thread: handing the bytes over costs less than waking a decode thread to do it.
    func process(_ data: Data, metrics: ImageDownloadMetrics, cacheWrite: HTTPCacheWrite?) {
        let needsDecodeQueue =
            decryptor != nil || cacheWrite != nil
            || state.withLock { state in
                state.hasDecoder || state.callers.contains { !$0.decoding.avoidsDecoding }
            }
        if needsDecodeQueue {
            let box = decoderBox
            box.queue.async { [self] in serve(data, metrics: metrics, cacheWrite: cacheWrite, box: box) }
        } else {
            serve(data, metrics: metrics, cacheWrite: cacheWrite, box: nil)
        }
    }

    private func serve(
        _ data: Data, metrics: ImageDownloadMetrics, cacheWrite: HTTPCacheWrite?, box: IncrementalDecoderBox?
    ) {
        if let cacheWrite { writeHTTPCache(cacheWrite, body: data) }
        let (payload, failure) = decryptedPayload(data)
        var results: [DecodeRequest: Result<Image?, ImageDownloaderError>] = [:]
        var encodings: [OutputEncoding.Identity: Result<Data, ImageDownloaderError>] = [:]
        if failure == nil {
            // Decode (and encode) before taking the callers: one cancelled meanwhile gets its `cancelled` and
            // nothing else.
            (results, encodings) = decodeForWaitingCallers(payload, box: box)
        }
        let (callers, response) = state.withLock { ($0.takeCallersToServe(), $0.response) }
        // The body is the callers' from here on: it no longer counts against the downloader's limit.
        releaseBodyBytes()
        var succeeded = false
        // Completions for callers on the notification queue run in one block with the Finish notification
        // (one block instead of one per callback); others on their own queue.
        let notificationTarget = self.notificationTarget
        var onNotificationQueue: [@Sendable () -> Void] = []
        for caller in callers {
            var result =
                failure.map { .failure($0) } ?? results[caller.decoding] ?? decode(payload, caller.decoding, box: box)
            var data = payload
            if case .success(let image?) = result, let output = caller.output {
                let identity = OutputEncoding.Identity(decoding: caller.decoding, encoderKey: output.encoder.key)
                switch encodings[identity] ?? encode(image, output) {
                case .success(let encoded): data = encoded
                case .failure(let error): result = .failure(error)
                }
            }
            if case .success = result { succeeded = true }
            guard
                let callback = terminalCallback(
                    caller, result: result, data: data, response: response, metrics: metrics)
            else { continue }
            if caller.target.queue === notificationTarget.queue {
                onNotificationQueue.append(callback)
            } else {
                caller.target.async(callback)
            }
        }
        // Finish means success for somebody (as SDWebImage posts it): not when every caller left (cancelled) before
        // being served, whether the bytes came from the network or the cache. (A cancel of the whole
        // operation never gets here: the lifecycle does not enter processing after one.)
        let postsFinish = succeeded
        if postsFinish || !onNotificationQueue.isEmpty {
            notificationTarget.async { [self, onNotificationQueue] in
                for callback in onNotificationQueue { callback() }
                if postsFinish { NotificationCenter.default.post(name: .imageDownloadFinish, object: self) }
            }
        }
        if state.withLock({ $0.served() }) { announceFinish() }
    }

    /// The body the callers get (`data` as the decryptor returns it, when there is one), or the failure
    /// every caller gets instead: a decryptor that returned nil, or an empty body.
    private func decryptedPayload(_ data: Data) -> (payload: Data, failure: ImageDownloaderError?) {
        var payload = data
        var failure: ImageDownloaderError?
        if let decryptor {
            if let decrypted = decryptor.decryptedData(data, response: response) {
                payload = decrypted
            } else {
                failure = ImageDownloaderError(.badImageData, "the decryptor returned nil", url: request.url)
            }
        }
        if failure == nil, payload.isEmpty {
            failure = ImageDownloaderError(.badImageData, "the response body is empty", url: request.url)
        }
        return (payload, failure)
    }

    /// `payload` decoded once for each decoding the waiting callers ask for, and each decoded image encoded
    /// once for each output they ask of it.
    private func decodeForWaitingCallers(_ payload: Data, box: IncrementalDecoderBox?) -> (
        results: [DecodeRequest: Result<Image?, ImageDownloaderError>],
        encodings: [OutputEncoding.Identity: Result<Data, ImageDownloaderError>]
    ) {
        var results: [DecodeRequest: Result<Image?, ImageDownloaderError>] = [:]
        var encodings: [OutputEncoding.Identity: Result<Data, ImageDownloaderError>] = [:]
        let waiting = state.withLock { $0.callers.map { ($0.decoding, $0.output) } }
        for decodeRequest in Set(waiting.map(\.0)) {
            results[decodeRequest] = decode(payload, decodeRequest, box: box)
        }
        for case (let decoding, let output?) in waiting {
            let identity = OutputEncoding.Identity(decoding: decoding, encoderKey: output.encoder.key)
            guard encodings[identity] == nil, case .success(let image?)? = results[decoding] else { continue }
            encodings[identity] = encode(image, output)
        }
        return (results, encodings)
    }

    /// The completion `caller` gets for `result` (nil when it asked for none), after a decoded image is put
    /// in the image cache under the caller's key.
    private func terminalCallback(
        _ caller: DownloadCaller, result: Result<Image?, ImageDownloaderError>, data: Data,
        response: TransferResponse?,
        metrics: ImageDownloadMetrics
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

    private func decode(_ data: Data, _ decodeRequest: DecodeRequest, box: IncrementalDecoderBox?) -> Result<
        Image?, ImageDownloaderError
    > {
        if decodeRequest.avoidsDecoding { return .success(nil) }
        do {
            let image: Image
            if let box, let decoder = box.decoder, box.options == decodeRequest.options {
                image = try decoder.decodeFinal(data)  // one decoder per operation, reused for the final image
            } else {
                image = try registry.decode(data, options: decodeRequest.options)
            }
            guard image.width > 0, image.height > 0, !image.frames.isEmpty else {
                return .failure(ImageDownloaderError(.badImageData, "the image has no pixels", url: request.url))
            }
            guard let transformer = decodeRequest.transformer else { return .success(image) }
            do {
                return .success(try transformer.transform(image, budget: decodeRequest.options.memoryBudget))
            } catch {
                return .failure(
                    ImageDownloaderError.codecFailure(
                        error, url: request.url, context: "the transformer \(transformer.key) failed"))
            }
        } catch {
            return .failure(ImageDownloaderError.codecFailure(error, url: request.url, context: nil))
        }
    }

    /// Encodes a caller's image with its `context.encoder` and stores the bytes in the processed-image cache
    /// when the caller has a key there.
    private func encode(_ image: Image, _ output: OutputEncoding) -> Result<Data, ImageDownloaderError> {
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

    var registry: ImageDecoderRegistry { environment.decoderRegistry }
}
