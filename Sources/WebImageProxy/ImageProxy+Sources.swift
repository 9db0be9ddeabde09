import Foundation
import Logging
import WebImage
import WebImageObjectStore

/// Sources other than `http(s)`: `local:///path` under `ImageProxyConfiguration.localFilesystemRoot`, and
/// `s3://bucket/key` with `ImageProxyConfiguration.s3`.
extension ImageProxy {
    /// The local files, and the downloader of local and S3 sources when either is configured: `base` (the
    /// `http(s)` downloader's configuration) with no redirects, no HTTP cache and no URL prefixes (the
    /// proxy checks these sources against `allowedSources` itself, `allowsSource`). It reads `file://`, and
    /// `http(s)` when S3 is on, from any address: its URLs are only ever the configured store's (the
    /// bucket is checked before it becomes part of a host name, `S3Presigner.objectURL(for:)`).
    static func storage(_ configuration: ImageProxyConfiguration, base: ImageDownloaderConfig, logger: Logger)
        -> (LocalFileSource?, ImageDownloader?)
    {
        var files: LocalFileSource?
        if let root = configuration.localFilesystemRoot {
            files = LocalFileSource(root: root)
            if files == nil {
                logger.error(
                    "the local filesystem root is not a directory (or is /); local sources are refused",
                    metadata: ["root": "\(root)"])
            }
        }
        guard files != nil || configuration.s3 != nil else { return (nil, nil) }
        var config = base
        config.allowedProtocols = configuration.s3 == nil ? ["file"] : ["file", "http", "https"]
        config.destinationPolicy = .allowAll
        config.allowedURLPrefixes = nil
        config.maximumRedirects = 0
        config.urlCache = nil
        config.metricsFactory = nil
        // This downloader's credentials are the server's, the same for every request, never a client's: an
        // S3 read signed with them may be answered from and stored in the shared result cache.
        config.secretHeaderFields.subtract(["authorization", "x-amz-security-token", "*token*"])
        return (files, ImageDownloader(config: config))
    }

    /// `options` for reading `url`'s source: a local or S3 source never goes through an HTTP cache (the
    /// storage downloader has none of its own, and `.useURLCache` would put the bytes in `HTTPCache.shared`).
    func storageOptions(_ options: ImageDownloaderOptions, for url: ProxyURL) -> ImageDownloaderOptions {
        url.fetchURL == nil ? options : options.subtracting(.useURLCache)
    }

    /// The downloader that reads `url`'s source.
    func downloader(for url: ProxyURL) -> ImageDownloader {
        url.fetchURL == nil ? downloader : storageDownloader ?? downloader
    }

    /// `context` with what reading `url`'s source needs: an S3 source's request is signed when it is sent
    /// (`S3RequestSigning`).
    func sourceContext(_ context: ImageDownloadContext?, for url: ProxyURL) -> ImageDownloadContext? {
        guard url.source.scheme?.lowercased() == "s3", let s3 = configuration.s3 else { return context }
        var context = context ?? ImageDownloadContext()
        context.requestModifier = S3RequestSigning(presigner: S3Presigner(configuration: s3))
        return context
    }

    static let badS3Source = ProxyError.badRequest(
        "the s3:// source must name a valid bucket and a key without '.' or '..' segments")

    /// What the downloader reads for `source` instead of it (a `local://` source's checked `file://` URL, an
    /// `s3://` source's unsigned object URL), nil for `http(s)`.
    ///
    /// - Throws: 400 when `source`'s kind is not enabled or an S3 bucket or key is invalid, 403 or 404 for
    ///   a local path (`LocalFileSource`).
    func fetchURL(for source: URL) throws(ProxyError) -> URL? {
        switch source.scheme?.lowercased() {
        case "local":
            guard let localFiles else {
                throw .badRequest("local:// sources are not enabled (IMGPROXY_LOCAL_FILESYSTEM_ROOT)")
            }
            return try localFiles.fileURL(for: source)
        case "s3":
            guard let s3 = configuration.s3 else {
                throw .badRequest("s3:// sources are not enabled (IMGPROXY_USE_S3)")
            }
            let location: S3Location?
            do throws(S3Error) {
                // The key as stored: percent-decoded once, as the URL's path (the presigner encodes it again).
                let key = source.path(percentEncoded: false).drop { $0 == "/" }
                location = try S3Location.parse("s3://\(source.host(percentEncoded: false) ?? "")/\(key)")
            } catch {
                throw Self.badS3Source
            }
            guard let location, let url = try? S3Presigner(configuration: s3).objectURL(for: location) else {
                throw Self.badS3Source
            }
            return url
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

/// Signs an S3 source's request as it is sent, with SigV4 header fields (`S3Presigner.signingHeaders`):
/// the URL the downloader keys its caches by stays the unsigned object URL.
struct S3RequestSigning: ImageDownloaderRequestModifying {
    let presigner: S3Presigner

    func modifiedRequest(_ request: ImageDownloadRequest) -> ImageDownloadRequest? {
        var signed = request
        guard let headers = try? presigner.signingHeaders(for: request.url) else { return nil }
        for header in headers { signed.headers[header.name] = header.value }
        return signed
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

extension ImageProxy {
    /// The answer made from `configuration.fallbackImage` when `url`'s source failed with `failure`: the
    /// image decoded, transformed and encoded as the request asks, off the cooperative pool, outside the
    /// result cache; 500 when the fallback image itself cannot be made (a server's mistake, logged).
    func fallback(
        for url: ProxyURL, choice: FormatChoice, failure: ProxyError, headers: [(String, String)]
    ) async throws(ProxyError) -> ProxyResponse {
        guard let image = configuration.fallbackImage else { throw failure }
        let transformer = context(for: url, choice: choice, cancellation: JobCancellation()).transformer
        let encoder = OutputEncoder(choice: choice, options: url.options)
        let made = await Self.offPool { () -> Result<Data, any Error> in
            Result {
                var decoding = ImageDecodingOptions.default
                decoding.decodeFirstFrameOnly = true
                let decoded = try ImageDecoderRegistry.shared.decode(image, options: decoding)
                return try encoder.encode(try transformer?.transform(decoded) ?? decoded)
            }
        }
        guard case .success(let data) = made else {
            logger.error("the fallback image cannot be made", metadata: ["error": "\(made)"])
            throw ProxyError(status: 500, "the fallback image cannot be made")
        }
        metrics.sourceError(code: "fallback")
        let age = configuration.fallbackImageTTL ?? configuration.cacheMaxAge
        var fields = headers.filter { !["ETag", "Cache-Control", "Expires"].contains($0.0) }
        fields.insert(("Content-Type", "image/\(ImageFormat.detect(data).rawValue)"), at: 0)
        fields += [
            ("Cache-Control", "public, max-age=\(age)"),
            ("Expires", HTTPDate.format(Date(timeIntervalSinceNow: TimeInterval(age)))), ("Fallback-Image", "1"),
        ]
        let status = configuration.fallbackImageStatus == 0 ? failure.status : configuration.fallbackImageStatus
        return ProxyResponse(status: status, headers: fields, body: data)
    }
}

extension ImageProxy {
    /// The source fields stored beside the result at `key`; none when nothing passes them on or none were
    /// stored.
    func storedSourceFields(cache: any ProcessedImageCaching, key: ProcessedImageKey) async -> SourceFields {
        guard configuration.usesLastModified || configuration.passesCacheControlThrough else { return SourceFields() }
        let stored = await Self.offPool { cache.data(for: SourceFields.key(for: key)) }
        return stored.flatMap { try? JSONDecoder().decode(SourceFields.self, from: $0) } ?? SourceFields()
    }

    /// Keeps `fields` beside the result at `key`, so a hit answers with them.
    func store(_ fields: SourceFields, cache: any ProcessedImageCaching, key: ProcessedImageKey) async {
        guard !fields.isEmpty, let encoded = try? JSONEncoder().encode(fields) else { return }
        await Self.offPool { cache.store(encoded, for: SourceFields.key(for: key)) }
    }
}
