import Foundation
import WebImage
import WebImageObjectStore

/// What an `ImageProxy` accepts and how far it goes for one request. The safe choices are the defaults:
/// signatures required, private and loopback sources refused, sources and results bounded.
///
/// ```swift
/// var configuration = ImageProxyConfiguration()
/// configuration.signingKeys = [SigningKey(hexKey: key, hexSalt: salt)].compactMap { $0 }
/// configuration.allowedSources = ["https://images.example.com/"]
/// ```
public struct ImageProxyConfiguration: Sendable {
    // MARK: Signatures

    /// The key and salt pairs a signature may be made with (several while keys rotate). Empty by default.
    public var signingKeys: [SigningKey] = []
    /// Whether `insecure` in the signature segment is accepted instead of a signature: for local
    /// development only. `false` by default.
    public var allowsUnsigned = false
    /// How many bytes of the HMAC a signature carries, 1…32 (imgproxy's `IMGPROXY_SIGNATURE_SIZE`): a URL's
    /// signature is the first this many bytes, Base64 encoded. 32, the whole HMAC, by default.
    public var signatureSize = 32
    /// A secret every image request must carry as `Authorization: Bearer SECRET` (imgproxy's
    /// `IMGPROXY_SECRET`), for a proxy only a CDN or a gateway should reach; a request without it is
    /// answered 403. The health and metrics paths do not ask for it. nil (no secret) by default.
    public var secret: String?

    // MARK: Sources

    /// Put before every source URL that does not already start with it (imgproxy's `IMGPROXY_BASE_URL`),
    /// before `allowedSources` is checked. Empty by default.
    public var baseURL = ""
    /// URL prefixes a source must start with (imgproxy's `ALLOWED_SOURCES`); a source matching none is
    /// refused with 403, and so is a redirect from an allowed source to a URL matching none. Matched on the
    /// parsed URL, not its text (`URLPrefixList`): scheme, host (`*.example.com` for its subdomains), port
    /// and path on segment boundaries, after `..` is resolved; a source with a user name or password never
    /// matches. A prefix that does not parse matches nothing (`webimage serve` refuses to start with one).
    /// Empty (every source) by default.
    public var allowedSources: [String] = []
    /// Networks (CIDR) the proxy may fetch from besides public addresses; everything private, loopback
    /// and link-local is refused otherwise (`DestinationPolicy.publicOnly`). Empty by default.
    public var allowedDestinations: [String] = []
    /// The directory `local:///path` sources are read from (imgproxy's `IMGPROXY_LOCAL_FILESYSTEM_ROOT`);
    /// nil (no local sources: they are answered 400) by default. A path is resolved inside it and never
    /// leaves it, by `..`, a symbolic link or percent-encoding (see `LocalFileSource`): 403 when it tries.
    /// It must be an existing directory other than `/`; `webimage serve` refuses to start otherwise.
    public var localFilesystemRoot: String?
    /// The object store `s3://bucket/key` sources are read from (imgproxy's `IMGPROXY_USE_S3`, with the
    /// standard `AWS_*` variables: `S3Configuration.fromEnvironment`); nil (no S3 sources: they are
    /// answered 400) by default. Each read is a GET presigned as it is sent (`S3Presigner`), to the
    /// configured endpoint only, path-style there, whatever its address; the bucket must be a valid S3
    /// bucket name and the key must have no `.` or `..` segment (400).
    public var s3: S3Configuration?
    /// The largest source body in bytes (`ImageDownloaderConfig.maximumResponseSize`). 32 MiB by default.
    public var maximumSourceBytes: Int64 = 32 << 20
    /// The most pixels a source may declare (`ImageDownloaderConfig.maximumImagePixels`); for a result that
    /// keeps an animation, the pixels of all its frames together, as imgproxy counts them (more is answered
    /// 422). 16.8 million (imgproxy's default) by default.
    public var maximumSourcePixels = 16_800_000
    /// The most frames an animated source may have (more is answered 422). WebP, GIF and JPEG XL results
    /// keep every frame; the other formats use the first. 256 by default.
    public var maximumAnimationFrames = 256
    /// Whether a WebP, GIF or JPEG XL result keeps an animated source's frames; when `false` every result is
    /// the source's first frame, as imgproxy makes it with `IMGPROXY_MAX_ANIMATION_FRAMES=1` (its default).
    /// `true` by default.
    public var keepsAnimations = true
    /// Whether a URL may set its own limits with imgproxy's security options (`msr`, `msfs`, `maf`, `mafr`,
    /// `mrd`; imgproxy's `IMGPROXY_ALLOW_SECURITY_OPTIONS`); a URL using one is answered 403 otherwise. They
    /// only ever lower the limits above (`LimitOptions`). `false` by default, as in imgproxy.
    public var allowsSecurityOptions = false

    // MARK: Fallback

    /// The image answered, processed with the request's options, when the source cannot be fetched
    /// (imgproxy's `IMGPROXY_FALLBACK_IMAGE_PATH` / `_DATA`): not found, refused, unreachable or too slow,
    /// never when the URL is refused, the server is busy or the source is not an image it can process.
    /// Answered with `fallbackImageStatus`, `Cache-Control` of `fallbackImageTTL`, `Fallback-Image: 1` and
    /// no ETag, and never stored in the result cache. nil (the source's error is answered) by default.
    public var fallbackImage: Data?
    /// The status of a fallback answer; 0 for the source error's own status. 200 by default, as imgproxy's.
    public var fallbackImageStatus = 200
    /// The `max-age` of a fallback answer in seconds; nil for `cacheMaxAge`. nil by default.
    public var fallbackImageTTL: Int?

    // MARK: Requests

    /// How long one request may take, fetch, decode, resize and encode together, before it is answered
    /// with 504. 30 seconds by default.
    public var requestDeadline: Duration = .seconds(30)
    /// How long a source may send nothing (connecting included) before its download fails and the request
    /// is answered 504; at most `requestDeadline`. 15 seconds by default, the downloader's idle timeout.
    public var sourceIdleTimeout: Duration = .seconds(15)
    /// How long a source's whole download may take, redirects included, however steadily its bytes arrive
    /// (imgproxy's `IMGPROXY_DOWNLOAD_TIMEOUT`): past it the download fails and the request is answered 504
    /// (`the source did not answer in time`). At most `requestDeadline`; nil for `requestDeadline`, whose
    /// time also covers the decode and the encode. nil by default.
    public var sourceTimeout: Duration?
    /// The largest width or height a result may be asked for (after `dpr`). 8,192 by default.
    public var maximumResultDimension = 8192
    /// `Cache-Control: public, max-age=` this many seconds. One year by default.
    public var cacheMaxAge = 31_536_000
    /// Whether image responses carry an `ETag` and `If-None-Match` is answered 304 (imgproxy's
    /// `IMGPROXY_USE_ETAG`, off there by default). The ETag is made from the URL before anything is fetched,
    /// so a revalidation costs no fetch or encode. `true` by default.
    public var usesETags = true
    /// Another path answered as `/health` is (imgproxy's `IMGPROXY_HEALTH_CHECK_PATH`), such as `/healthz`.
    /// nil by default.
    public var healthCheckPath: String?
    /// The path every URL the proxy answers starts with (imgproxy's `IMGPROXY_PATH_PREFIX`), such as
    /// `/images`: image and `/info` URLs, `/health`, `/health/ready`, `healthCheckPath` and `/metrics` are
    /// all answered under it, and a path without it is answered 404. A URL's signature covers the path after
    /// the prefix, as imgproxy's does. Written with one leading `/` and no trailing one; empty (every path
    /// from `/`) by default.
    public var pathPrefix = ""
    /// Whether `GET /metrics` is answered with the metrics. `webimage serve` turns it off when the metrics
    /// have a listener of their own (`ProxyServer.metricsAddress`, imgproxy's `IMGPROXY_PROMETHEUS_BIND`),
    /// where imgproxy serves them too. `true` by default.
    public var servesMetrics = true
    /// A prefix of every metric's name, joined with `_` (imgproxy's `IMGPROXY_PROMETHEUS_NAMESPACE`): with
    /// `imgproxy`, `webimage_serve_requests_total` is `imgproxy_webimage_serve_requests_total`. It must be a
    /// Prometheus name: ASCII letters, digits and `_`, not starting with a digit (`isValidMetricsNamespace`).
    /// nil (the names as they are) by default.
    public var metricsNamespace: String?

    /// Whether answers carry the source's `Last-Modified`, and a request whose `If-Modified-Since` is as new
    /// is answered 304 (imgproxy's `IMGPROXY_USE_LAST_MODIFIED`). `false` by default, as in imgproxy.
    public var usesLastModified = false
    /// Whether the source's `Cache-Control` and `Expires`, when it sends either, replace the proxy's own
    /// (imgproxy's `IMGPROXY_CACHE_CONTROL_PASSTHROUGH`). `false` by default, as in imgproxy.
    public var passesCacheControlThrough = false

    /// Whether a request's client hints (`Sec-CH-DPR`/`DPR`, `Sec-CH-Width`/`Width`) set the `dpr` and
    /// `width` its URL starts from, with `Vary` naming the four fields (imgproxy's
    /// `IMGPROXY_ENABLE_CLIENT_HINTS`). `false` by default, as in imgproxy.
    public var usesClientHints = false

    // MARK: Formats

    /// Which formats a client's `Accept` may choose (imgproxy's `IMGPROXY_AUTO_WEBP`, `…_AVIF`, `…_JXL` and
    /// their `ENFORCE_` forms); while any is on, responses carry `Vary: Accept`. All off by default, as in
    /// imgproxy: the URL's format or JPEG (PNG with alpha), whatever the client sends. An AVIF encode,
    /// several times the cost of the others, then happens only when the signed URL asks for it.
    public var formatNegotiation = FormatNegotiation()

    // MARK: Options

    /// The options every URL starts from, before the `default` preset and the URL's own: where imgproxy's
    /// `IMGPROXY_FORMAT_QUALITY` (and `IMGPROXY_QUALITY`, as the quality of each format it does not name),
    /// `IMGPROXY_AUTO_ROTATE`, `IMGPROXY_STRIP_METADATA` and `IMGPROXY_KEEP_COPYRIGHT` go. They are part of
    /// every URL's canonical options, so ETags and the result cache's keys follow them. `ProcessingOptions()`
    /// by default.
    public var defaultOptions = ProcessingOptions()

    // MARK: Presets

    /// Named option lists (imgproxy's `IMGPROXY_PRESETS`): `pr:NAME` in a URL, and `default` applied to every
    /// request first. None by default.
    public var presets = ProxyPresets()
    /// Whether a URL's options segment may only be preset names, `:`-separated (imgproxy's
    /// `IMGPROXY_ONLY_PRESETS`); anything else is refused with 400. `false` by default.
    public var onlyPresets = false

    // MARK: Watermark

    /// The image `watermark` (`wm`) draws, with its base opacity (imgproxy's `IMGPROXY_WATERMARK_PATH` and
    /// `IMGPROXY_WATERMARK_OPACITY`). Without one, `wm` is accepted and draws nothing, as in imgproxy. nil by
    /// default.
    public var watermark: ProxyWatermark?

    // MARK: Results

    /// Where finished results are kept: a hit is answered without fetching or decoding. It is the proxy's
    /// downloader's `processedImageCache` (marked `processedImageCacheIsPrivate`, so give the proxy a
    /// cache of its own), the one cache of encoded results: the downloader stores each result as it
    /// encodes it, under its processed-image key (source URL, the transformer's key, made from the
    /// canonical options, the encoder's key, with its format and quality, and the decode options), and
    /// the proxy reads it under the same key before it takes a slot. An `ImageDiskCache` in production;
    /// nil (no result cache) by default.
    public var resultCache: (any ProcessedImageCaching)?
    /// The HTTP cache source downloads go through, with HTTP's rules (freshness from the origin's
    /// `Cache-Control` and `Expires`, revalidation with `ETag` and `Last-Modified`, `no-store` obeyed), so
    /// different results of one source, asked one after another, fetch it once. The proxy sends no
    /// cookies or credentials, so one client's request never reaches the cache as another's. Give the
    /// proxy a cache of its own: its downloader treats it as private (`urlCacheIsPrivate`), holding only
    /// answers its destination policy judged. nil (every
    /// source fetched each time) by default; `webimage serve` gives it a memory cache
    /// (`--source-cache-size`).
    public var sourceCache: (any HTTPCaching)?

    // MARK: Load

    /// How many results may be made at once, each a fetch, decode, resize and encode. The number of active
    /// processor cores by default.
    public var maximumConcurrentJobs = ProcessInfo.processInfo.activeProcessorCount
    /// How many more results may wait for one of those slots; a request past that is answered 503 at once
    /// with `Retry-After`. A waiting job holds no image memory (it has fetched nothing yet). 64 by default.
    public var maximumQueuedJobs = 64
    /// The `Retry-After` seconds of a 503 sent when the queue is full. 1 by default.
    public var retryAfterSeconds = 1

    /// The defaults.
    public init() {}

    /// Whether `namespace` may start a Prometheus metric name: not empty, ASCII letters, digits and `_`, and
    /// not starting with a digit.
    public static func isValidMetricsNamespace(_ namespace: String) -> Bool {
        guard let first = namespace.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return namespace.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
        }
    }

    /// Whether `prefix` is an allowed source for `local://` or `s3://` sources (`local:///images/`,
    /// `s3://bucket/path`), which the proxy matches itself; any other must be a `URLPrefixList` prefix.
    public static func isStorageSourcePrefix(_ prefix: String) -> Bool { StorageSourcePrefix(prefix) != nil }

    /// A byte count written as digits with an optional binary suffix: `K`, `M`, `G` or `T` (powers of 1024,
    /// any case, an optional `B` or `iB` after it), e.g. `512M`, `1G`, `1048576`. nil for anything else,
    /// a negative count or one too large for `Int`.
    public static func byteCount(_ text: String) -> Int? {
        var digits = Substring(text.trimmingCharacters(in: .whitespaces).uppercased())
        for suffix in ["IB", "B"] where digits.hasSuffix(suffix) && digits.count > suffix.count {
            digits = digits.dropLast(suffix.count)
            break
        }
        var multiplier = 1
        if let last = digits.last, let power = ["K", "M", "G", "T"].firstIndex(of: String(last)) {
            multiplier = 1 << (10 * (power + 1))
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let value = Int(digits)
        else { return nil }
        let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : product
    }
}
