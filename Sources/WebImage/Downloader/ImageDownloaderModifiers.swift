import Foundation

/// Changes a request before it is sent; returning nil fails the download with
/// `invalidDownloadOperation` (2000), synchronously.
public protocol ImageDownloaderRequestModifying: Sendable {
    /// The request to send instead, or nil to refuse the download.
    func modifiedRequest(_ request: ImageDownloadRequest) -> ImageDownloadRequest?
}

/// Changes a response head before it is validated; returning nil fails with `invalidDownloadResponse` (2003).
public protocol ImageDownloaderResponseModifying: Sendable {
    /// The response to use instead, or nil to refuse it.
    func modifiedResponse(_ response: TransferResponse) -> TransferResponse?
}

/// Turns downloaded bytes into image bytes (for example, decrypting them); returning nil fails with
/// `badImageData` (1001). Progressive loading is off while a decryptor is set.
public protocol ImageDownloaderDecrypting: Sendable {
    /// The decrypted bytes, or nil when they cannot be decrypted.
    func decryptedData(_ data: Data, response: TransferResponse?) -> Data?
}

/// A request modifier made from a closure.
///
/// ```swift
/// let modifier = ImageDownloaderRequestModifier { request in
///     var request = request
///     request.headers["Authorization"] = "Bearer \(token)"
///     return request
/// }
/// ```
public struct ImageDownloaderRequestModifier: ImageDownloaderRequestModifying {
    private let block: @Sendable (ImageDownloadRequest) -> ImageDownloadRequest?
    /// Wraps `block`.
    public init(_ block: @escaping @Sendable (ImageDownloadRequest) -> ImageDownloadRequest?) { self.block = block }
    /// Runs the closure.
    public func modifiedRequest(_ request: ImageDownloadRequest) -> ImageDownloadRequest? { block(request) }
}

/// A response modifier made from a closure.
public struct ImageDownloaderResponseModifier: ImageDownloaderResponseModifying {
    private let block: @Sendable (TransferResponse) -> TransferResponse?
    /// Wraps `block`.
    public init(_ block: @escaping @Sendable (TransferResponse) -> TransferResponse?) { self.block = block }
    /// Runs the closure.
    public func modifiedResponse(_ response: TransferResponse) -> TransferResponse? { block(response) }
}

/// A decryptor made from a closure.
public struct ImageDownloaderDecryptor: ImageDownloaderDecrypting {
    private let block: @Sendable (Data, TransferResponse?) -> Data?
    /// Wraps `block`.
    public init(_ block: @escaping @Sendable (Data, TransferResponse?) -> Data?) { self.block = block }
    /// Runs the closure.
    public func decryptedData(_ data: Data, response: TransferResponse?) -> Data? { block(data, response) }
}
