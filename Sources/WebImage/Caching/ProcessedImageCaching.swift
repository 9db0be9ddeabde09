import Foundation

/// A cache of processed images: the encoded bytes of an image after decoding, transforming and
/// encoding, so the same output is never made twice. `ImageDiskCache` is the default.
///
/// The downloader uses one through `ImageDownloaderConfig.processedImageCache` for requests whose
/// context names an `encoder`. Implementations must be safe to call from any thread.
///
/// ```swift
/// let cache: any ProcessedImageCaching = ImageDiskCache()
/// let key = ProcessedImageKey(url: url, transformerKey: "grayscale", encoder: WebPEncoder(quality: 75))
/// cache.store(webpBytes, for: key)
/// let hit = cache.data(for: key)
/// ```
public protocol ProcessedImageCaching: Sendable {
    /// The bytes stored for `key`, or `nil`. A hit counts as an access for eviction order.
    func data(for key: ProcessedImageKey) -> Data?

    /// Stores `data` for `key`, replacing what was stored for it.
    func store(_ data: Data, for key: ProcessedImageKey)

    /// Removes what is stored for `key`, if anything.
    func remove(_ key: ProcessedImageKey)

    /// Removes everything.
    func removeAll()
}

/// What a processed image is stored under: the source URL, the transformer's key, the encoder's key
/// (its format and every parameter, quality included), and a variant for anything else that changes
/// the pixels (the downloader puts its decode options there: thumbnail size, scale-down, first frame,
/// colour space).
///
/// A key holds no credentials, cookies or header fields: only requests whose bytes do not depend on
/// who asks use a processed-image cache (see `ImageDownloaderConfig.processedImageCache`).
public struct ProcessedImageKey: Sendable, Hashable {
    /// The URL the source image came from (without credentials or fragment).
    public var url: URL
    /// `ImageTransforming.key` of the transformer applied, or nil when none was.
    public var transformerKey: String?
    /// `ImageEncoding.key` of the encoder that made the bytes, e.g. `jpeg;q=85;…`.
    public var encoderKey: String
    /// Anything else that changed the output; empty by default.
    public var variant: String

    /// Creates a key from its parts.
    public init(url: URL, transformerKey: String? = nil, encoderKey: String, variant: String = "") {
        self.url = url
        self.transformerKey = transformerKey
        self.encoderKey = encoderKey
        self.variant = variant
    }

    /// Creates the key of the output of `encoder`.
    public init(url: URL, transformerKey: String? = nil, encoder: any ImageEncoding, variant: String = "") {
        self.init(url: url, transformerKey: transformerKey, encoderKey: encoder.key, variant: variant)
    }

    /// The key as one string for the index: each part length-prefixed, so no two keys share one.
    var stringValue: String {
        let url = self.url.absoluteString
        let transformer = transformerKey.map { "\($0.utf8.count):\($0)" } ?? "-"
        return
            "\(url.utf8.count):\(url) t\(transformer) e\(encoderKey.utf8.count):\(encoderKey) "
            + "v\(variant.utf8.count):\(variant)"
    }
}
