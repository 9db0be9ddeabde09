import CoreMetrics
import Dispatch
import Foundation
import Logging

/// How an `ImageDownloader` behaves. The downloader copies it at init; later changes to your copy
/// do not reach it (only `maxConcurrentDownloads`, `isSuspended` and the headers are live on the downloader).
///
/// ```swift
/// var config = ImageDownloaderConfig.default
/// config.maxConcurrentDownloads = 4
/// config.executionOrder = .lifo
/// let downloader = ImageDownloader(config: config)
/// ```
public struct ImageDownloaderConfig: Sendable {
    /// SDWebImage 5.x's defaults, with the Linux choices of the README.
    public static var `default`: ImageDownloaderConfig { ImageDownloaderConfig() }

    // MARK: Queue

    /// Downloads running at once. `6` by default.
    public var maxConcurrentDownloads: Int = 6
    /// Which waiting download starts next. `.fifo` by default.
    public var executionOrder: ImageDownloaderExecutionOrder = .fifo
    /// The subclass of `ImageDownloaderOperation` to instantiate. `ImageDownloaderOperation` by default.
    public var operationClass: ImageDownloaderOperation.Type = ImageDownloaderOperation.self
    /// The most downloads of one host (scheme, name and port of the URL) this downloader's transport runs
    /// at once; curl gets it as `CURLMOPT_MAX_HOST_CONNECTIONS` too, which also bounds what a redirect to
    /// another host opens. 0 means no limit. `0` by default.
    ///
    /// A download past it waits in the transport, outside curl, in arrival order, until one of that host's
    /// downloads ends; other hosts' downloads pass it. The wait is not timed: `downloadTimeout` and
    /// `totalTimeout` start when the download gets its turn (curl would count it against
    /// `CURLOPT_TIMEOUT`). It does keep its `maxConcurrentDownloads` slot, so with many downloads of one
    /// slow host give the queue more room than the connections (`maximumTotalConnections`), as `webimage
    /// bulk` does. Over HTTP/1.1 each running download has a connection of its own; over HTTP/2 they may
    /// share one.
    public var maximumConnectionsPerHost: Int = 0
    /// The most downloads this downloader's transport runs at once, all hosts together; curl gets it as
    /// `CURLMOPT_MAX_TOTAL_CONNECTIONS` too. A download past it waits as with `maximumConnectionsPerHost`.
    /// 0 means no limit (the queue's `maxConcurrentDownloads` still bounds them). `0` by default.
    public var maximumTotalConnections: Int = 0
    /// Where completions and notifications run. nil (the default) means a private serial queue per
    /// downloader — not `.main`, since a Linux process often runs no main loop.
    public var callbackQueue: DispatchQueue?

    // MARK: Transfer

    /// Idle timeout in seconds: a download fails with `timedOut` when no byte arrives for this long;
    /// also bounds connecting. `15` by default; 0 or less means 15.
    public var downloadTimeout: TimeInterval = Self.defaultDownloadTimeout
    /// The default `downloadTimeout`, also used when it is 0 or less.
    public static let defaultDownloadTimeout: TimeInterval = TransferRequest.defaultIdleTimeout
    /// Upper bound in seconds on a whole transfer, redirects included: a download fails with `timedOut`
    /// when it has not finished by then, however steadily bytes arrive (a server trickling one byte every
    /// half second never trips the idle timeout). Every redirect hop gets only what the earlier ones left.
    /// `60` by default; 0 or less means no total limit.
    public var totalTimeout: TimeInterval = 60
    /// When a failed download is tried again: timeouts, lost connections, 5xx and 429, with exponential
    /// backoff and jitter, honouring `Retry-After` (see `RetryPolicy`). A download waiting to retry holds
    /// no `maxConcurrentDownloads` slot, and each caller still gets one terminal callback. `.none` (one
    /// attempt) by default.
    public var retryPolicy: RetryPolicy = .none
    /// Minimum seconds between progress callbacks (and progressive decodes) when the length is known,
    /// clamped to 0…1. `0` by default (every chunk).
    public var minimumProgressInterval: TimeInterval = 0
    /// Header fields sent with every request. `Accept` (the formats the built-in decoders read, newest
    /// first, so a CDN that negotiates sends AVIF or JPEG XL) and `User-Agent` by default.
    public var headers: HTTPHeaders = [
        "Accept": "image/avif,image/jxl,image/webp,image/*,*/*;q=0.8",
        "User-Agent": "WebImage/\(LibraryVersions.webImage) libcurl/\(LibraryVersions.curl)",
    ]
    /// Sent after a 401 challenge only (any scheme curl supports), to the request's own origin only: never
    /// after a redirect to another scheme, host or port (an https→http downgrade included), and over plain
    /// http only with `allowsCredentialsOverPlainHTTP`. Credentials written into a request's URL
    /// (`https://user:password@host/`) replace these for that request, under the same rules; the URL is
    /// sent, cached, logged and reported without them. nil by default.
    public var username: String?
    /// The password for `username`.
    public var password: String?
    /// Whether `username` and `password` may be sent over plain http, where anyone on the path reads
    /// them (Basic) or can replay them. `false` by default: over http the server's 401 then fails the
    /// download with `invalidDownloadStatusCode`, and the message names this setting.
    public var allowsCredentialsOverPlainHTTP = false
    /// Header fields that carry a secret. They go only to the request's own origin: a redirect to another
    /// scheme, host or port drops them (curl itself would forward every custom field). And a request that
    /// sends one neither reads nor writes the HTTP cache, which every downloader and process of the user
    /// shares. An entry is a field name or a pattern with `*` at either end (`*token*`: any name containing
    /// `token`); both compare case-insensitively. By default `Authorization`, `Proxy-Authorization`,
    /// `Cookie`, `X-Api-Key`, `X-Auth-Token`, `X-Amz-Security-Token`, `X-Goog-Api-Key` and any field whose
    /// name contains `token`, `secret`, `api-key` or `session`; add any field of yours that carries a secret.
    public var secretHeaderFields: Set<String> = ImageDownloaderConfig.defaultSecretHeaderFields
    /// The default `secretHeaderFields` (lowercased).
    public static let defaultSecretHeaderFields = SecretHeaderFields.defaultEntries
    /// Redirects followed before `tooManyRedirects`. `10` by default.
    public var maximumRedirects: Int = Self.defaultMaximumRedirects
    static let defaultMaximumRedirects = TransferRequest.defaultMaximumRedirects
    /// Schemes a request may use; redirects are only ever followed to http and https.
    /// `["http", "https"]` by default; add `"file"` to read local files.
    public var allowedProtocols: Set<String> = Self.defaultAllowedProtocols
    static let defaultAllowedProtocols = TransferRequest.defaultAllowedProtocols
    /// Bodies larger than this fail with `responseTooLarge`, and nothing is buffered past it. 256 MB by default.
    public var maximumResponseSize: Int64 = Self.defaultMaximumResponseSize
    static let defaultMaximumResponseSize = TransferRequest.defaultMaximumResponseSize
    /// The most response-body bytes this downloader's downloads may hold together, from each body's first
    /// byte until it was decoded and handed out (or dropped). `maximumResponseSize` bounds one body; this
    /// bounds them all, so that many compressed bodies expanding to just under that size cannot add up to
    /// gigabytes. A download whose next bytes would pass it fails with `inFlightBodyLimit` (it does not wait
    /// for room; a retry policy retries it); one whose body alone is larger fails with `responseTooLarge`. A redirect's body is never kept: at most 64 KB of
    /// it is read, then the redirect is followed. 1 GiB by default.
    public var maximumInFlightBodyBytes: Int64 = 1 << 30
    /// A PEM bundle of extra CA certificates to trust (e.g. a private CA). nil by default.
    public var caBundlePath: String?
    /// The addresses this downloader may connect to, judged at each connection (every redirect hop and
    /// every address a name resolves to): a refused one fails the download with `destinationNotAllowed`
    /// and nothing is sent. Use `.publicOnly` for URLs that come from someone else. With any policy that
    /// does not allow everything, requests neither read nor write the HTTP cache: every downloader and
    /// process of the user shares it, and an answer a looser downloader stored (from `127.0.0.1`, say)
    /// would otherwise be served without a connection to judge. A decoded-image cache shared with a looser
    /// downloader serves its images too: give a stricter downloader its own. `.allowAll` (SDWebImage's
    /// behaviour) by default.
    public var destinationPolicy: DestinationPolicy = .allowAll
    /// The URLs this downloader may fetch (an image proxy's allowed sources): the first URL and every
    /// redirect's are matched on their parsed scheme, host, port and path (see `URLPrefixList`) before
    /// anything is sent, and one outside fails the download with `destinationNotAllowed`. As with a
    /// `destinationPolicy` that refuses addresses, requests then stay out of shared caches. nil (any URL)
    /// by default.
    public var allowedURLPrefixes: URLPrefixList?

    /// The HTTP cache used by requests with `.useURLCache`. nil (the default) means `HTTPCache.shared`,
    /// opened on first use. Requests without the flag never read it, write it or send validators.
    public var urlCache: (any HTTPCaching)?
    /// Set when `urlCache` is this downloader's alone: no other downloader or process reads or writes it.
    /// Every answer in it then came through this configuration's `destinationPolicy`, so requests may use it
    /// under a policy that refuses addresses too (without it they never do: a shared cache could serve an
    /// answer that a looser downloader fetched from a private address). `webimage serve` gives its source
    /// downloads such a cache. Never set it for `HTTPCache.shared` or a cache another downloader uses.
    /// `false` by default.
    public var urlCacheIsPrivate = false
    /// Decoded images, consulted before the network and filled after each successful decode, keyed by URL
    /// and decode options. nil (the default) disables it. A hit completes with the image and nil data.
    public var imageCache: (any ImageCaching)?
    /// Encoded images of requests whose context names an `encoder`, keyed by URL, transformer, encoder and
    /// decode options (`ImageDownloadContext.encoder` tells how it is used): `ImageDiskCache()` keeps them
    /// on disk for every process of the user. Requests that may not use shared caches (credentials,
    /// cookies, TLS checks off, a secret header field, a restricting destination policy) neither read nor
    /// write it (unless `processedImageCacheIsPrivate`: then the destination policy does not keep them
    /// out). It is read when the download's operation starts, on the operation queue (a hit needs no
    /// transfer), and written by the encode job on the processing stage before its callers are served,
    /// never on the thread that calls `downloadImage`. nil (the default) disables it.
    public var processedImageCache: (any ProcessedImageCaching)?
    /// Set when `processedImageCache` is this downloader's alone, as `urlCacheIsPrivate` is for the HTTP
    /// cache: every entry in it was made from bytes this configuration's `destinationPolicy` and
    /// `allowedURLPrefixes` let through, so requests under a policy that refuses addresses use it too
    /// (credentials, cookies, TLS checks off and secret header fields still keep a request out). `webimage
    /// serve` keeps its results this way (`ImageProxyConfiguration.resultCache`). Never set it for a cache
    /// another downloader or process writes. `false` by default.
    public var processedImageCacheIsPrivate = false
    /// The cookie jar used by requests with `.handleCookies`. `CookieJar.shared` by default; nil gives
    /// this downloader a private in-memory jar.
    public var cookieStorage: CookieJar? = .shared

    // MARK: Validation

    /// Statuses that count as success; others fail with `invalidDownloadStatusCode` (2001). nil disables
    /// the check. `200..<400` by default.
    public var acceptableStatusCodes: Set<Int>? = Set(200..<400)
    /// MIME types that count as success (e.g. `["image/png"]`; `"image/*"` matches a whole family); others
    /// fail with `invalidDownloadContentType` (2004). nil (the default) disables the check.
    public var acceptableContentTypes: Set<String>?

    // MARK: Plug-ins

    /// Changes each request before it is sent. nil by default.
    public var requestModifier: (any ImageDownloaderRequestModifying)?
    /// Changes each response head before validation. nil by default.
    public var responseModifier: (any ImageDownloaderResponseModifying)?
    /// Transforms downloaded bytes before decoding. nil by default.
    public var decryptor: (any ImageDownloaderDecrypting)?

    // MARK: Observability

    /// Where the downloader logs (swift-log): a transfer that failed at `.debug`; each transfer's start and
    /// end and each caller's outcome at `.trace`; a cookie jar it could not save at `.warning`. A logger
    /// labelled `WebImage` from the process's `LoggingSystem` by default. The HTTP cache logs through its
    /// own (`HTTPCache(logger:)`).
    public var logger = Logger(label: "WebImage")
    /// Where the downloader's metrics go (swift-metrics): downloads by result, errors by code, cache
    /// hits, bytes received and a download-duration timer (the labels are listed on `DownloadInstruments`
    /// in the source and in the README). nil (the default) means the factory the process bootstrapped with
    /// `MetricsSystem.bootstrap`, as it is when the downloader is created (no-op when none was).
    public var metricsFactory: (any MetricsFactory)?

    /// Addresses resolved by the caller's own DNS stage, connected to instead of asking the system
    /// resolver; the destination policy still judges them. nil (the default) resolves as curl does. Shared
    /// by every request of this downloader, so no caller's answers reach another downloader's requests.
    public var hostAddresses: (any HostAddressProviding)?

    // MARK: Decoding

    /// The decoders tried on every body, newest registration first. `ImageDecoderRegistry.shared` by
    /// default (the built-in formats plus whatever the process registered); give a downloader its own
    /// registry to decode with a different set.
    public var decoderRegistry: ImageDecoderRegistry = .shared
    /// With `scaleDownLargeImages`, the most pixel bytes (RGBA8) a decoded image may take. 60 MB by default.
    public var scaleDownLimitBytes: Int = ImageDecodingOptions.defaultScaleDownLimitBytes
    /// Images whose header declares more pixels than this are refused (or scaled down when asked to),
    /// never allocated at full size. 16,384 × 16,384 by default.
    public var maximumImagePixels: Int = ImageDecodingOptions.defaultMaximumImagePixels
    /// The most pixel memory (bytes of decoded bitmaps, animation canvases included) this downloader's
    /// decodes may hold at the same time. A decode claims what the file declares before it allocates; when
    /// the claim does not fit it waits for earlier decodes to finish (up to 30 s), and one that can never
    /// fit fails with `badImageData`. See `DecodeMemoryBudget`. 1 GiB by default.
    public var maximumDecodeMemory: Int = 1 << 30
    /// The most frames of an animation a decode keeps (`ImageDecodingOptions.maximumAnimationFrames`);
    /// `Image.frameCount` still tells how many the file holds. 10,000 by default.
    public var maximumAnimationFrames: Int = ImageDecodingOptions.defaultMaximumAnimationFrames
    /// ICC profiles larger than this are ignored, with a warning logged: the pixels stay as stored
    /// (`ImageDecodingOptions.maximumColorProfileBytes`). 4 MiB by default.
    public var maximumColorProfileBytes: Int = ImageDecodingOptions.defaultMaximumColorProfileBytes
    /// How many complete bodies this downloader decodes at once, across all its downloads (the decode
    /// stage). A body is decoded once for each distinct set of decode options its callers ask for, and
    /// those decodes run side by side too. Values below 1 count as 1. The number of active processor cores
    /// by default.
    public var maximumConcurrentDecodes: Int = ProcessInfo.processInfo.activeProcessorCount
    /// How many transforms and encodes this downloader runs at once, across all its downloads (the
    /// processing stage). Each distinct output of a body (transformer, then encoder) is a job of its own,
    /// so callers of one URL asking for different outputs (an image proxy's sizes of one source) are made
    /// on that many cores at once, while callers asking for the same output share one job. Values below 1
    /// count as 1. The number of active processor cores by default.
    public var maximumConcurrentProcessing: Int = ProcessInfo.processInfo.activeProcessorCount

    /// Creates the default configuration.
    public init() {}
}
