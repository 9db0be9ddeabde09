import Crypto
import Foundation
import Logging
import WebImage

/// The image proxy's engine, free of any HTTP server: a request's method, path and two header fields in,
/// a status, header fields and body out. `ProxyServer` puts it behind Hummingbird.
///
/// One request: check the signature (403) → parse the URL (400) → check the source against
/// `allowedSources` (403) → decide the format and the ETag, and answer `If-None-Match` with 304 without
/// fetching → fetch, decode (first frame), resize and encode through one `ImageDownloader` call, with
/// the destination policy and limits of the configuration → 200 with the image.
///
/// ```swift
/// let proxy = ImageProxy(configuration: configuration)
/// let response = await proxy.respond(to: ProxyRequest(path: "/insecure/w:300/plain/https://example.com/a.jpg"))
/// response.status  // 200
/// ```
public final class ImageProxy: Sendable {
    /// The configuration, as given.
    public let configuration: ImageProxyConfiguration
    private let signature: URLSignature
    private let downloader: ImageDownloader
    private let logger: Logger

    /// A proxy fetching through its own downloader, configured from `configuration`.
    public init(configuration: ImageProxyConfiguration, logger: Logger = Logger(label: "WebImageProxy")) {
        self.configuration = configuration
        self.signature = URLSignature(keys: configuration.signingKeys)
        self.logger = logger
        var config = ImageDownloaderConfig.default
        config.destinationPolicy = .publicOnly.allowing(configuration.allowedDestinations)
        config.maximumResponseSize = configuration.maximumSourceBytes
        config.maximumImagePixels = configuration.maximumSourcePixels
        config.maximumAnimationFrames = configuration.maximumAnimationFrames
        let seconds = Self.seconds(configuration.requestDeadline)
        config.totalTimeout = seconds
        config.downloadTimeout = min(ImageDownloaderConfig.defaultDownloadTimeout, seconds)
        config.acceptableStatusCodes = Set(200..<300)
        config.cookieStorage = nil  // a private jar: one client's cookies never reach another's request
        config.logger = logger
        self.downloader = ImageDownloader(config: config)
    }

    /// The answer to `request`. Never throws: every failure is a status with a plain-text sentence.
    public func respond(to request: ProxyRequest) async -> ProxyResponse {
        if request.path == "/health" {
            return ProxyResponse(status: 200, contentType: "text/plain", body: Data("ok\n".utf8))
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            var refused = ProxyResponse(error: ProxyError(status: 405, "only GET and HEAD are served"))
            refused.headers.append(("Allow", "GET, HEAD"))
            return refused
        }
        var response: ProxyResponse
        do {
            response = try await process(request)
        } catch {
            response = ProxyResponse(error: error)
        }
        if request.method == "HEAD" { response.body = Data() }
        return response
    }

    private func process(_ request: ProxyRequest) async throws(ProxyError) -> ProxyResponse {
        let (signatureText, signedPath) = try ProxyURL.splitSignature(request.path)
        let unsignedAllowed = configuration.allowsUnsigned && signatureText == "insecure"
        guard unsignedAllowed || signature.isValid(signature: signatureText, for: signedPath) else {
            throw .forbidden("invalid signature")
        }
        let url = try ProxyURL(path: request.path)
        let sourceText = url.source.absoluteString
        guard configuration.allowedSources.isEmpty || configuration.allowedSources.contains(where: sourceText.hasPrefix)
        else {
            throw .forbidden("the source URL is not allowed")
        }
        let limit = configuration.maximumResultDimension
        guard url.options.scaledWidth <= limit, url.options.scaledHeight <= limit else {
            throw .badRequest("the requested size is larger than \(limit) pixels")
        }

        let choice = FormatChoice(format: url.options.format, accept: request.accept)
        let etag = Self.etag(source: sourceText, options: url.options, choice: choice)
        var headers = [
            ("Cache-Control", "public, max-age=\(configuration.cacheMaxAge)"), ("ETag", etag),
            ("X-Content-Type-Options", "nosniff"), ("Content-Security-Policy", "default-src 'none'"),
        ]
        if choice.isNegotiated { headers.append(("Vary", "Accept")) }
        if let ifNoneMatch = request.ifNoneMatch, Self.matches(ifNoneMatch, etag) {
            return ProxyResponse(status: 304, headers: headers, body: Data())
        }

        let data = try await fetch(url, choice: choice)
        let format = ImageFormat.detect(data)
        let contentType =
            ProxyOutputFormat.allCases.first { $0.imageFormat == format }?.mimeType ?? "application/octet-stream"
        headers.insert(("Content-Type", contentType), at: 0)
        return ProxyResponse(status: 200, headers: headers, body: data)
    }

    /// Fetch, decode, transform and encode in the downloader, raced against the request's deadline.
    private func fetch(_ url: ProxyURL, choice: FormatChoice) async throws(ProxyError) -> Data {
        let context = {
            var context = ImageDownloadContext()
            context.transformer = ProxyTransformer(options: url.options)
            context.encoder = choice.encoder(quality: url.options.quality)
            return context
        }()
        let deadline = configuration.requestDeadline
        let downloader = self.downloader
        let source = url.source
        let outcome = await withTaskGroup(of: FetchOutcome.self) { group in
            group.addTask {
                do throws(ImageDownloaderError) {
                    return .finished(
                        try await downloader.image(for: source, options: [.decodeFirstFrameOnly], context: context))
                } catch {
                    return .failed(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: deadline)
                return .deadline
            }
            let first = await group.next() ?? .deadline
            group.cancelAll()
            return first
        }
        switch outcome {
        case .finished(let result):
            if let image = result.image, image.frameCount > configuration.maximumAnimationFrames {
                throw ProxyError(status: 422, "the source has more animation frames than allowed")
            }
            return result.data
        case .deadline:
            logger.info("deadline passed", metadata: ["source": "\(source)"])
            throw ProxyError(status: 504, "the request took longer than its deadline")
        case .failed(let error):
            logger.info("source failed", metadata: ["source": "\(source)", "error": "\(error)"])
            throw Self.proxyError(for: error)
        }
    }

    private enum FetchOutcome: Sendable {
        case finished(ImageDownloadResult)
        case failed(ImageDownloaderError)
        case deadline
    }

    /// The status a source failure is answered with; the sentence carries no detail of the failure.
    static func proxyError(for error: ImageDownloaderError) -> ProxyError {
        switch error.code {
        case .invalidDownloadStatusCode where error.statusCode == 404 || error.statusCode == 410:
            ProxyError(status: 404, "the source image was not found")
        case .timedOut, .cancelled:
            ProxyError(status: 504, "the source did not answer in time")
        case .destinationNotAllowed:
            ProxyError(status: 403, "the source's address is not allowed")
        case .badImageData:
            ProxyError(status: 422, "the source is not an image that can be processed")
        default:
            ProxyError(status: 502, "the source could not be fetched")
        }
    }

    /// A strong ETag over the source, the canonical options and the format choice.
    static func etag(source: String, options: ProcessingOptions, choice: FormatChoice) -> String {
        let digest = SHA256.hash(data: Data("\(source)\n\(options.canonical)\n\(choice.tag)".utf8))
        return "\"" + digest.prefix(16).map { String(format: "%02x", $0) }.joined() + "\""
    }

    /// Whether an `If-None-Match` value names `etag` (or is `*`); weak validators compare by their opaque
    /// part, as RFC 9110 asks for `If-None-Match`.
    static func matches(_ ifNoneMatch: String, _ etag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { item in
            var tag = item.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}

/// What the proxy reads of an HTTP request.
public struct ProxyRequest: Sendable, Hashable {
    /// `GET` or `HEAD` (others are answered 405).
    public var method: String
    /// The request target's path, still percent-encoded, without the query.
    public var path: String
    /// The `Accept` header's value, nil when absent.
    public var accept: String?
    /// The `If-None-Match` header's value, nil when absent.
    public var ifNoneMatch: String?

    /// Creates a request.
    public init(method: String = "GET", path: String, accept: String? = nil, ifNoneMatch: String? = nil) {
        self.method = method
        self.path = path
        self.accept = accept
        self.ifNoneMatch = ifNoneMatch
    }
}

/// What the proxy answers.
public struct ProxyResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// Header fields in order (`Content-Length` is the server's to add).
    public var headers: [(String, String)]
    /// The body.
    public var body: Data

    /// Creates a response.
    public init(status: Int, headers: [(String, String)] = [], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response of one type, with `nosniff`.
    init(status: Int, contentType: String, body: Data) {
        self.init(
            status: status, headers: [("Content-Type", contentType), ("X-Content-Type-Options", "nosniff")],
            body: body)
    }

    /// The plain-text answer for `error`, never cached.
    init(error: ProxyError) {
        self.init(
            status: error.status,
            headers: [
                ("Content-Type", "text/plain; charset=utf-8"), ("X-Content-Type-Options", "nosniff"),
                ("Content-Security-Policy", "default-src 'none'"), ("Cache-Control", "no-store"),
            ],
            body: Data((error.message + "\n").utf8))
    }

    /// The value of header `name` (case-insensitive), the first when repeated.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}
