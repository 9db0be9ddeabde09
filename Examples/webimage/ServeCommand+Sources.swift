import ArgumentParser
import Foundation
import WebImage
import WebImageObjectStore
import WebImageProxy

extension WebImageCLI.Serve {
    /// The sources besides `http(s)`: `--local-filesystem-root` else IMGPROXY_LOCAL_FILESYSTEM_ROOT,
    /// `--base-url` else IMGPROXY_BASE_URL, `--use-s3` else IMGPROXY_USE_S3, and the fallback image.
    func applyStorage(
        _ environment: [String: String], _ imgproxy: ImgproxyEnvironment, to settings: inout ServeSettings
    ) throws {
        if let root = localFilesystemRoot ?? imgproxy.text("LOCAL_FILESYSTEM_ROOT") {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue,
                (root as NSString).resolvingSymlinksInPath != "/"
            else {
                throw ValidationError(
                    "--local-filesystem-root (IMGPROXY_LOCAL_FILESYSTEM_ROOT) must be an existing directory other "
                        + "than /, got '\(root)'.")
            }
            settings.configuration.localFilesystemRoot = root
        }
        settings.configuration.baseURL = baseURL ?? imgproxy.text("BASE_URL") ?? ""
        settings.configuration.s3 = try Self.s3Configuration(
            useS3: try useS3 || imgproxy.boolean("USE_S3") == true, environment)
        try applyFallbackImage(imgproxy, to: &settings)
    }

    /// What answers carry: the source's `Last-Modified`, `Cache-Control` and `Expires`, client hints; and the
    /// watermark's file and base opacity (`--watermark-path` else IMGPROXY_WATERMARK_PATH, and so on).
    func applyResponses(_ imgproxy: ImgproxyEnvironment, to settings: inout ServeSettings) throws {
        settings.configuration.usesLastModified = try imgproxy.boolean("USE_LAST_MODIFIED") ?? false
        settings.configuration.passesCacheControlThrough = try imgproxy.boolean("CACHE_CONTROL_PASSTHROUGH") ?? false
        settings.configuration.usesClientHints = try imgproxy.boolean("ENABLE_CLIENT_HINTS") ?? false
        settings.watermark = Self.startImage(
            [
                (watermarkPath.map(StartImage.Origin.file), "--watermark-path"),
                (try watermarkURL.map { .url(try Self.url($0, name: "--watermark-url")) }, "--watermark-url"),
                (try imgproxy.base64("WATERMARK_DATA").map(StartImage.Origin.data), "IMGPROXY_WATERMARK_DATA"),
                (imgproxy.text("WATERMARK_PATH").map(StartImage.Origin.file), "IMGPROXY_WATERMARK_PATH"),
                (try imgproxy.url("WATERMARK_URL").map(StartImage.Origin.url), "IMGPROXY_WATERMARK_URL"),
            ])
        var opacity = watermarkOpacity
        if opacity == nil, let text = imgproxy.text("WATERMARK_OPACITY") {
            guard let value = Double(text) else {
                throw ValidationError("IMGPROXY_WATERMARK_OPACITY must be a number, got '\(text)'.")
            }
            opacity = value
        }
        if let opacity {
            guard opacity > 0, opacity <= 1 else {
                throw ValidationError(
                    "--watermark-opacity (or IMGPROXY_WATERMARK_OPACITY) must be greater than 0 and at most 1, got "
                        + "\(opacity).")
            }
            settings.watermarkOpacity = opacity
        }
    }

    /// The store of `s3://` sources when `enabled`: the `AWS_*` variables, with `IMGPROXY_S3_ENDPOINT` and
    /// `IMGPROXY_S3_REGION` (imgproxy's) winning over theirs; nil without S3.
    static func s3Configuration(useS3 enabled: Bool, _ environment: [String: String]) throws -> S3Configuration? {
        guard enabled else { return nil }
        var variables = environment
        if let endpoint = environment["IMGPROXY_S3_ENDPOINT"], !endpoint.isEmpty {
            variables["AWS_ENDPOINT_URL_S3"] = endpoint
        }
        if let region = environment["IMGPROXY_S3_REGION"], !region.isEmpty { variables["AWS_REGION"] = region }
        do {
            return try S3Configuration.fromEnvironment(variables)
        } catch {
            throw ValidationError("--use-s3 (IMGPROXY_USE_S3): \(error.description)")
        }
    }

    /// The fallback image from `--fallback-image-path` or `--fallback-image-url`, else imgproxy's variables
    /// in imgproxy's order (`_DATA`, `_PATH`, `_URL`), with its status and TTL. A file or Base64 image is read
    /// and checked to decode here; a URL is fetched in `run()` (`loadImages`).
    func applyFallbackImage(_ imgproxy: ImgproxyEnvironment, to settings: inout ServeSettings) throws {
        let given = Self.startImage(
            [
                (fallbackImagePath.map(StartImage.Origin.file), "--fallback-image-path"),
                (
                    try fallbackImageURL.map { .url(try Self.url($0, name: "--fallback-image-url")) },
                    "--fallback-image-url"
                ),
                (
                    try imgproxy.base64("FALLBACK_IMAGE_DATA").map(StartImage.Origin.data),
                    "IMGPROXY_FALLBACK_IMAGE_DATA"
                ),
                (imgproxy.text("FALLBACK_IMAGE_PATH").map(StartImage.Origin.file), "IMGPROXY_FALLBACK_IMAGE_PATH"),
                (try imgproxy.url("FALLBACK_IMAGE_URL").map(StartImage.Origin.url), "IMGPROXY_FALLBACK_IMAGE_URL"),
            ])
        guard let given else { return }
        let status = try imgproxy.integer("FALLBACK_IMAGE_HTTP_CODE", in: 0...599) ?? 200
        guard status == 0 || status >= 100 else {
            throw ValidationError("IMGPROXY_FALLBACK_IMAGE_HTTP_CODE must be 0 or 100…599, got \(status).")
        }
        let ttl = try imgproxy.integer("FALLBACK_IMAGE_TTL", in: 0...Int(Int32.max))
        settings.configuration.fallbackImageStatus = status
        settings.configuration.fallbackImageTTL = ttl == 0 ? nil : ttl
        switch given.origin {
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("\(given.name): cannot read '\(path)'.")
            }
            settings.configuration.fallbackImage = try Self.checkedFallbackImage(data, name: given.name)
        case .data(let data):
            settings.configuration.fallbackImage = try Self.checkedFallbackImage(data, name: given.name)
        case .url:
            settings.fallbackImage = given
        }
    }

    /// `data` when it decodes.
    static func checkedFallbackImage(_ data: Data, name: String) throws -> Data {
        guard (try? ImageDecoderRegistry.shared.decode(data)) != nil else {
            throw ValidationError("\(name): the fallback image is not an image WebImage can decode.")
        }
        return data
    }

    /// The first image given, in the order of `candidates` (each an image, or nil, and its flag or variable).
    static func startImage(_ candidates: [(StartImage.Origin?, String)]) -> StartImage? {
        candidates.lazy.compactMap { origin, name in origin.map { StartImage(origin: $0, name: name) } }.first
    }

    /// `text` as an http(s) URL, else a `ValidationError` naming `name`.
    static func url(_ text: String, name: String) throws -> URL {
        guard let url = ImgproxyEnvironment.httpURL(text) else {
            throw ValidationError("\(name) takes an http or https URL, got '\(text)'.")
        }
        return url
    }

    /// The watermark and the fallback image given by file, Base64 or URL, read or fetched once, into
    /// `configuration`. A URL is fetched as sources are (`ImageProxy.auxiliaryImage(at:configuration:)`):
    /// a loopback or private address needs `--allow-destination` or its variable.
    ///
    /// - Throws: `CLIError` naming the flag or variable when an image cannot be read, fetched or decoded.
    func loadImages(_ settings: ServeSettings, into configuration: inout ImageProxyConfiguration) async throws {
        if let watermark = settings.watermark {
            var fetched: Data?
            if case .url(let url) = watermark.origin {
                fetched = try await Self.fetch(url, name: watermark.name, configuration)
            }
            do throws(ProxyWatermark.LoadError) {
                switch watermark.origin {
                case .file(let path):
                    configuration.watermark = try ProxyWatermark(
                        contentsOfFile: path, opacity: settings.watermarkOpacity)
                case .data(let data):
                    configuration.watermark = try ProxyWatermark(
                        data: data, source: "in \(watermark.name)", opacity: settings.watermarkOpacity)
                case .url(let url):
                    configuration.watermark = try ProxyWatermark(
                        data: fetched ?? Data(), source: "at '\(url.redactedString)' (\(watermark.name))",
                        opacity: settings.watermarkOpacity)
                }
            } catch {
                throw CLIError(error.description)
            }
        }
        if let fallback = settings.fallbackImage, case .url(let url) = fallback.origin {
            let data = try await Self.fetch(url, name: fallback.name, configuration)
            guard (try? ImageDecoderRegistry.shared.decode(data)) != nil else {
                throw CLIError(
                    "\(fallback.name): the fallback image at '\(url.redactedString)' is not an image WebImage can decode."
                )
            }
            configuration.fallbackImage = data
        }
    }

    /// The bytes at `url`, or a `CLIError` naming `name` and the downloader's error.
    private static func fetch(_ url: URL, name: String, _ configuration: ImageProxyConfiguration) async throws -> Data {
        do throws(ImageDownloaderError) {
            return try await ImageProxy.auxiliaryImage(at: url, configuration: configuration)
        } catch {
            throw CLIError("\(name): cannot fetch '\(url.redactedString)': \(error)")
        }
    }
}
