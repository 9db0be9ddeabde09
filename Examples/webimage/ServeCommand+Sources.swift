import ArgumentParser
import Foundation
import WebImage
import WebImageObjectStore
import WebImageProxy

extension WebImageCLI.Serve {
    /// The sources besides `http(s)`: `--local-filesystem-root` else IMGPROXY_LOCAL_FILESYSTEM_ROOT,
    /// `--base-url` else IMGPROXY_BASE_URL, `--use-s3` else IMGPROXY_USE_S3, and the fallback image.
    func applyStorage(
        _ environment: [String: String], _ imgproxy: ImgproxyEnvironment,
        to configuration: inout ImageProxyConfiguration
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
            configuration.localFilesystemRoot = root
        }
        configuration.baseURL = baseURL ?? imgproxy.text("BASE_URL") ?? ""
        configuration.s3 = try Self.s3Configuration(
            useS3: try useS3 || imgproxy.boolean("USE_S3") == true, environment)
        if let (image, status, ttl) = try fallbackImage(imgproxy) {
            (configuration.fallbackImage, configuration.fallbackImageStatus) = (image, status)
            configuration.fallbackImageTTL = ttl
        }
    }

    /// What answers carry: the source's `Last-Modified`, `Cache-Control` and `Expires`, client hints; and the
    /// watermark's file and base opacity (`--watermark-path` else IMGPROXY_WATERMARK_PATH, and so on).
    func applyResponses(_ imgproxy: ImgproxyEnvironment, to settings: inout ServeSettings) throws {
        settings.configuration.usesLastModified = try imgproxy.boolean("USE_LAST_MODIFIED") ?? false
        settings.configuration.passesCacheControlThrough = try imgproxy.boolean("CACHE_CONTROL_PASSTHROUGH") ?? false
        settings.configuration.usesClientHints = try imgproxy.boolean("ENABLE_CLIENT_HINTS") ?? false
        if let path = watermarkPath ?? imgproxy.text("WATERMARK_PATH"), !path.isEmpty {
            settings.watermarkPath = path
        }
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

    /// The fallback image's bytes (checked to decode), status and TTL from `--fallback-image-path` or
    /// imgproxy's variables; nil without one.
    func fallbackImage(_ imgproxy: ImgproxyEnvironment) throws -> (Data, Int, Int?)? {
        var image: Data?
        if let path = fallbackImagePath ?? imgproxy.text("FALLBACK_IMAGE_PATH") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("--fallback-image-path (IMGPROXY_FALLBACK_IMAGE_PATH): cannot read '\(path)'.")
            }
            image = data
        } else if let text = imgproxy.text("FALLBACK_IMAGE_DATA") {
            guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw ValidationError("IMGPROXY_FALLBACK_IMAGE_DATA must be Base64.")
            }
            image = data
        }
        guard let image else { return nil }
        guard (try? ImageDecoderRegistry.shared.decode(image)) != nil else {
            throw ValidationError("the fallback image is not an image WebImage can decode.")
        }
        let status = try imgproxy.integer("FALLBACK_IMAGE_HTTP_CODE", in: 0...599) ?? 200
        guard status == 0 || status >= 100 else {
            throw ValidationError("IMGPROXY_FALLBACK_IMAGE_HTTP_CODE must be 0 or 100…599, got \(status).")
        }
        let ttl = try imgproxy.integer("FALLBACK_IMAGE_TTL", in: 0...Int(Int32.max))
        return (image, status, ttl == 0 ? nil : ttl)
    }
}
