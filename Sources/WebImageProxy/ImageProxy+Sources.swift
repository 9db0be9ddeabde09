import Foundation
import Logging
import WebImage

/// Sources other than `http(s)`: `local:///path` under `ImageProxyConfiguration.localFilesystemRoot`.
extension ImageProxy {
    /// The local files and their downloader, when `configuration` names a root: `base` (the `http(s)`
    /// downloader's configuration) reading `file://` only, with no redirects, no HTTP cache and no URL
    /// prefixes (the proxy checks a local source against `allowedSources` itself, `allowsSource`).
    static func storage(_ configuration: ImageProxyConfiguration, base: ImageDownloaderConfig, logger: Logger)
        -> (LocalFileSource?, ImageDownloader?)
    {
        guard let root = configuration.localFilesystemRoot else { return (nil, nil) }
        guard let files = LocalFileSource(root: root) else {
            logger.error(
                "the local filesystem root is not a directory (or is /); local sources are refused",
                metadata: ["root": "\(root)"])
            return (nil, nil)
        }
        var config = base
        config.allowedProtocols = ["file"]
        config.allowedURLPrefixes = nil
        config.maximumRedirects = 0
        config.urlCache = nil
        config.metricsFactory = nil
        return (files, ImageDownloader(config: config))
    }

    /// The downloader that reads `url`'s source.
    func downloader(for url: ProxyURL) -> ImageDownloader {
        url.source.scheme?.lowercased() == "local" ? storageDownloader ?? downloader : downloader
    }

    /// What the downloader reads for `source` instead of it (a `local://` source's checked `file://` URL),
    /// nil for `http(s)`.
    ///
    /// - Throws: 400 when `source`'s kind is not enabled, 403 or 404 for a local path (`LocalFileSource`).
    func fetchURL(for source: URL) throws(ProxyError) -> URL? {
        switch source.scheme?.lowercased() {
        case "local":
            guard let localFiles else {
                throw .badRequest("local:// sources are not enabled (IMGPROXY_LOCAL_FILESYSTEM_ROOT)")
            }
            return try localFiles.fileURL(for: source)
        case "s3":
            throw .badRequest("s3:// sources are not enabled (IMGPROXY_USE_S3)")
        default:
            return nil
        }
    }

    /// Whether `configuration.allowedSources` lets `source` through: `http(s)` sources by the parsed
    /// prefixes (`URLPrefixList`), `local://` and `s3://` ones by `StorageSourcePrefix`. Every source
    /// when the list is empty.
    func allowsSource(_ source: URL) -> Bool {
        guard !configuration.allowedSources.isEmpty else { return true }
        switch source.scheme?.lowercased() {
        case "http", "https":
            return allowedSources?.allows(source) ?? false
        default:
            let prefixes = configuration.allowedSources.compactMap(StorageSourcePrefix.init)
            return prefixes.contains { $0.allows(source) }
        }
    }
}

/// An allowed-source prefix for `local://` or `s3://` sources, which `URLPrefixList` (made for what curl
/// fetches) does not take: `local:///images/`, `s3://bucket/`, `s3://bucket/path`. Matched as
/// `URLPrefixList` matches: the scheme and the host (an S3 bucket; none for `local`) equal, the path's
/// segments starting with the prefix's after `.` and `..` are resolved (a `..` above the top matches
/// nothing), and a prefix ending in `/` needing more after it.
struct StorageSourcePrefix: Sendable, Hashable {
    var scheme: String
    var host: String
    var segments: [String]
    var needsMore: Bool

    /// `text` parsed; nil for anything but a `local://` or `s3://` URL without query or user name.
    init?(_ text: String) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "local" || scheme == "s3",
            url.query == nil, url.user == nil, let segments = Self.segments(of: url)
        else { return nil }
        self.scheme = scheme
        self.host = url.host ?? ""
        self.segments = segments
        self.needsMore = text.hasSuffix("/") && !segments.isEmpty
    }

    /// Whether `source` is below this prefix.
    func allows(_ source: URL) -> Bool {
        guard source.scheme?.lowercased() == scheme, (source.host ?? "") == host, source.user == nil,
            let path = Self.segments(of: source), path.starts(with: segments)
        else { return false }
        return !needsMore || path.count > segments.count
    }

    /// `url`'s path as percent-decoded segments, `.` and `..` resolved; nil when a `..` climbs past the top.
    static func segments(of url: URL) -> [String]? {
        var result: [String] = []
        for segment in url.path(percentEncoded: false).split(separator: "/") {
            switch segment {
            case ".": continue
            case "..":
                guard !result.isEmpty else { return nil }
                result.removeLast()
            default: result.append(String(segment))
            }
        }
        return result
    }
}
