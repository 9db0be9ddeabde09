import Foundation
import WebImage

/// The source response's header fields an answer may carry: `Last-Modified` (imgproxy's
/// `IMGPROXY_USE_LAST_MODIFIED`), `Cache-Control` and `Expires` (`IMGPROXY_CACHE_CONTROL_PASSTHROUGH`).
/// Kept beside a result in the result cache (`ImageProxy.storeSourceFields`), so a hit answers as the fetch
/// did.
struct SourceFields: Sendable, Equatable, Codable {
    var lastModified: String?
    var cacheControl: String?
    var expires: String?

    /// The fields of `headers` that `configuration` passes on; none when it passes on none.
    init(_ headers: HTTPHeaders?, configuration: ImageProxyConfiguration) {
        guard let headers else { return }
        if configuration.usesLastModified, let value = headers["Last-Modified"], HTTPDate.parse(value) != nil {
            lastModified = value
        }
        if configuration.passesCacheControlThrough {
            cacheControl = headers["Cache-Control"]
            expires = headers["Expires"]
        }
    }

    init() {}

    var isEmpty: Bool { lastModified == nil && cacheControl == nil && expires == nil }

    /// `headers` with these fields: the source's `Cache-Control` and `Expires` replace the proxy's when the
    /// source sent either, and `Last-Modified` is added.
    func applied(to headers: [(String, String)]) -> [(String, String)] {
        var result = headers
        if cacheControl != nil || expires != nil {
            result.removeAll { $0.0 == "Cache-Control" || $0.0 == "Expires" }
            if let cacheControl { result.append(("Cache-Control", cacheControl)) }
            if let expires { result.append(("Expires", expires)) }
        }
        if let lastModified { result.append(("Last-Modified", lastModified)) }
        return result
    }

    /// Whether `ifModifiedSince` (a request's field) says the client's copy is as new as the source's.
    func notModified(since ifModifiedSince: String?) -> Bool {
        guard let lastModified, let modified = HTTPDate.parse(lastModified),
            let since = ifModifiedSince.flatMap({ HTTPDate.parse($0) })
        else { return false }
        return modified <= since
    }

    /// Where these fields are kept in the result cache: beside the result's own key.
    static func key(for result: ProcessedImageKey) -> ProcessedImageKey {
        ProcessedImageKey(
            url: result.url, transformerKey: result.transformerKey, encoderKey: result.encoderKey,
            variant: result.variant + "#source-fields")
    }
}
