import Foundation
import WebImageTransport

/// WebImage's transport without the downloader, for the benchmark harness's "transport alone" client
/// (the transport's throughput check). `@_spi(Benchmarks)`: not part of the public API.
@_spi(Benchmarks) public final class TransportBenchmarkClient: Sendable {
    private let transport: CurlTransport

    /// Starts a transport thread with at most `maxConnectionsPerHost` connections per host.
    public init(maxConnectionsPerHost: Int) throws(ImageDownloaderError) {
        do {
            transport = try CurlTransport(maxConnectionsPerHost: maxConnectionsPerHost)
        } catch {
            throw ImageDownloaderError(transportError: error)
        }
    }

    /// Fetches `url` with default transfer settings, stores the body as the downloader does (a
    /// `ResponseBody` sized from Content-Length, appended on the transport thread) and reports its size.
    public func fetch(_ url: URL, completion: @escaping @Sendable (Result<Int, ImageDownloaderError>) -> Void) {
        let sink = BodySink(completion: completion)
        do {
            transport.start(try transport.makeTransfer(TransferRequest(url: url), delegate: sink))
        } catch {
            completion(.failure(ImageDownloaderError(transportError: error)))
        }
    }

    /// Stops the transport thread.
    public func shutdown() { transport.shutdown() }
}

/// Collects one body for `benchmarkFetch`. Touched only on the transport thread after submission.
private final class BodySink: TransferDelegate, @unchecked Sendable {
    // @unchecked Sendable: `body` is used only on the transport thread (see CurlTransfer's life cycle).
    private let body = ResponseBody()
    private let completion: @Sendable (Result<Int, ImageDownloaderError>) -> Void

    init(completion: @escaping @Sendable (Result<Int, ImageDownloaderError>) -> Void) {
        self.completion = completion
    }

    func transferDidReceiveResponse(_ response: TransferResponse) -> (any Error)? {
        if response.expectedContentLength > 0 { body.reserve(Int(response.expectedContentLength)) }
        return (200..<300).contains(response.statusCode)
            ? nil : ImageDownloaderError(.invalidDownloadStatusCode, "status \(response.statusCode)")
    }

    func transferDidReceiveData(_ bytes: UnsafeRawBufferPointer, totalReceived: Int64) -> (any Error)? {
        body.append(bytes)
        return nil
    }

    func transferDidComplete(_ result: Result<ImageDownloadMetrics, TransportError>) {
        completion(result.map { _ in body.take().count }.mapError { ImageDownloaderError(transportError: $0) })
    }
}
