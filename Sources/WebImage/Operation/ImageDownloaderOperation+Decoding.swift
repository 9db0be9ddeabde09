import Dispatch
import Foundation
import Synchronization

/// The incremental decoder of one operation. Confined to the operation's serial decode queue, where
/// progressive decodes run one after another; the final body's processing starts there too, after the
/// last of them, and hands the decoder to the one decode job whose options it was made with.
final class IncrementalDecoderBox: @unchecked Sendable {
    // @unchecked Sendable: touched from the operation's serial decode queue until the body is complete, then
    // by one decode job only (`decodeImage`): no progressive decode starts once the transfer ended (the
    // lifecycle refuses), and the job is submitted from that queue after every earlier one ran.
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

    /// Turns the complete body into one result per distinct output and serves every caller (the stages:
    /// `runStages`).
    ///
    /// Decrypting and writing to the HTTP cache run on the operation's decode queue, then the decodes,
    /// transforms and encodes on the downloader's stages. When there is none of that to do (every caller
    /// asked for `avoidDecodeImage`), the callers are served right here, on the transport thread: handing
    /// the bytes over costs less than waking a decode thread to do it.
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
        let run = BodyRun(payload: payload, metrics: metrics, response: state.withLock { $0.response })
        if let failure {
            serveCallers(run, result: .failure(failure), data: payload) { _ in true }
        } else {
            runStages(run, box: box)
        }
        run.end(self)
    }

    /// The largest body this operation's callers take: the configuration's, or the lower limit of their
    /// context (callers with different limits never share an operation: `MergeKey`).
    var maximumBodySize: Int64 {
        min(environment.config.maximumResponseSize, contextHooks.maximumResponseSize ?? .max)
    }

    /// The body the callers get (`data` as the decryptor returns it, when there is one), or the failure
    /// every caller gets instead: a body over `maximumBodySize` (one from the HTTP cache, stored by a
    /// transfer with a larger limit), a decryptor that returned nil, or an empty body.
    private func decryptedPayload(_ data: Data) -> (payload: Data, failure: ImageDownloaderError?) {
        var payload = data
        var failure: ImageDownloaderError?
        if Int64(data.count) > maximumBodySize {
            failure = ImageDownloaderError(
                .responseTooLarge, "the body exceeds the maximum response size of \(maximumBodySize) bytes",
                url: request.url)
            return (payload, failure)
        }
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

    var registry: ImageDecoderRegistry { environment.decoderRegistry }
}
