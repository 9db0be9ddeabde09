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
    private let operationReference: Lock<ImageDownloaderOperation?>
    private let details = Lock<(response: ImageDownloadResponse?, metrics: ImageDownloadMetrics?)>((nil, nil))

    init(url: URL, request: ImageDownloadRequest?, callerID: UInt64, operation: ImageDownloaderOperation?) {
        self.url = url
        self.request = request
        self.callerID = callerID
        self.operationReference = Lock(operation)
    }

    /// The final response head; set before this caller's completion runs.
    public var response: ImageDownloadResponse? { details.withLock { $0.response } }

    /// Timings and counters of the transfer; set before this caller's completion runs.
    public var metrics: ImageDownloadMetrics? { details.withLock { $0.metrics } }

    /// Cancels this caller: its completion runs once with `cancelled` (2002), unless it already completed.
    public func cancel() {
        let operation = operationReference.withLock { $0 }
        operation?.cancel(callerID: callerID)
    }

    /// Changes the queue priority this caller asks for while its operation waits.
    func setPriority(_ priority: Operation.QueuePriority) {
        let operation = operationReference.withLock { $0 }
        operation?.setPriority(priority, callerID: callerID)
    }

    /// Records what the caller will see, and lets go of the operation.
    func complete(response: ImageDownloadResponse?, metrics: ImageDownloadMetrics?) {
        details.withLock { $0 = (response ?? $0.response, metrics ?? $0.metrics) }
        operationReference.withLock { $0 = nil }
    }

    func recordResponse(_ response: ImageDownloadResponse) {
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
