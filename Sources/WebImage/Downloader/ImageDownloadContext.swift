import Dispatch
import Foundation

/// Per-request settings that are not flags (SDWebImage's context dictionary, typed).
///
/// When several callers share one URL, the first decides the transfer (modifiers, headers); each
/// caller's `thumbnailPixelSize` and `callbackQueue` are still its own.
///
/// ```swift
/// var context = ImageDownloadContext()
/// context.thumbnailPixelSize = PixelSize(width: 128, height: 128)
/// downloader.downloadImage(with: url, context: context) { image, _, _, _ in }
/// ```
public struct ImageDownloadContext: Sendable {
    /// Decode to fit inside this size, keeping the aspect ratio. nil decodes full size.
    public var thumbnailPixelSize: PixelSize?
    /// Used instead of `config.requestModifier` for this request.
    public var requestModifier: (any ImageDownloaderRequestModifying)?
    /// Used instead of `config.responseModifier` for this request.
    public var responseModifier: (any ImageDownloaderResponseModifying)?
    /// Used instead of `config.decryptor` for this request.
    public var decryptor: (any ImageDownloaderDecrypting)?
    /// Where this caller's completion runs; overrides `config.callbackQueue`.
    public var callbackQueue: DispatchQueue?
    /// Header fields added to (or, with an empty value, removed from) this request only.
    public var headers: HTTPHeaders = HTTPHeaders()
    /// What this caller's decode does with a file's colour space (`ImageDecodingOptions.colorSpace`):
    /// `.sRGB` (the default) converts, `.preserve` keeps the pixels and `Image.iccProfile`. Each caller's
    /// own, like `thumbnailPixelSize`.
    public var colorSpace: ImageColorSpace = .sRGB
    /// Decode a file's embedded thumbnail instead of its main image when it has one
    /// (`ImageDecodingOptions.prefersEmbeddedThumbnail`: HEIC); each caller's own, and part of the
    /// image-cache key. `false` by default.
    public var prefersEmbeddedThumbnail = false
    /// Keep 16 bits a channel where the file has them (`ImageDecodingOptions.keepsSixteenBits`: a 16-bit PNG
    /// decoded at full size), so a PNG encoder writes 16 bits; each caller's own, and part of the image-cache
    /// key. `false` by default.
    public var keepsSixteenBits = false
    /// Keep the file's EXIF block in `Image.exif` (`ImageDecodingOptions.keepsEXIF`), for a transformer or
    /// encoder that writes metadata into a result; each caller's own, and part of the image-cache key.
    /// `false` by default.
    public var keepsEXIF = false
    /// Applied to this caller's decoded image before its completion (not to progressive partial images);
    /// its `key` joins the image-cache key, and its `minimumDecodeSize` lets the decoder shrink on load.
    /// A transformer that throws fails the caller with `badImageData`. nil by default.
    public var transformer: (any ImageTransforming)?
    /// Encodes this caller's image (after the transformer): the completion's `data` is then the encoded
    /// bytes instead of the downloaded ones. With `config.processedImageCache`, they are looked up there
    /// first (when the operation starts), by URL, transformer key, encoder key and decode options: when
    /// every caller of the operation has a hit, each completes with a nil image and its stored bytes
    /// (nothing is downloaded, decoded or encoded); otherwise the operation downloads, decodes,
    /// transforms, encodes and stores. Requests that may not use shared caches (`RequestTrust`:
    /// credentials, cookies, TLS checks off, a secret header field, a restricting destination policy)
    /// neither read nor write it. The decoded-image cache is not consulted for such a caller (its hits
    /// have no encoded bytes) but is still filled. An encoder that throws fails the caller with
    /// `badImageData`; ignored with `avoidDecodeImage`. nil by default.
    public var encoder: (any ImageEncoding)?
    /// This request's own body limit, under `config.maximumResponseSize` (a larger value changes nothing):
    /// its transfer stops there with `responseTooLarge`, and so does a cached body larger than it. Requests
    /// of one URL with different limits never share a transfer. These three limits are part of the image
    /// caches' keys when set, so nothing made under looser ones reaches this caller from a cache. nil (the
    /// configuration's) by default.
    public var maximumResponseSize: Int64?
    /// This caller's own `maximumImagePixels`, under `config.maximumImagePixels` (a larger value changes
    /// nothing): its decode refuses a file declaring more, before allocating. nil by default.
    public var maximumImagePixels: Int?
    /// This caller's own `maximumAnimationFrames`, under `config.maximumAnimationFrames` (a larger value
    /// changes nothing): its decode keeps at most this many frames. nil by default.
    public var maximumAnimationFrames: Int?
    /// Told of each step this caller's image went through (the transfer, decode, transform, encode) with
    /// the times it ran, for tracing: `webimage serve` turns them into OpenTelemetry spans. A step shared
    /// with other callers of the URL (one transfer; one decode per distinct decode options) is reported to
    /// each of them. Not part of any cache key. nil by default.
    public var stepObserver: (any ImageDownloadStepObserving)?

    /// Creates an empty context.
    public init(
        thumbnailPixelSize: PixelSize? = nil, requestModifier: (any ImageDownloaderRequestModifying)? = nil,
        responseModifier: (any ImageDownloaderResponseModifying)? = nil,
        decryptor: (any ImageDownloaderDecrypting)? = nil, callbackQueue: DispatchQueue? = nil
    ) {
        self.thumbnailPixelSize = thumbnailPixelSize
        self.requestModifier = requestModifier
        self.responseModifier = responseModifier
        self.decryptor = decryptor
        self.callbackQueue = callbackQueue
    }
}

/// A step of a download's work, as `ImageDownloadStepObserving` hears of it.
public enum ImageDownloadStep: String, Sendable, CaseIterable {
    /// The transfer, from its request to the whole body (a cached body's lookup when it came from the HTTP
    /// cache).
    case fetch
    /// The body decoded to an image.
    case decode
    /// `ImageDownloadContext.transformer` applied.
    case transform
    /// `ImageDownloadContext.encoder` applied.
    case encode
}

/// Hears when each step of a caller's download ran (`ImageDownloadContext.stepObserver`).
///
/// Called on the thread that ran the step, right after it: keep it short (record, do not wait).
///
/// ```swift
/// struct StepLog: ImageDownloadStepObserving {
///     func downloadStep(_ step: ImageDownloadStep, ranFrom start: Date, to end: Date, error: (any Error)?) {
///         print(step, end.timeIntervalSince(start), error.map { "\($0)" } ?? "ok")
///     }
/// }
/// ```
public protocol ImageDownloadStepObserving: Sendable {
    /// `step` ran from `start` to `end` (wall-clock times), and failed with `error` when it is not nil.
    func downloadStep(_ step: ImageDownloadStep, ranFrom start: Date, to end: Date, error: (any Error)?)
}
