import Foundation

/// Everything the transport needs to run one HTTP transfer; built by the operation from the downloader's
/// configuration, the caller's options and the request modifier's result.
package struct TransferRequest: Sendable {
    /// The URL to fetch (already checked against `allowedProtocols`).
    package var url: URL
    /// Header fields to send. An empty value removes a header curl would add itself.
    package var headers: HTTPHeaders = HTTPHeaders()
    /// Idle timeout: the transfer fails when fewer than one byte per second arrives for this long.
    package var idleTimeout: TimeInterval = TransferRequest.defaultIdleTimeout
    /// Upper bound on the whole transfer, redirects included; 0 means none. A server that trickles bytes
    /// just fast enough to dodge the idle timeout still ends here.
    package var totalTimeout: TimeInterval = 0
    /// Upper bound on establishing the connection (TCP and TLS).
    package var connectTimeout: TimeInterval = TransferRequest.defaultIdleTimeout
    /// Redirects followed before failing with tooManyRedirects.
    package var maximumRedirects: Int = TransferRequest.defaultMaximumRedirects
    /// Schemes that may be requested and redirected to, lower-case.
    package var allowedProtocols: Set<String> = TransferRequest.defaultAllowedProtocols
    /// The body may not exceed this many bytes; the transfer is aborted as soon as it does.
    package var maximumResponseSize: Int64 = TransferRequest.defaultMaximumResponseSize
    /// Whether the TLS certificate chain and host name are verified.
    package var verifiesTLS: Bool = true
    /// A CA bundle to trust in addition to the system's, e.g. a test server's self-signed certificate.
    package var caBundlePath: String?
    /// Credentials sent only after the server's 401 challenge, never to another host after a redirect.
    package var username: String?
    /// The password for `username`.
    package var password: String?
    /// Whether the credentials may be sent over plain http (they always may over https).
    package var allowsCredentialsOverPlainHTTP = false
    /// Header fields sent to the original origin only, never after a redirect to another scheme, host or
    /// port.
    package var secretHeaderFields: SecretHeaderFields = .default
    /// Whether the shared cookie jar is read and updated.
    package var handlesCookies: Bool = false
    /// The addresses the transfer may connect to, judged at each connection.
    package var destinationPolicy: DestinationPolicy = .allowAll
    /// The URLs the transfer may fetch, judged for the first URL and every redirect hop before it is
    /// requested; nil for any.
    package var allowedURLs: URLPrefixList?
    /// Addresses resolved by the caller, used instead of the system resolver's; nil resolves as usual.
    package var hostAddresses: (any HostAddressProviding)?

    /// A request for `url` with every other field at its default.
    package init(url: URL) {
        self.url = url
    }

    /// 15 s, the downloader's `defaultDownloadTimeout`.
    package static let defaultIdleTimeout: TimeInterval = 15
    /// 10 redirects.
    package static let defaultMaximumRedirects = 10
    /// http and https.
    package static let defaultAllowedProtocols: Set<String> = ["http", "https"]
    /// 256 MB.
    package static let defaultMaximumResponseSize: Int64 = 256 * 1024 * 1024
}

/// Timings and counters of one finished transfer, read from `CURLINFO_*`.
public struct ImageDownloadMetrics: Sendable, Hashable {
    /// Seconds from start until the name was resolved.
    public var nameLookupTime: TimeInterval = 0
    /// Seconds from start until the TCP connection was made.
    public var connectTime: TimeInterval = 0
    /// Seconds from start until the TLS handshake finished (0 for cleartext).
    public var tlsHandshakeTime: TimeInterval = 0
    /// Seconds from start until the first response byte arrived.
    public var firstByteTime: TimeInterval = 0
    /// Seconds the whole transfer took, redirects included.
    public var totalTime: TimeInterval = 0
    /// How many redirects were followed.
    public var redirectCount: Int = 0
    /// Body bytes received (after content decoding).
    public var bytesReceived: Int64 = 0
    /// Where the body came from: the network, a fresh cache entry, or a cache entry revalidated by a 304.
    public var cacheStatus: ImageDownloadCacheStatus = .network
    /// The HTTP version of the final response: "1.0", "1.1", "2" or "3".
    public var httpVersion: String = ""
    /// New connections this transfer had to open (0 when it reused one).
    public var newConnections: Int = 0
    /// The attempts the caller's download made (`config.retryPolicy`), 1 without a retry.
    public var attempts: Int = 1

    /// Creates empty metrics.
    public init() {}
}

/// Where a download's bytes came from.
public enum ImageDownloadCacheStatus: String, Sendable, Hashable {
    /// Downloaded.
    case network
    /// A fresh entry of the HTTP cache; no request was sent.
    case fresh
    /// A stored entry the server confirmed with `304 Not Modified`.
    case revalidated
    /// The decoded-image cache; nothing was downloaded or decoded.
    case imageCache
    /// The processed-image cache (`config.processedImageCache`): the encoded bytes, with no image;
    /// nothing was downloaded, decoded or encoded.
    case processedImageCache
}

/// Receives the events of one transfer. Every method runs on the transport thread and must be cheap:
/// append bytes, record state, hand heavier work to another queue.
package protocol TransferDelegate: AnyObject, Sendable {
    /// The transport thread took the transfer into its multi handle: the request is on its way.
    func transferDidStart()
    /// The head of the final response arrived (after redirects and authentication round trips).
    /// Returning an error aborts the transfer: `transferDidComplete` then reports `.aborted` with that
    /// error as its `reason`.
    func transferDidReceiveResponse(_ response: TransferResponse) -> (any Error)?
    /// Body bytes arrived. `totalReceived` counts every body byte so far, including these.
    /// Returning an error aborts the transfer, as for `transferDidReceiveResponse`.
    func transferDidReceiveData(_ bytes: UnsafeRawBufferPointer, totalReceived: Int64) -> (any Error)?
    /// The transfer ended. Exactly once per started transfer, cancellation included.
    func transferDidComplete(_ result: Result<ImageDownloadMetrics, TransportError>)
}

extension TransferDelegate {
    package func transferDidStart() {}
}
