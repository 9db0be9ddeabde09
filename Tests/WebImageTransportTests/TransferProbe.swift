import Foundation
import Locking

@testable import WebImageTransport

/// Records what a transfer reports, and waits (bounded) for its completion.
final class TransferProbe: TransferDelegate {
    struct Record {
        var response: TransferResponse?
        var body = Data()
        var result: Result<ImageDownloadMetrics, TransportError>?
        var completions = 0
    }

    let record = Lock(Record())
    private let done = DispatchSemaphore(value: 0)
    let verdict: @Sendable (TransferResponse) -> (any Error)?

    init(verdict: @escaping @Sendable (TransferResponse) -> (any Error)? = { _ in nil }) {
        self.verdict = verdict
    }

    func transferDidReceiveResponse(_ response: TransferResponse) -> (any Error)? {
        record.withLock { $0.response = response }
        return verdict(response)
    }

    func transferDidReceiveData(_ bytes: UnsafeRawBufferPointer, totalReceived: Int64) -> (any Error)? {
        record.withLock { $0.body.append(bytes.bindMemory(to: UInt8.self)) }
        return nil
    }

    /// Keeps the transport's own error; how the downloader turns each kind into the code users see is
    /// LayerBoundaryTests' (WebImageTests).
    func transferDidComplete(_ result: Result<ImageDownloadMetrics, TransportError>) {
        record.withLock {
            $0.result = result
            $0.completions += 1
        }
        done.signal()
    }

    /// Waits up to `seconds` for completion; false on timeout.
    func wait(seconds: Double = 20) -> Bool {
        done.wait(timeout: .now() + seconds) == .success
    }

    var response: TransferResponse? { record.withLock { $0.response } }
    var body: Data { record.withLock { $0.body } }
    var metrics: ImageDownloadMetrics? { if case .success(let m)? = record.withLock({ $0.result }) { m } else { nil } }
    var error: TransportError? { if case .failure(let e)? = record.withLock({ $0.result }) { e } else { nil } }
}

extension CurlTransport {
    /// Runs one transfer to completion and returns its probe.
    func run(
        _ request: TransferRequest,
        verdict: @escaping @Sendable (TransferResponse) -> (any Error)? = { _ in nil }
    )
        throws -> TransferProbe
    {
        let probe = TransferProbe(verdict: verdict)
        start(try makeTransfer(request, delegate: probe))
        _ = probe.wait()
        return probe
    }
}
