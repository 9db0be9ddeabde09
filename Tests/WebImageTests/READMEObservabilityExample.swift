import Logging
import Metrics
import WebImage

/// The README's example of the downloader's logger and metrics factory, compiled with this test target:
/// `make test-readme` checks that the README's block is these lines, imports aside. It is not run.
enum READMEObservabilityExample {
    static func main() {
        // README: begin
        let myFactory: any MetricsFactory = NOOPMetricsHandler.instance  // your backend's factory
        var config = ImageDownloaderConfig()
        config.logger = Logger(label: "thumbnails.downloader")  // default: Logger(label: "WebImage")
        config.logger.logLevel = .debug  // see failed transfers
        config.metricsFactory = myFactory  // default: MetricsSystem.factory
        let downloader = ImageDownloader(config: config)
        let cache = HTTPCache(logger: Logger(label: "thumbnails.http-cache"))
        // README: end
        _ = (downloader, cache)
    }
}
