import Foundation

/// The error every WebImage download reports, numbered like SDWebImage's `SDWebImageError`.
///
/// Each error carries the URL it concerns and, where they apply, the HTTP status and response head or
/// libcurl's result code and the text of its error buffer.
///
/// ```swift
/// if let error = error as? ImageDownloaderError, error.code == .invalidDownloadStatusCode {
///     print("server said", error.statusCode ?? 0)
/// }
/// ```
public struct ImageDownloaderError: Error, Sendable, CustomStringConvertible {
    /// What went wrong; raw values follow SDWebImage's numbering, transport failures start at 3000.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The numeric code.
        public let rawValue: Int
        /// Creates a code from its number.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// 1000: nil or unparsable URL, or a scheme outside `allowedProtocols`.
        public static let invalidURL = Code(rawValue: 1000)
        /// 1001: empty or undecodable body, a decryptor that returned nil, or a 0-pixel image.
        public static let badImageData = Code(rawValue: 1001)
        /// 1002: a 304 with nothing cached, or `ignoreCachedResponse` and the result came from cache.
        public static let cacheNotModified = Code(rawValue: 1002)
        /// 2000: the request modifier returned nil, or the operation could not be created.
        public static let invalidDownloadOperation = Code(rawValue: 2000)
        /// 2001: the status code is outside `acceptableStatusCodes`.
        // swift-format-ignore: DontRepeatTypeInStaticProperties
        // SDWebImage's name (SDWebImageErrorInvalidDownloadStatusCode), kept for users of its API.
        public static let invalidDownloadStatusCode = Code(rawValue: 2001)
        /// 2002: this caller's token was cancelled, `cancelAllDownloads()` ran, or the Task was cancelled.
        public static let cancelled = Code(rawValue: 2002)
        /// 2003: the response modifier returned nil.
        public static let invalidDownloadResponse = Code(rawValue: 2003)
        /// 2004: the MIME type is outside `acceptableContentTypes`.
        public static let invalidDownloadContentType = Code(rawValue: 2004)

        /// 3000: a transport failure without a more specific code.
        public static let transport = Code(rawValue: 3000)
        /// 3001: no byte arrived within the idle timeout, or the connection could not be made in time.
        public static let timedOut = Code(rawValue: 3001)
        /// 3002: the connection was refused or the host could not be reached.
        public static let cannotConnect = Code(rawValue: 3002)
        /// 3003: the host name did not resolve.
        public static let cannotResolveHost = Code(rawValue: 3003)
        /// 3004: the TLS handshake failed or the certificate was not trusted.
        public static let sslFailure = Code(rawValue: 3004)
        /// 3005: more redirects than `maximumRedirects`.
        public static let tooManyRedirects = Code(rawValue: 3005)
        /// 3006: the body exceeded `maximumResponseSize`; the transfer was aborted there.
        public static let responseTooLarge = Code(rawValue: 3006)
        /// 3007: the connection closed before the whole body arrived.
        public static let connectionLost = Code(rawValue: 3007)
        /// 3008: a redirect pointed at a scheme outside `allowedProtocols`.
        public static let unsupportedProtocol = Code(rawValue: 3008)
        /// 3009: the body could not be decoded from its `Content-Encoding`.
        public static let badContentEncoding = Code(rawValue: 3009)
        /// 3010: `destinationPolicy` refused every address the download would connect to (the message
        /// names them); nothing was sent.
        public static let destinationNotAllowed = Code(rawValue: 3010)
        /// 3011: the body bytes this downloader's downloads hold together (`maximumInFlightBodyBytes`) had no
        /// room for this body's next bytes because other downloads were holding them: the same download can
        /// succeed later (a retry policy retries it). A body larger than the whole limit on its own fails
        /// with `responseTooLarge` instead.
        public static let inFlightBodyLimit = Code(rawValue: 3011)

        /// The code's name, e.g. "badImageData".
        public var description: String {
            switch self {
            case .invalidURL: "invalidURL"
            case .badImageData: "badImageData"
            case .cacheNotModified: "cacheNotModified"
            case .invalidDownloadOperation: "invalidDownloadOperation"
            case .invalidDownloadStatusCode: "invalidDownloadStatusCode"
            case .cancelled: "cancelled"
            case .invalidDownloadResponse: "invalidDownloadResponse"
            case .invalidDownloadContentType: "invalidDownloadContentType"
            case .transport: "transport"
            case .timedOut: "timedOut"
            case .cannotConnect: "cannotConnect"
            case .cannotResolveHost: "cannotResolveHost"
            case .sslFailure: "sslFailure"
            case .tooManyRedirects: "tooManyRedirects"
            case .responseTooLarge: "responseTooLarge"
            case .connectionLost: "connectionLost"
            case .unsupportedProtocol: "unsupportedProtocol"
            case .badContentEncoding: "badContentEncoding"
            case .destinationNotAllowed: "destinationNotAllowed"
            case .inFlightBodyLimit: "inFlightBodyLimit"
            default: "code\(rawValue)"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for people, e.g. "HTTP status 404 is not acceptable".
    public var message: String
    /// The URL the failed download was for, when there was one.
    public var url: URL?
    /// The HTTP status of the response, when one arrived.
    public var statusCode: Int?
    /// The response head, when one arrived.
    public var response: TransferResponse?
    /// libcurl's `CURLcode`, for transport failures.
    public var curlCode: Int?
    /// A lower-level error this one wraps (a decoder's, a cache's).
    public var underlying: (any Error & Sendable)?
    /// The attempts the caller's download made (`config.retryPolicy`); this is the last one's error.
    public var attempts = 1

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, url: URL? = nil, statusCode: Int? = nil,
        response: TransferResponse? = nil, curlCode: Int? = nil, underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.url = url
        self.statusCode = statusCode
        self.response = response
        self.curlCode = curlCode
        self.underlying = underlying
    }

    /// "badImageData (1001): …", with the URL when known.
    public var description: String {
        var text = "\(code) (\(code.rawValue)): \(message)"
        if let url { text += " [\(url.redactedString)]" }
        return text
    }
}

extension ImageDownloaderError {
    /// The downloader's report of an error a decoder, transformer or encoder threw: `badImageData`, with
    /// the codec's message (after `context`, when given) and the codec's error as `underlying`. This is
    /// where WebImageCodecs' `ImageCodecError` becomes the downloader's error. A custom codec that throws
    /// an `ImageDownloaderError` keeps it, with the download's URL.
    static func codecFailure(_ error: any Error, url: URL?, context: String?) -> ImageDownloaderError {
        if var error = error as? ImageDownloaderError {
            error.url = url
            return error
        }
        let detail = (error as? ImageCodecError)?.message ?? String(describing: error)
        let message: String
        if let context {
            message = "\(context): \(detail)"
        } else {
            message = error is ImageCodecError ? detail : "the data could not be decoded: \(detail)"
        }
        return ImageDownloaderError(.badImageData, message, url: url, underlying: error)
    }
}

extension ImageDownloaderError {
    /// The downloader's report of a transport failure: the transport's kind as the matching code, with its
    /// message, URL, response head and curl code. A transfer the downloader itself ended (a status or
    /// content type it refuses, a body over a limit) reports the downloader's own error.
    init(transportError error: TransportError) {
        if error.kind == .aborted, let reason = error.reason {
            if var own = reason as? ImageDownloaderError {
                if own.url == nil { own.url = error.url }
                self = own
            } else {
                self.init(.transport, String(describing: reason), url: error.url, underlying: reason)
            }
            return
        }
        let code: Code =
            switch error.kind {
            case .setupFailed: .invalidDownloadOperation
            case .invalidURL: .invalidURL
            case .failed, .aborted: .transport
            case .timedOut: .timedOut
            case .cannotConnect: .cannotConnect
            case .cannotResolveHost: .cannotResolveHost
            case .sslFailure: .sslFailure
            case .tooManyRedirects: .tooManyRedirects
            case .responseTooLarge: .responseTooLarge
            case .connectionLost: .connectionLost
            case .unsupportedProtocol: .unsupportedProtocol
            case .badContentEncoding: .badContentEncoding
            case .destinationNotAllowed: .destinationNotAllowed
            case .cancelled: .cancelled
            }
        self.init(
            code, error.message, url: error.url, statusCode: error.response?.statusCode, response: error.response,
            curlCode: error.curlCode)
        // The host the caller's resolver had no addresses for (`ImageDownloaderConfig.hostAddresses`).
        if let host = error.unresolvedHost { underlying = UnresolvedHost(host: host) }
    }
}

/// The `underlying` error of a `cannotResolveHost` failure whose host the downloader's own address provider
/// (`ImageDownloaderConfig.hostAddresses`) had no addresses for: resolve `host`, then try again.
public struct UnresolvedHost: Error, Sendable, Equatable {
    /// The host name, lowercased.
    public var host: String
}
