import Foundation
import WebImage

/// Everything the CLI does with the HTTP cache, in one place.
enum HTTPCacheSupport {
    /// The flags `--http-cache` (and `--ignore-cached`) add.
    static func options(ignoreCached: Bool) -> ImageDownloaderOptions {
        ignoreCached ? [.useURLCache, .ignoreCachedResponse] : [.useURLCache]
    }

    /// Points `config` at the cache in `directory` (`--http-cache-dir`), or at `HTTPCache.shared` (20 MB
    /// memory, 150 MB disk under `$XDG_CACHE_HOME/webimage`) for nil (`--http-cache`).
    static func configure(_ config: inout ImageDownloaderConfig, directory: String?) throws {
        guard let directory else {
            config.urlCache = nil  // nil means HTTPCache.shared
            return
        }
        let url = URL(fileURLWithPath: directory, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw CLIError("cannot create the --http-cache-dir directory '\(directory)': \(error.localizedDescription)")
        }
        config.urlCache = HTTPCache(directory: url)
    }
}

/// A failure the CLI reports as `Error: <message>` with exit code 1.
struct CLIError: Error, CustomStringConvertible {
    /// The sentence printed.
    let description: String

    init(_ description: String) { self.description = description }
}
