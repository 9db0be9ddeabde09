import Foundation
import Locking

/// The outcome of a successful download.
public struct ImageDownloadResult: Sendable {
    /// The URL requested.
    public var url: URL
    /// The decoded image; nil with `avoidDecodeImage`. Check `image.isPartial`: a file that ends early
    /// (truncated at its source) still decodes, to the rows that arrived, and is not an error.
    public var image: Image?
    /// The bytes received (after the decryptor, if any).
    public var data: Data
    /// The final response head.
    public var response: ImageDownloadResponse?
    /// Timings and counters of the transfer.
    public var metrics: ImageDownloadMetrics?

    /// Whether the bytes (or the image) came from a cache rather than a full download.
    public var isFromCache: Bool { (metrics?.cacheStatus ?? .network) != .network }
}

/// What `events(for:)` yields while a download runs.
public enum ImageDownloadEvent: Sendable {
    /// Bytes received so far and the expected total (-1 when unknown).
    case progress(received: Int, expected: Int)
    /// A partial image from progressive loading.
    case partialImage(Image)
    /// The final result; the stream ends after it.
    case completed(ImageDownloadResult)
}

extension ImageDownloader {
    /// Downloads and decodes `url`. Cancelling the calling Task cancels exactly this caller
    /// (it throws `ImageDownloaderError` with code `cancelled`); other callers of the URL are unaffected.
    ///
    /// ```swift
    /// let result = try await ImageDownloader.shared.image(for: url, options: [.scaleDownLargeImages])
    /// print(result.image?.width ?? 0)
    /// ```
    public func image(
        for url: URL, options: ImageDownloaderOptions = [], context: ImageDownloadContext? = nil
    ) async throws -> ImageDownloadResult {
        let pending = PendingToken()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let token = download(
                    url, options: options, context: context, progress: nil, completed: nil,
                    detailed: { image, data, error, finished, response, metrics in
                        guard finished else { return }
                        if let error {
                            continuation.resume(throwing: error)
                        } else {
                            continuation.resume(
                                returning: ImageDownloadResult(
                                    url: url, image: image, data: data ?? Data(), response: response, metrics: metrics))
                        }
                    })
                pending.set(token)
            }
        } onCancel: {
            pending.cancel()
        }
    }

    /// Downloads `url` as a stream of events: progress, partial images (with `progressiveLoad`), then the
    /// result. Ending the iteration early cancels this caller.
    ///
    /// ```swift
    /// for try await event in downloader.events(for: url, options: [.progressiveLoad]) {
    ///     if case .partialImage(let image) = event { show(image) }
    /// }
    /// ```
    public func events(
        for url: URL, options: ImageDownloaderOptions = [], context: ImageDownloadContext? = nil
    ) -> AsyncThrowingStream<ImageDownloadEvent, Error> {
        AsyncThrowingStream { continuation in
            let token = download(
                url, options: options, context: context,
                progress: { received, expected, _ in
                    continuation.yield(.progress(received: received, expected: expected))
                }, completed: nil,
                detailed: { image, data, error, finished, response, metrics in
                    if !finished {
                        if let image { continuation.yield(.partialImage(image)) }
                        return
                    }
                    if let error {
                        continuation.finish(throwing: error)
                    } else {
                        continuation.yield(
                            .completed(
                                ImageDownloadResult(
                                    url: url, image: image, data: data ?? Data(), response: response, metrics: metrics))
                        )
                        continuation.finish()
                    }
                })
            continuation.onTermination = { termination in
                if case .cancelled = termination { token?.cancel() }
            }
        }
    }
}

/// Holds a token that may arrive after the Task was already cancelled.
private final class PendingToken: Sendable {
    private let state = Lock<(token: ImageDownloadToken?, cancelled: Bool)>((nil, false))

    func set(_ token: ImageDownloadToken?) {
        let cancelNow = state.withLock { state -> Bool in
            state.token = token
            return state.cancelled
        }
        if cancelNow { token?.cancel() }
    }

    func cancel() {
        let token = state.withLock { state -> ImageDownloadToken? in
            state.cancelled = true
            return state.token
        }
        token?.cancel()
    }
}
