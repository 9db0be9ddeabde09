import Foundation
import WebImage

/// How a bulk run's downloader connects: ``BulkSettings/download``, turned into an ``ImageDownloaderConfig``
/// by ``BulkSettings/downloaderConfig()``, which ``BulkEngine/init(input:plan:assigned:directory:settings:columns:maxLineBytes:publisher:)``
/// uses. The defaults are `webimage bulk`'s: a URL list comes from someone else, so only public addresses
/// are connected to, and no cookie set by one row's host is sent with another row.
public struct BulkDownloadSettings: Sendable {
    /// Downloads at once per host; a row waiting for its host's turn holds no connection. 8 by default.
    public var maximumConnectionsPerHost = 8
    /// Retries of a timeout, a lost connection, a 5xx or a 429 (honouring `Retry-After` up to 300 s), 1, 2,
    /// 4 … s apart (jittered), at most 60 s; 0 by default.
    public var retries = 0
    /// Seconds a whole download may take, redirects included; 30 by default.
    public var timeout: TimeInterval = 30
    /// Seconds a download may receive nothing (connecting included) before it fails, at most ``timeout``;
    /// 15 by default.
    public var stallTimeout: TimeInterval = 15
    /// The `User-Agent` sent; ``defaultUserAgent`` by default.
    public var userAgent = Self.defaultUserAgent
    /// The addresses connected to, on every redirect; `.publicOnly` by default (a loopback, private,
    /// link-local or reserved address fails its row with `destinationNotAllowed`, and nothing is sent).
    public var destinationPolicy: DestinationPolicy = .publicOnly
    /// Whether any TLS certificate and host name are accepted (`.allowInvalidSSLCertificates` on every
    /// download, img2dataset's `ignore_ssl_certificate`); `false` by default.
    public var acceptsAnyCertificate = false

    /// Host names resolved at once by the run's own DNS stage (``BulkHostResolver``), before each row's
    /// download; nil (the default) leaves resolution to curl, unless ``resolver`` is set (then 32).
    public var dnsConcurrency: Int?
    /// The DNS server the stage asks (`ADDRESS`, `ADDRESS:PORT` or `[IPV6]:PORT`, port 53 by default)
    /// instead of the system resolver: every host, a redirect's included, is resolved there. nil by default.
    public var resolver: String?

    /// The DNS stage these settings ask for; nil without one. A ``resolver`` that is not a numeric address
    /// and port is refused (``BulkJob`` checks it before a run).
    func makeHostResolver() -> BulkHostResolver? {
        guard dnsConcurrency != nil || resolver != nil else { return nil }
        return BulkHostResolver(concurrency: dnsConcurrency ?? 32, client: resolver.flatMap { DNSClient(server: $0) })
    }

    /// `webimage-bulk/VERSION (image dataset builder; …)`: a crawler should name its project and a
    /// contact, so the default asks for that.
    public static let defaultUserAgent =
        "webimage-bulk/\(LibraryVersions.webImage) (image dataset builder; set --user-agent to name yourself)"

    /// The defaults, as each property gives them.
    public init() {}
}

extension BulkSettings {
    /// The downloader's configuration these settings describe: ``download``'s destination policy, timeouts,
    /// retries and `User-Agent`, ``concurrency`` connections and ``BulkDownloadSettings/maximumConnectionsPerHost``
    /// per host, and no cookie store.
    public func downloaderConfig() -> ImageDownloaderConfig {
        var config = ImageDownloaderConfig()
        config.destinationPolicy = download.destinationPolicy
        // curl bounds the connections, all hosts together and per host; a row waiting for its host's
        // connection waits inside the transport, so the queue is wider than `concurrency` (see
        // `rowsUnderWay`) and another host's rows start beside it.
        config.maxConcurrentDownloads = rowsUnderWay
        config.maximumTotalConnections = concurrency
        config.maximumConnectionsPerHost = download.maximumConnectionsPerHost
        config.retryPolicy = RetryPolicy(
            maximumAttempts: download.retries + 1, baseDelay: 1, maximumDelay: 60, maximumRetryAfter: 300)
        config.totalTimeout = download.timeout
        config.downloadTimeout = min(download.timeout, download.stallTimeout)
        config.headers["User-Agent"] = download.userAgent
        // One jar for every row would send a cookie one host set to every later row of that host, across
        // shards and users' URLs; an image dataset needs none.
        config.cookieStorage = nil
        return config
    }
}
