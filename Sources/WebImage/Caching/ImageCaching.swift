/// A cache of decoded images, consulted by the downloader before the network when
/// `ImageDownloaderConfig.imageCache` is set.
///
/// Keys are opaque strings: the downloader composes the URL and the decode options that change the
/// pixels (thumbnail size, scale-down, first frame only) into one key, so one URL can be cached at
/// several sizes. Implementations must be safe to call from any thread.
///
/// ```swift
/// let cache: any ImageCaching = AutoPurgingImageCache()
/// cache.setImage(image, forKey: "https://example.com/a.png")
/// let hit = cache.image(forKey: "https://example.com/a.png")
/// ```
public protocol ImageCaching: Sendable {
    /// The image stored for `key`, or `nil`. A hit counts as an access for eviction order.
    func image(forKey key: String) -> Image?

    /// Stores `image` for `key`, replacing any image stored for it.
    func setImage(_ image: Image, forKey key: String)

    /// Removes the image stored for `key`, if any.
    func removeImage(forKey key: String)

    /// Removes every image.
    func removeAllImages()
}
