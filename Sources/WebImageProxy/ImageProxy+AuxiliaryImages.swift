import Foundation
import WebImage

extension ImageProxy {
    /// The bytes at `url`, fetched once, for an image the proxy is configured with rather than asked for: a
    /// watermark or a fallback image given by URL (imgproxy's `IMGPROXY_WATERMARK_URL` and
    /// `IMGPROXY_FALLBACK_IMAGE_URL`, which imgproxy also downloads once at its start).
    ///
    /// It goes through a downloader of its own with the limits sources have: `configuration`'s destination
    /// policy (`allowedDestinations` besides public addresses), `maximumSourceBytes`, the source timeouts and
    /// a 2xx status; not `allowedSources`, which judges the URLs clients send, as in imgproxy. Nothing is
    /// decoded here.
    ///
    /// ```swift
    /// let mark = try await ImageProxy.auxiliaryImage(at: url, configuration: configuration)
    /// configuration.watermark = try ProxyWatermark(data: mark, source: "at '\(url.redactedString)'")
    /// ```
    ///
    /// - Throws: the downloader's error: refused destination, status, timeout, size.
    public static func auxiliaryImage(at url: URL, configuration: ImageProxyConfiguration)
        async throws(ImageDownloaderError) -> Data
    {
        var config = ImageDownloaderConfig.default
        config.destinationPolicy = .publicOnly.allowing(configuration.allowedDestinations)
        config.maximumResponseSize = configuration.maximumSourceBytes
        let seconds = min(
            Self.seconds(configuration.requestDeadline),
            Self.seconds(configuration.sourceTimeout ?? configuration.requestDeadline))
        config.totalTimeout = max(seconds, 0.001)
        config.downloadTimeout = min(max(Self.seconds(configuration.sourceIdleTimeout), 0.001), config.totalTimeout)
        config.acceptableStatusCodes = Set(200..<300)
        config.cookieStorage = nil
        config.urlCache = nil
        config.metricsFactory = nil
        let downloader = ImageDownloader(config: config)
        let result: Result<Data, ImageDownloaderError>
        do throws(ImageDownloaderError) {
            result = .success(try await downloader.image(for: url, options: [.avoidDecodeImage]).data)
        } catch {
            result = .failure(error)
        }
        await downloader.invalidate()
        return try result.get()
    }
}
