import Foundation
import WebImage
import WebImageCodecs

/// `/info/{signature}/{info options}/{source}`: what the source is (sizes, format, frames, orientation,
/// colour profile, byte count) and its BlurHash and ThumbHash placeholders, as JSON (`ImageSummary`,
/// `InfoOptions`).
///
/// The request goes the image URLs' way: the same secret and signature check (the signature covers the path
/// after the signature segment, as in an image URL), the same source kinds and allowed sources, and one
/// piece of shared work per answer that takes a job slot, fetches through the proxy's downloaders (their
/// destination policy, size and pixel limits and the request's deadline) and fails with the same statuses.
/// The source is decoded to its first frame only, keeping its colour profile so its name can be read.
extension ImageProxy {
    /// The answer to an `/info` request; `request.path` starts with `/info/`.
    func processInfo(_ request: ProxyRequest) async throws(ProxyError) -> ProxyResponse {
        let deadline = ContinuousClock.now + configuration.requestDeadline
        let path = String(request.path.dropFirst("/info".count))
        try checkAccess(request, path: path)
        var url = try ProxyURL(infoPath: path, baseURL: configuration.baseURL)
        let info = url.info ?? InfoOptions()
        if info.expires > 0, info.expires < Int64(Date().timeIntervalSince1970) {
            throw ProxyError(status: 404, "the URL has expired")
        }
        guard allowsSource(url.source) else { throw .forbidden("the source URL is not allowed") }
        url.fetchURL = try fetchURL(for: url.source)
        // Requests for the same source and options share one fetch; the choice is unused (`fetch` answers an
        // info URL before it looks at it).
        let key = ProcessedImageKey(
            url: url.source, transformerKey: info.canonical, encoderKey: "json", variant: "serve-info")
        let shared = await result(for: key, url: url, choice: .jpegOrPNG, deadline: deadline)
        if shared.joined { metrics.joined() }
        let made: ResultCoalescer.Made
        switch shared.outcome {
        case .success(let value): made = value
        case .failure(let error): throw error
        }
        let headers = [
            ("Content-Type", "application/json"),
            ("Cache-Control", "public, max-age=\(configuration.cacheMaxAge)"),
            ("Expires", HTTPDate.format(Date(timeIntervalSinceNow: TimeInterval(configuration.cacheMaxAge)))),
            ("X-Content-Type-Options", "nosniff"), ("Content-Security-Policy", "default-src 'none'"),
        ]
        var response = ProxyResponse(status: 200, headers: made.sourceFields.applied(to: headers), body: made.data)
        response.cacheStatus = shared.joined ? .joined : .miss
        return response
    }

    /// The JSON summary of `url`'s source: its bytes and first frame fetched and decoded by the downloader
    /// (with its limits), summarized off the cooperative pool.
    func summary(of url: ProxyURL, info: InfoOptions, cancellation: JobCancellation) async throws(ProxyError)
        -> ResultCoalescer.Made
    {
        var context = ImageDownloadContext()
        context.colorSpace = .preserve
        let downloaded = try await download(url, options: sourceOptions, context: context, cancellation: cancellation)
        guard let image = downloaded.image, !image.frames.isEmpty else {
            throw ProxyError(status: 422, "the source is not an image that can be processed")
        }
        // A file that ends early decodes to the rows that arrived; its hashes would describe a picture the
        // file does not hold, so it is refused as an image URL refuses it.
        if image.isPartial { throw ProxyTransformer.truncated }
        let bytes = downloaded.data.count
        let summary = await Self.offPool { () -> Result<Data, PlaceholderError> in
            Result { () throws(PlaceholderError) -> Data in try ImageSummary(image, bytes: bytes, options: info).json }
        }
        switch summary {
        case .success(let json):
            return .init(
                data: json, sourceFields: SourceFields(downloaded.response?.headers, configuration: configuration))
        case .failure(let error):
            logger.info(
                "source cannot be summarized",
                metadata: ["source": "\(url.source.redactedString)", "error": "\(error)"])
            throw ProxyError(status: 422, "the source is not an image that can be processed")
        }
    }
}
