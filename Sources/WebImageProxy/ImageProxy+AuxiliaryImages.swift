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
        var config = Self.fetchConfig(configuration)
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
