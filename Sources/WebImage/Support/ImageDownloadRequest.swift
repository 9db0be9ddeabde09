import Foundation
import WebImageTransport

/// A request as the downloader will send it; request modifiers receive and return this type.
public struct ImageDownloadRequest: Sendable, Hashable {
    /// The URL to fetch.
    public var url: URL
    /// Header fields sent with the request (the downloader's headers merged with per-request ones).
    public var headers: HTTPHeaders
    /// The idle timeout in seconds: the transfer fails when no byte arrives for this long.
    public var timeout: TimeInterval

    /// Creates a request.
    public init(
        url: URL, headers: HTTPHeaders = HTTPHeaders(),
        timeout: TimeInterval = ImageDownloaderConfig.defaultDownloadTimeout
    ) {
        self.url = url
        self.headers = headers
        self.timeout = timeout
    }
}
