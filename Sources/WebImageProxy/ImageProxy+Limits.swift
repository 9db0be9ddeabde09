import WebImage

/// A URL's own limits (`LimitOptions`): refused unless the configuration allows them, and otherwise handed
/// to the downloader where the server's own limits act, so each bounds the same step before it runs: the
/// download's body (`msfs`), the decode's declared pixels and kept frames (`msr`, `maf`), and the plan's
/// result size (`mrd`, through the transformer's `maximumDimension`).
extension ImageProxy {
    /// imgproxy's answer to a security option it does not allow: 403 (its `SecurityOptionsError`).
    static let securityOptionsRefused = ProxyError.forbidden(
        "security processing options are not allowed (IMGPROXY_ALLOW_SECURITY_OPTIONS)")

    /// Throws `securityOptionsRefused` when `options` set a limit the configuration does not allow.
    func checkSecurityOptions(_ options: ProcessingOptions) throws(ProxyError) {
        if options.limits.isSet, !configuration.allowsSecurityOptions { throw Self.securityOptionsRefused }
    }

    /// `context` with `url`'s limits under the server's, for each download of its source; unchanged when
    /// the URL sets none (the downloader's configuration holds the server's).
    func limitedContext(_ context: ImageDownloadContext?, for url: ProxyURL) -> ImageDownloadContext? {
        let limits = url.options.limits
        guard limits.isSet else { return context }
        var limited = context ?? ImageDownloadContext()
        limited.maximumResponseSize = limits.sourceBytes(under: configuration.maximumSourceBytes)
        limited.maximumImagePixels = max(1, limits.sourcePixels(under: configuration.maximumSourcePixels))
        limited.maximumAnimationFrames = limits.animationFrames(under: configuration.maximumAnimationFrames)
        return limited
    }
}
