import Foundation
import WebImage

/// Everything the CLI does with the HTTP cache, in one place.
///
/// This build's WebImage has no `HTTPCache` yet (config.urlCache and the from-cache indication land
/// with the caching work), so `--http-cache` and `--ignore-cached` parse and validate but report that
/// they are unavailable, and `fromCache` is reported as unknown (null).
enum HTTPCacheSupport {
    /// Whether the linked library has an HTTP cache.
    static let isAvailable = false

    /// The flags `--http-cache` (and `--ignore-cached`) add.
    static func options(ignoreCached: Bool) -> ImageDownloaderOptions {
        ignoreCached ? [.useURLCache, .ignoreCachedResponse] : [.useURLCache]
    }

    /// Points `config` at the cache in `directory` ("" for the library's default location).
    static func configure(_ config: inout ImageDownloaderConfig, directory: String) throws {
        throw CLIError(
            "--http-cache is unavailable: this build of WebImage has no HTTP cache yet (no config.urlCache).")
    }

    /// Whether a successful result came from the cache (a fresh hit or a 304); nil when unknown.
    static func isFromCache(_ result: ImageDownloadResult) -> Bool? { nil }
}

/// A failure the CLI reports as `Error: <message>` with exit code 1.
struct CLIError: Error, CustomStringConvertible {
    /// The sentence printed.
    let description: String

    init(_ description: String) { self.description = description }
}
