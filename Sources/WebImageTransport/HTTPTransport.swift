import Foundation

/// A transfer made by an `HTTPTransport`: opaque to the operation, which only hands it back to the
/// transport that made it (to start or cancel it).
package protocol TransportTransfer: AnyObject, Sendable {}

/// What runs the HTTP transfers of one downloader: `CurlTransport` (libcurl on one thread) in the
/// library, a scripted in-memory transport in the tests of coalescing, ordering and cancellation.
///
/// The contract every implementation keeps, and the operation relies on:
/// - `makeTransfer` configures a transfer (errors are the request's, e.g. a bad option) and does not
///   send anything; a transfer that is never started is simply released.
/// - After `start`, the delegate hears `transferDidStart`, then at most one `transferDidReceiveResponse`
///   (returning an error aborts the transfer), any number of `transferDidReceiveData`, and exactly one
///   `transferDidComplete`. The events of one transfer never overlap (one thread at a time, in order).
/// - `cancel` may come from any thread, at any time, even before `start` has been processed; the
///   transfer then completes with `cancelled` unless it already completed. Cancelling twice is harmless.
/// - After `shutdown`, running transfers complete with `cancelled`, and later `start`s do so at once.
package protocol HTTPTransport: AnyObject, Sendable {
    /// Makes a configured transfer for `request` that reports to `delegate`.
    func makeTransfer(_ request: TransferRequest, delegate: any TransferDelegate) throws(TransportError)
        -> any TransportTransfer
    /// Runs a transfer this transport made.
    func start(_ transfer: any TransportTransfer)
    /// Stops a transfer this transport made (see the contract above).
    func cancel(_ transfer: any TransportTransfer)
    /// Cancels every transfer and stops; idempotent.
    func shutdown()
    /// Blocks until the transport has stopped after `shutdown()`, or `timeout` seconds passed; true when
    /// it stopped.
    func waitUntilStopped(timeout: Double) -> Bool
    /// Whether the transport has stopped after `shutdown()`.
    var isStopped: Bool { get }
    /// Runs `body` once the transport has stopped after `shutdown()` (at once, on some thread, when it
    /// already has), blocking no thread meanwhile.
    func whenStopped(_ body: @escaping @Sendable () -> Void)
}
