import Locking

/// The default `ImageCaching`: decoded images in memory, purged by least-recent access.
///
/// Each image costs `Image.pixelByteCount` bytes. When an insertion takes the total above
/// `memoryCapacity`, the least recently accessed images are removed until the total is at most
/// `preferredMemoryUsageAfterPurge` — the semantics of AlamofireImage's `AutoPurgingImageCache`:
/// purging to a lower mark leaves room for several insertions before the next purge.
///
/// An image whose cost alone exceeds `memoryCapacity` is not stored (it would purge everything,
/// itself included); any image previously stored under its key is removed.
///
/// Every operation takes one `Lock` and is O(1) apart from the images a purge removes.
///
/// ```swift
/// let cache = AutoPurgingImageCache(memoryCapacity: 100 * 1024 * 1024,
///                                   preferredMemoryUsageAfterPurge: 60 * 1024 * 1024)
/// cache.setImage(image, forKey: url.absoluteString)
/// if let cached = cache.image(forKey: url.absoluteString) { show(cached) }
/// print(cache.memoryUsage)  // bytes of pixels held
/// ```
public final class AutoPurgingImageCache: ImageCaching {
    /// The total cost above which an insertion triggers a purge, in bytes. 100 MB by default.
    public let memoryCapacity: Int

    /// The total cost a purge reduces the cache to, in bytes. 60 MB by default.
    public let preferredMemoryUsageAfterPurge: Int

    private let storage = Lock(CostLRU<String, Image>())

    /// Creates an empty cache.
    ///
    /// - Parameters:
    ///   - memoryCapacity: bytes of pixels above which the cache purges. Negative values count as 0.
    ///   - preferredMemoryUsageAfterPurge: bytes of pixels left after a purge; clamped to
    ///     `0...memoryCapacity`.
    public init(memoryCapacity: Int = 100 * 1024 * 1024, preferredMemoryUsageAfterPurge: Int = 60 * 1024 * 1024) {
        let capacity = max(0, memoryCapacity)
        self.memoryCapacity = capacity
        self.preferredMemoryUsageAfterPurge = min(max(0, preferredMemoryUsageAfterPurge), capacity)
    }

    /// Bytes of pixels currently held.
    public var memoryUsage: Int { storage.withLock { $0.totalCost } }

    /// Number of images currently held.
    public var count: Int { storage.withLock { $0.count } }

    /// The image stored for `key`, marking it most recently accessed.
    public func image(forKey key: String) -> Image? {
        storage.withLock { $0.value(forKey: key) }
    }

    /// Stores `image` for `key` as the most recently accessed image, then purges if the total cost
    /// exceeds `memoryCapacity`.
    public func setImage(_ image: Image, forKey key: String) {
        let cost = image.pixelByteCount
        // The previous image (if any) is released after unlocking so its deallocation, which can be
        // hundreds of megabytes of pixels, does not run under the lock.
        let released: Image? = storage.withLock { lru in
            guard cost <= memoryCapacity else { return lru.removeValue(forKey: key) }
            let previous = lru.peek(key)
            lru.setValue(image, forKey: key, cost: cost)
            if lru.totalCost > memoryCapacity {
                lru.trim(toCost: preferredMemoryUsageAfterPurge)
            }
            return previous
        }
        _ = released
    }

    /// Removes the image stored for `key`, if any.
    public func removeImage(forKey key: String) {
        let released = storage.withLock { $0.removeValue(forKey: key) }
        _ = released
    }

    /// Removes every image.
    public func removeAllImages() {
        storage.withLock { $0.removeAll() }
    }

    /// Keys from most to least recently accessed; O(n), for tests and diagnostics.
    var keysByRecency: [String] { storage.withLock { $0.keysByRecency } }
}
