import Foundation
import Testing

@testable import WebImage

@Suite(.timeLimit(.minutes(5))) struct AutoPurgingImageCacheTests {
    /// A one-row image whose pixels take `bytes` bytes.
    static func image(bytes: Int, fill: UInt8 = 0) -> Image {
        let width = bytes / 4
        let frame = ImageFrame(
            width: width, height: 1, bytesPerRow: bytes, pixels: [UInt8](repeating: fill, count: bytes))
        return Image(format: .png, width: width, height: 1, frames: [frame])
    }

    @Test func accountsForPixelBytes() {
        let cache = AutoPurgingImageCache()
        #expect(cache.memoryCapacity == 100 * 1024 * 1024)
        #expect(cache.preferredMemoryUsageAfterPurge == 60 * 1024 * 1024)
        cache.setImage(Self.image(bytes: 400), forKey: "a")
        cache.setImage(Self.image(bytes: 800), forKey: "b")
        #expect(cache.memoryUsage == 1200)
        cache.setImage(Self.image(bytes: 100), forKey: "a")  // replacing re-charges
        #expect(cache.memoryUsage == 900)
        #expect(cache.image(forKey: "a")?.pixelByteCount == 100)
        cache.removeImage(forKey: "b")
        #expect(cache.memoryUsage == 100)
        #expect(cache.image(forKey: "b") == nil)
        cache.removeImage(forKey: "missing")
        cache.removeAllImages()
        #expect(cache.memoryUsage == 0)
        #expect(cache.count == 0)
    }

    @Test func purgesLeastRecentlyAccessedDownToThePreferredUsage() {
        let cache = AutoPurgingImageCache(memoryCapacity: 1000, preferredMemoryUsageAfterPurge: 600)
        for key in ["a", "b", "c", "d"] { cache.setImage(Self.image(bytes: 200), forKey: key) }
        #expect(cache.image(forKey: "a") != nil)  // a becomes the most recent
        cache.setImage(Self.image(bytes: 200), forKey: "e")  // exactly at capacity: no purge
        #expect(cache.memoryUsage == 1000)
        #expect(cache.count == 5)
        cache.setImage(Self.image(bytes: 200), forKey: "f")  // 1200 > 1000: purge b, c, d
        #expect(cache.memoryUsage == 600)
        #expect(cache.keysByRecency == ["f", "e", "a"])
        for key in ["b", "c", "d"] { #expect(cache.image(forKey: key) == nil) }
    }

    @Test func anImageLargerThanTheCapacityIsNotKept() {
        let cache = AutoPurgingImageCache(memoryCapacity: 1000, preferredMemoryUsageAfterPurge: 600)
        cache.setImage(Self.image(bytes: 400), forKey: "small")
        cache.setImage(Self.image(bytes: 400), forKey: "big")
        cache.setImage(Self.image(bytes: 1004), forKey: "big")
        #expect(cache.image(forKey: "big") == nil)
        #expect(cache.image(forKey: "small") != nil)
        #expect(cache.memoryUsage == 400)
    }

    @Test func staysConsistentUnderConcurrentAccess() {
        let cache = AutoPurgingImageCache(memoryCapacity: 20_000, preferredMemoryUsageAfterPurge: 12_000)
        let images = (0..<8).map { Self.image(bytes: 400 * ($0 + 1), fill: UInt8($0)) }
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var state = UInt64(worker + 1)
            for _ in 0..<5000 {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let key = "k\(state >> 58)"  // 64 keys
                let size = Int(state >> 40 & 7)
                switch state >> 33 & 3 {
                case 0: cache.removeImage(forKey: key)
                case 1: _ = cache.image(forKey: key)
                default: cache.setImage(images[size], forKey: key)
                }
            }
        }
        #expect(cache.memoryUsage <= 20_000)
        let keys = cache.keysByRecency
        #expect(keys.count == cache.count)
        let total = keys.compactMap { cache.image(forKey: $0)?.pixelByteCount }.reduce(0, +)
        #expect(total == cache.memoryUsage)
        // Every image is intact: its pixels are the fill its size was made with.
        for key in keys {
            guard let image = cache.image(forKey: key), let first = image.frames.first else { continue }
            #expect(first.pixels.count == 400 * (Int(first.pixels[0]) + 1))
        }
    }
}

@Suite(.timeLimit(.minutes(5))) struct CostLRUCacheTests {
    @Test func keepsRecencyOrderAndCostsThroughSlotReuse() {
        var lru = CostLRU<Int, String>()
        for key in 0..<5 { lru.setValue("\(key)", forKey: key, cost: 10) }
        #expect(lru.keysByRecency == [4, 3, 2, 1, 0])
        #expect(lru.value(forKey: 0) == "0")
        #expect(lru.keysByRecency == [0, 4, 3, 2, 1])
        lru.removeValue(forKey: 3)
        lru.setValue("5", forKey: 5, cost: 5)  // reuses 3's slot
        #expect(lru.keysByRecency == [5, 0, 4, 2, 1])
        #expect(lru.totalCost == 45)
        #expect(lru.trim(toCost: 20) == [1, 2, 4])
        #expect(lru.keysByRecency == [5, 0])
        #expect(lru.peek(5) == "5")
        lru.removeValue(forKey: 5)
        lru.removeValue(forKey: 0)
        #expect(lru.count == 0 && lru.totalCost == 0 && lru.keysByRecency.isEmpty)
        lru.setValue("x", forKey: 9, cost: 1)
        #expect(lru.keysByRecency == [9])
    }
}
