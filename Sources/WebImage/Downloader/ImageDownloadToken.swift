import Foundation
import Locking

/// Identifies one caller of `downloadImage`; cancelling it affects that caller only.
///
/// The transfer itself stops when the last caller of a URL cancels. After completion the token
/// holds the final response and the transfer's metrics.
public final class ImageDownloadToken: Sendable {
    /// The URL requested, without a user name or password written into it (those are the request's
    /// credentials, see `ImageDownloaderConfig.username`).
    public let url: URL
    /// The request as sent (after the request modifier).
    public let request: ImageDownloadRequest?
    let callerID: UInt64
    /// What `cancel()` reaches: the operation serving this caller, or a retry it waits for; and a priority
    /// set while the caller had no operation, which its next operation takes.
    private let target: Lock<(target: Target, pendingPriority: Operation.QueuePriority?)>

    enum Target {
        /// Served by this operation (nil once completed, or for an image-cache hit).
        case operation(ImageDownloaderOperation?)
        /// Waiting to retry: `cancel()` runs this, which ends the caller with `cancelled`.
        case waitingToRetry(cancel: @Sendable () -> Void)
        /// The retry is being queued; a cancel meanwhile is passed on once it has its operation.
        case resuming(cancelRequested: Bool)
    }
    private let details = Lock<(response: TransferResponse?, metrics: ImageDownloadMetrics?)>((nil, nil))

    init(url: URL, request: ImageDownloadRequest?, callerID: UInt64, operation: ImageDownloaderOperation?) {
        self.url = url
        self.request = request
        self.callerID = callerID
        self.target = Lock((.operation(operation), nil))
    }

    /// The final response head; set before this caller's completion runs.
    public var response: TransferResponse? { details.withLock { $0.response } }

    /// Timings and counters of the transfer; set before this caller's completion runs.
    public var metrics: ImageDownloadMetrics? { details.withLock { $0.metrics } }

    /// Cancels this caller: its completion runs once with `cancelled` (2002), unless it already completed.
    public func cancel() {
        let action = target.withLock { state -> (@Sendable () -> Void)? in
            switch state.target {
            case .operation(let operation):
                guard let operation else { return nil }
                let callerID = self.callerID
                return { operation.cancel(callerID: callerID) }
            case .waitingToRetry(let cancel):
                state.target = .operation(nil)
                return cancel
            case .resuming:
                state.target = .resuming(cancelRequested: true)
                return nil
            }
        }
        action?()
    }

    /// Changes the queue priority this caller asks for while its operation waits. While the caller waits
    /// to retry it has no operation: the priority is kept, and the operation it joins takes it.
    func setPriority(_ priority: Operation.QueuePriority) {
        let operation = target.withLock { state -> ImageDownloaderOperation? in
            if case .operation(let operation) = state.target { return operation }
            state.pendingPriority = priority
            return nil
        }
        operation?.setPriority(priority, callerID: callerID)
    }

    /// Records what the caller will see, and lets go of the operation.
    func complete(response: TransferResponse?, metrics: ImageDownloadMetrics?) {
        details.withLock { $0 = (response ?? $0.response, metrics ?? $0.metrics) }
        target.withLock { $0.target = .operation(nil) }
    }

    /// The caller waits to retry; `cancel` ends it if `cancel()` comes first.
    func waitToRetry(cancel: @escaping @Sendable () -> Void) {
        target.withLock { $0.target = .waitingToRetry(cancel: cancel) }
    }

    /// The wait is over: false when the caller was cancelled during it (it has been told).
    func beginResuming() -> Bool {
        target.withLock { state in
            guard case .waitingToRetry = state.target else { return false }
            state.target = .resuming(cancelRequested: false)
            return true
        }
    }

    /// The retry joined `operation`; a cancel, or a priority, that came while it waited or was queued is
    /// passed on now.
    func resumed(on operation: ImageDownloaderOperation?) {
        let (cancelled, priority) = target.withLock { state -> (Bool, Operation.QueuePriority?) in
            defer { state = (.operation(operation), nil) }
            if case .resuming(cancelRequested: true) = state.target { return (true, nil) }
            return (false, state.pendingPriority)
        }
        if cancelled {
            operation?.cancel(callerID: callerID)
        } else if let priority {
            operation?.setPriority(priority, callerID: callerID)
        }
    }

    func recordResponse(_ response: TransferResponse) {
        details.withLock { $0.response = response }
    }
}

extension Notification.Name {
    /// Posted (object: the operation) when a transfer starts.
    public static let imageDownloadStart = Notification.Name("WebImage.imageDownloadStart")
    /// Posted (object: the operation) for every response head, valid or not.
    public static let imageDownloadReceiveResponse = Notification.Name("WebImage.imageDownloadReceiveResponse")
    /// Posted (object: the operation) when a transfer ends: success, failure or cancel.
    public static let imageDownloadStop = Notification.Name("WebImage.imageDownloadStop")
    /// Posted (object: the operation) when a download completed successfully.
    public static let imageDownloadFinish = Notification.Name("WebImage.imageDownloadFinish")
}
