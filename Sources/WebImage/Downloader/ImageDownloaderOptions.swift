/// Per-request behaviour flags, with the meaning of SDWebImage's `SDWebImageDownloaderOptions`.
///
/// ```swift
/// downloader.downloadImage(with: url, options: [.highPriority, .progressiveLoad]) { image, data, error, finished in }
/// ```
public struct ImageDownloaderOptions: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: Int
    /// Creates options from raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Waiting operation gets `queuePriority = .low` (ignored when `highPriority` is also set).
    public static let lowPriority = ImageDownloaderOptions(rawValue: 1 << 0)
    /// Partial images are delivered as `(image, nil, nil, false)` while data arrives, when the length is known.
    public static let progressiveLoad = ImageDownloaderOptions(rawValue: 1 << 1)
    /// Consult and update `config.urlCache` with HTTP caching semantics (freshness, revalidation).
    public static let useURLCache = ImageDownloaderOptions(rawValue: 1 << 2)
    /// With `useURLCache`: a result served from the cache (fresh hit or 304) completes with
    /// `cacheNotModified` (1002) and no image.
    public static let ignoreCachedResponse = ImageDownloaderOptions(rawValue: 1 << 3)
    /// Accepted for source compatibility; Linux has no app background state, so it has no effect.
    public static let continueInBackground = ImageDownloaderOptions(rawValue: 1 << 4)
    /// Send cookies from, and store `Set-Cookie` into, the downloader's cookie jar.
    public static let handleCookies = ImageDownloaderOptions(rawValue: 1 << 5)
    /// Skip TLS certificate and host name verification for this request only.
    public static let allowInvalidSSLCertificates = ImageDownloaderOptions(rawValue: 1 << 6)
    /// Waiting operation gets `queuePriority = .high`.
    public static let highPriority = ImageDownloaderOptions(rawValue: 1 << 7)
    /// Decode to at most `config.scaleDownLimitBytes` of pixels, keeping the aspect ratio, without ever
    /// allocating the full-size bitmap (JPEG DCT scaling, WebP scaled decoding).
    public static let scaleDownLargeImages = ImageDownloaderOptions(rawValue: 1 << 8)
    /// Complete with the data only; the image is nil.
    public static let avoidDecodeImage = ImageDownloaderOptions(rawValue: 1 << 9)
    /// Animated GIF/WebP: decode only the first frame.
    public static let decodeFirstFrameOnly = ImageDownloaderOptions(rawValue: 1 << 10)
    /// Animated GIF/WebP: decode every frame before completing.
    public static let preloadAllFrames = ImageDownloaderOptions(rawValue: 1 << 11)
}

/// The order in which waiting downloads start.
public enum ImageDownloaderExecutionOrder: Sendable, Hashable {
    /// Oldest request first (the default).
    case fifo
    /// Newest request first, with every download slot kept busy.
    case lifo
}
