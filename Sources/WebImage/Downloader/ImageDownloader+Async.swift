import Foundation
import Locking

/// The outcome of a successful download.
public struct ImageDownloadResult: Sendable {
    /// The URL requested.
    public var url: URL
    /// The decoded image; nil with `avoidDecodeImage` and for a hit of the processed-image cache. Check
    /// `image.isPartial`: a file that ends early (truncated at its source) still decodes, to the rows that
    /// arrived, and is not an error.
    public var image: Image?
    /// The bytes received (after the decryptor, if any); with `ImageDownloadContext.encoder`, the encoded
    /// image instead.
    public var data: Data
    /// The final response head.
    public var response: TransferResponse?
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

/// What `events(for:)` returns: the download's events, then the end of the sequence, or an
/// `ImageDownloaderError` thrown in their place.
public struct ImageDownloadEvents: AsyncSequence, Sendable {
    public typealias Element = ImageDownloadEvent
    public typealias Failure = ImageDownloaderError

    let base: AsyncStream<Result<ImageDownloadEvent, ImageDownloaderError>>

    /// Reads the events; throws the download's error once, then ends.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = ImageDownloadEvent
        public typealias Failure = ImageDownloaderError

        var base: AsyncStream<Result<ImageDownloadEvent, ImageDownloaderError>>.Iterator

        /// The next event, nil after the last.
        public mutating func next() async throws(ImageDownloaderError) -> ImageDownloadEvent? {
            try await base.next()?.get()
        }

        /// The next event, nil after the last.
        public mutating func next(
            isolation actor: isolated (any Actor)?
        ) async throws(ImageDownloaderError) -> ImageDownloadEvent? {
            try await base.next(isolation: actor)?.get()
        }
    }

    /// An iterator over the events; a stream has one reader.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator())
    }
}

extension ImageDownloader {
    /// Downloads and decodes `url`. Cancelling the calling Task cancels exactly this caller
    /// (it throws `ImageDownloaderError` with code `cancelled`); other callers of the URL are unaffected.
    ///
    /// The error is typed, so a `catch` needs no cast. Leave the cast out: Swift 6.3.1's compiler crashes
    /// ("Found ownership error") on `catch let error as ImageDownloaderError` in a throwing function
    /// when the `do` calls nothing but typed-throwing functions.
    ///
    /// ```swift
    /// do {
    ///     let result = try await ImageDownloader.shared.image(for: url, options: [.scaleDownLargeImages])
    ///     print(result.image?.width ?? 0)
    /// } catch {
    ///     print(error.code)   // the error is an ImageDownloaderError
    /// }
    /// ```
    public func image(
        for url: URL, options: ImageDownloaderOptions = [], context: ImageDownloadContext? = nil
    ) async throws(ImageDownloaderError) -> ImageDownloadResult {
        let pending = PendingToken()
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<DownloadOutcome, Never>) in
                let token = download(
                    url, options: options, context: context, progress: nil, completed: nil,
                    detailed: { image, data, error, finished, response, metrics in
                        guard finished else { return }
                        continuation.resume(
                            returning: Self.outcome(url, image, data, error, response, metrics))
                    })
                pending.set(token)
            }
        } onCancel: {
            pending.cancel()
        }
        return try outcome.get()
    }

    /// Starts (or joins) the download of `url` and returns its handle: events, priority, result and
    /// `cancel()` (see `ImageTask`). `priority` nil takes it from `options` (`highPriority`, `lowPriority`).
    ///
    /// ```swift
    /// let task = downloader.imageTask(for: url, priority: .low)
    /// task.priority = .veryHigh   // the user scrolled to it
    /// let result = try await task.value
    /// ```
    public func imageTask(
        for url: URL, options: ImageDownloaderOptions = [], context: ImageDownloadContext? = nil,
        priority: ImageTask.Priority? = nil
    ) -> ImageTask {
        let task = ImageTask(url: url, priority: priority ?? ImageTask.Priority(options))
        let token = download(
            url, options: options, context: context,
            progress: { received, expected, _ in task.yield(.progress(received: received, expected: expected)) },
            completed: nil,
            detailed: { image, data, error, finished, response, metrics in
                guard finished else {
                    if let image { task.yield(.partialImage(image)) }
                    return
                }
                task.complete(Self.outcome(url, image, data, error, response, metrics))
            }, priority: task.priority.queuePriority)
        task.attach(token)
        return task
    }

    /// Downloads `url` as a stream of events: progress, partial images (with `progressiveLoad`), then the
    /// result; a failure is thrown as an `ImageDownloaderError`. Ending the iteration early cancels this
    /// caller.
    ///
    /// ```swift
    /// for try await event in downloader.events(for: url, options: [.progressiveLoad]) {
    ///     if case .partialImage(let image) = event { show(image) }
    /// }
    /// ```
    public func events(
        for url: URL, options: ImageDownloaderOptions = [], context: ImageDownloadContext? = nil
    ) -> ImageDownloadEvents {
        let stream = AsyncStream<Result<ImageDownloadEvent, ImageDownloaderError>> { continuation in
            let token = download(
                url, options: options, context: context,
                progress: { received, expected, _ in
                    continuation.yield(.success(.progress(received: received, expected: expected)))
                }, completed: nil,
                detailed: { image, data, error, finished, response, metrics in
                    if !finished {
                        if let image { continuation.yield(.success(.partialImage(image))) }
                        return
                    }
                    continuation.yield(Self.outcome(url, image, data, error, response, metrics).map { .completed($0) })
                    continuation.finish()
                })
            continuation.onTermination = { termination in
                if case .cancelled = termination { token?.cancel() }
            }
        }
        return ImageDownloadEvents(base: stream)
    }

    /// Stops the downloader as `invalidate(cancelPendingDownloads: false)` does (later requests fail,
    /// queued and running downloads finish first) and returns once it has stopped: its downloads ended
    /// and its transport thread closed its connections and left. To cancel what is pending instead, call
    /// `cancelAllDownloads()` first. Unlike `waitUntilInvalidated(timeout:)` it blocks no thread, so it
    /// may be awaited anywhere. Returns at once for `shared`, which is never invalidated.
    ///
    /// ```swift
    /// let downloader = ImageDownloader()
    /// _ = try await downloader.image(for: url)
    /// await downloader.invalidate()
    /// ```
    public func invalidate() async {
        guard self !== ImageDownloader.shared else { return }
        invalidate(cancelPendingDownloads: false)
        guard let transport else { return }
        await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
            transport.whenStopped { stopped.resume() }
        }
    }

    /// (image, data, error, response, metrics) of a terminal callback as the async APIs' result.
    private static func outcome(
        _ url: URL, _ image: Image?, _ data: Data?, _ error: ImageDownloaderError?,
        _ response: TransferResponse?, _ metrics: ImageDownloadMetrics?
    ) -> DownloadOutcome {
        if let error { return .failure(error) }
        return .success(
            ImageDownloadResult(url: url, image: image, data: data ?? Data(), response: response, metrics: metrics))
    }
}

typealias DownloadOutcome = Result<ImageDownloadResult, ImageDownloaderError>

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
