import Foundation
import Locking

/// One caller's download, as a handle: its events as a stream, its priority while it waits, its result,
/// and `cancel()`. Made by `ImageDownloader.imageTask(for:options:context:priority:)`.
///
/// An image task is one caller of the downloader, like a `downloadImage` call: callers of the same URL
/// share one operation and one transfer, and cancelling a task cancels that caller only. Like a token,
/// a task does not keep its downloader alive: releasing the downloader cancels its tasks.
///
/// ```swift
/// let task = downloader.imageTask(for: url, options: [.progressiveLoad])
/// task.priority = .high                    // moves the download ahead while it waits
/// for await event in task.events {
///     switch event {
///     case .progress(let received, let expected): print(received, "of", expected)
///     case .partialImage(let partial): print("partial", partial.height)
///     case .completed(.success(let result)): print(result.image?.width ?? 0)
///     case .completed(.failure(let error)): print(error.code)
///     }
/// }
/// ```
public final class ImageTask: Sendable {
    /// How soon a waiting download should start, relative to the others of its downloader.
    public enum Priority: Int, Sendable, Comparable, CaseIterable {
        /// After every other priority.
        case veryLow
        /// After normal ones (`lowPriority`).
        case low
        /// The default.
        case normal
        /// Before normal ones (`highPriority`).
        case high
        /// Before every other priority.
        case veryHigh

        /// Whether `lhs` starts later than `rhs`.
        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The operation queue priority of the same name.
        var queuePriority: Operation.QueuePriority {
            switch self {
            case .veryLow: .veryLow
            case .low: .low
            case .normal: .normal
            case .high: .high
            case .veryHigh: .veryHigh
            }
        }

        /// The priority `downloadImage`'s options ask for: `highPriority` wins over `lowPriority`.
        init(_ options: ImageDownloaderOptions) {
            switch Operation.QueuePriority(options) {
            case .high: self = .high
            case .low: self = .low
            default: self = .normal
            }
        }
    }

    /// What `events` yields: progress and partial images while the download runs, then exactly one
    /// `completed`, after which the stream ends.
    public enum Event: Sendable {
        /// Bytes received so far and the expected total (-1 when unknown).
        case progress(received: Int, expected: Int)
        /// A partial image from progressive loading (`progressiveLoad`).
        case partialImage(Image)
        /// The outcome; a cancelled task completes with an error of code `cancelled`.
        case completed(Result<ImageDownloadResult, ImageDownloaderError>)
    }

    /// The URL requested.
    public let url: URL

    /// The task's events, for one reader. Events are buffered until read, and the stream ends after
    /// `completed`; ending the iteration early does not cancel the task (`cancel()` does).
    public let events: AsyncStream<Event>

    private let continuation: AsyncStream<Event>.Continuation

    private struct State {
        var priority: Priority
        /// The downloader's token for this caller; nil until `download` returned it, and again once the
        /// task completed.
        var token: ImageDownloadToken?
        /// `cancel()` ran before the token arrived.
        var cancelRequested = false
        var outcome: Result<ImageDownloadResult, ImageDownloaderError>?
        /// Readers of `value` waiting for the outcome.
        var waiters: [CheckedContinuation<Result<ImageDownloadResult, ImageDownloaderError>, Never>] = []
    }
    private let state: Lock<State>

    init(url: URL, priority: Priority) {
        self.url = url
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        state = Lock(State(priority: priority))
    }

    /// How soon the download should start while it waits in the queue; setting it takes effect at once.
    ///
    /// When several callers share one download, it waits with the highest priority any of its waiting
    /// callers asks for (a `downloadImage` caller asks with `highPriority` or `lowPriority`), so raising
    /// one task's priority moves the shared download ahead and lowering it never holds back the others.
    /// Once the download has started, a change has no effect. In LIFO order only the newest waiting
    /// download is ready to start, so there a priority orders the ready ones only.
    public var priority: Priority {
        get { state.withLock { $0.priority } }
        set {
            let token = state.withLock { state -> ImageDownloadToken? in
                state.priority = newValue
                return state.token
            }
            token?.setPriority(newValue.queuePriority)
        }
    }

    /// Cancels this task: it completes with `cancelled` (2002), unless it already completed. Other
    /// callers of the URL are unaffected.
    public func cancel() {
        let token = state.withLock { state -> ImageDownloadToken? in
            state.cancelRequested = true
            return state.token
        }
        token?.cancel()
    }

    /// The result: waits for the task to complete. Cancelling the Task that waits cancels this image task.
    public var value: ImageDownloadResult {
        get async throws(ImageDownloaderError) {
            let outcome = await withTaskCancellationHandler {
                await withCheckedContinuation { waiter in
                    let outcome = state.withLock { state in
                        if state.outcome == nil { state.waiters.append(waiter) }
                        return state.outcome
                    }
                    if let outcome { waiter.resume(returning: outcome) }
                }
            } onCancel: {
                cancel()
            }
            return try outcome.get()
        }
    }

    // MARK: From the downloader

    /// Hands over the caller's token (nil when the request failed at once and `complete` already ran).
    /// The task is not handed out before this, so its priority is still the one `download` was given.
    func attach(_ token: ImageDownloadToken?) {
        let cancelNow = state.withLock { state -> Bool in
            guard state.outcome == nil else { return false }
            state.token = token
            return state.cancelRequested
        }
        if cancelNow { token?.cancel() }
    }

    /// Progress or a partial image. Yielded under the lock that `complete` takes, so that one arriving
    /// late (progress runs on the transport thread, a cancel's completion on the callback queue) is
    /// dropped instead of following `completed`.
    func yield(_ event: Event) {
        state.withLock { state in
            guard state.outcome == nil else { return }
            continuation.yield(event)
        }
    }

    /// The terminal event; the downloader calls it once per caller, and a second call would do nothing.
    func complete(_ outcome: Result<ImageDownloadResult, ImageDownloaderError>) {
        let waiters = state.withLock { state -> [CheckedContinuation<DownloadOutcome, Never>] in
            guard state.outcome == nil else { return [] }
            state.outcome = outcome
            state.token = nil
            // A yield resumes the reader's continuation at most; it runs none of its code here.
            continuation.yield(.completed(outcome))
            continuation.finish()
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}
