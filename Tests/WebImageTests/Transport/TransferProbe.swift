import Foundation
import Locking

@testable import WebImage
@testable import WebImageTransport

/// Records what a transfer reports, and waits (bounded) for its completion.
final class TransferProbe: TransferDelegate {
    struct Record {
        var response: ImageDownloadResponse?
        var body = Data()
        var result: Result<ImageDownloadMetrics, ImageDownloaderError>?
        var completions = 0
    }

    let record = Lock(Record())
    private let done = DispatchSemaphore(value: 0)
    let verdict: @Sendable (ImageDownloadResponse) -> ImageDownloaderError?

    init(verdict: @escaping @Sendable (ImageDownloadResponse) -> ImageDownloaderError? = { _ in nil }) {
        self.verdict = verdict
    }

    func transferDidReceiveResponse(_ response: ImageDownloadResponse) -> (any Error)? {
        record.withLock { $0.response = response }
        return verdict(response)
    }

    func transferDidReceiveData(_ bytes: UnsafeRawBufferPointer, totalReceived: Int64) -> (any Error)? {
        record.withLock { $0.body.append(bytes.bindMemory(to: UInt8.self)) }
        return nil
    }

    /// Keeps the result as the downloader would report it (`ImageDownloaderError(transportError:)`), so the
    /// transport's tests read the codes users see.
    func transferDidComplete(_ result: Result<ImageDownloadMetrics, TransportError>) {
        record.withLock {
            $0.result = result.mapError { ImageDownloaderError(transportError: $0) }
            $0.completions += 1
        }
        done.signal()
    }

    /// Waits up to `seconds` for completion; false on timeout.
    func wait(seconds: Double = 20) -> Bool {
        done.wait(timeout: .now() + seconds) == .success
    }

    var response: ImageDownloadResponse? { record.withLock { $0.response } }
    var body: Data { record.withLock { $0.body } }
    var metrics: ImageDownloadMetrics? { if case .success(let m)? = record.withLock({ $0.result }) { m } else { nil } }
    var error: ImageDownloaderError? { if case .failure(let e)? = record.withLock({ $0.result }) { e } else { nil } }
}

extension CurlTransport {
    /// Runs one transfer to completion and returns its probe.
    func run(
        _ request: TransferRequest,
        verdict: @escaping @Sendable (ImageDownloadResponse) -> ImageDownloaderError? = { _ in nil }
    )
        throws -> TransferProbe
    {
        let probe = TransferProbe(verdict: verdict)
        start(try makeTransfer(request, delegate: probe))
        _ = probe.wait()
        return probe
    }
}
