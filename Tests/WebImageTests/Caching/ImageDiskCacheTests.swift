import Foundation
import TestSupport
import Testing

@testable import WebImage

/// The processed-image disk cache on its own: round trip, persistence, LRU under the byte limit,
/// maximum age and damaged files. Crashes and concurrent processes: `ImageDiskCacheCrashTests`.
@Suite(.timeLimit(.minutes(5))) struct ImageDiskCacheTests {
    typealias Support = CachingTestSupport
    let t0 = CachingTestSupport.t0

    static func key(_ path: String, transformer: String? = "grayscale", encoder: String = "png;level=6;icc=1")
        -> ProcessedImageKey
    {
        ProcessedImageKey(url: CachingTestSupport.url(path), transformerKey: transformer, encoderKey: encoder)
    }

    private func fileCount(_ cache: ImageDiskCache) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: cache.filesDirectory.path).count
    }

    @Test func storedBytesReadBackFromAnotherInstance() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = LogCollector()
        let bytes = Support.body(seed: 1, count: 30_000)
        do {
            let first = ImageDiskCache(directory: directory, logger: log.logger)
            first.store(bytes, for: Self.key("a.png"), now: t0)
            #expect(first.data(for: Self.key("a.png"), now: t0 + 1) == bytes)
            #expect(first.currentByteCount == bytes.count)
        }
        let second = ImageDiskCache(directory: directory, logger: log.logger)
        #expect(second.data(for: Self.key("a.png"), now: t0 + 2) == bytes)
        // Every part of the key matters.
        #expect(second.data(for: Self.key("a.png", transformer: nil), now: t0 + 2) == nil)
        #expect(second.data(for: Self.key("a.png", transformer: "blur"), now: t0 + 2) == nil)
        #expect(second.data(for: Self.key("a.png", encoder: "png;level=9;icc=1"), now: t0 + 2) == nil)
        #expect(second.data(for: Self.key("b.png"), now: t0 + 2) == nil)
        var variant = Self.key("a.png")
        variant.variant = "128x128"
        #expect(second.data(for: variant, now: t0 + 2) == nil)

        // Replacing an entry leaves one file; removing it leaves none.
        let replacement = Support.body(seed: 2, count: 1000)
        second.store(replacement, for: Self.key("a.png"), now: t0 + 3)
        #expect(second.data(for: Self.key("a.png"), now: t0 + 4) == replacement)
        #expect(try fileCount(second) == 1)
        second.remove(Self.key("a.png"))
        #expect(second.data(for: Self.key("a.png"), now: t0 + 5) == nil)
        #expect(try fileCount(second) == 0)

        second.store(bytes, for: Self.key("c.png"), now: t0 + 6)
        second.store(bytes, for: Self.key("d.png"), now: t0 + 6)
        second.removeAll()
        #expect(ImageDiskCache(directory: directory, logger: log.logger).data(for: Self.key("c.png")) == nil)
        #expect(second.currentByteCount == 0)
        #expect(try fileCount(second) == 0)
        #expect(log.messages.isEmpty, "\(log.messages)")
    }

    @Test func theLeastRecentlyReadEntryIsEvictedFirst() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = LogCollector()
        let cache = ImageDiskCache(directory: directory, byteLimit: 3000, maximumAge: nil, logger: log.logger)
        for (index, path) in ["a", "b", "c"].enumerated() {
            cache.store(Support.body(seed: index, count: 1000), for: Self.key(path), now: t0 + TimeInterval(index))
        }
        // a was stored first but is read now: b becomes the least recently used.
        #expect(cache.data(for: Self.key("a"), now: t0 + 3) == Support.body(seed: 0, count: 1000))
        cache.store(Support.body(seed: 3, count: 1000), for: Self.key("d"), now: t0 + 4)
        #expect(cache.keysByLastAccess == ["c", "a", "d"].map { Self.key($0).stringValue })
        #expect(cache.data(for: Self.key("b"), now: t0 + 5) == nil)
        #expect(cache.data(for: Self.key("a"), now: t0 + 5) != nil)
        #expect(cache.currentByteCount == 3000)
        #expect(try fileCount(cache) == 3)

        // One entry larger than the whole limit is not stored, and evicts nothing.
        cache.store(Support.body(seed: 9, count: 3001), for: Self.key("huge"), now: t0 + 6)
        #expect(cache.data(for: Self.key("huge"), now: t0 + 7) == nil)
        #expect(cache.currentByteCount == 3000)
        #expect(log.messages.isEmpty, "\(log.messages)")
    }

    @Test func entriesOlderThanTheMaximumAgeAreMisses() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = LogCollector()
        let cache = ImageDiskCache(directory: directory, maximumAge: 60, logger: log.logger)
        let bytes = Support.body(seed: 4, count: 500)
        cache.store(bytes, for: Self.key("a"), now: t0)
        // Reading does not extend the age: it counts from the store.
        #expect(cache.data(for: Self.key("a"), now: t0 + 59) == bytes)
        #expect(cache.data(for: Self.key("a"), now: t0 + 61) == nil)
        #expect(cache.keysByLastAccess.isEmpty)
        #expect(try fileCount(cache) == 0)

        // A store removes whatever has expired meanwhile, read or not.
        cache.store(bytes, for: Self.key("b"), now: t0 + 100)
        cache.store(bytes, for: Self.key("c"), now: t0 + 200)
        #expect(cache.keysByLastAccess == [Self.key("c").stringValue])
        #expect(try fileCount(cache) == 1)

        // Without a maximum age, entries stay until evicted.
        let keeping = ImageDiskCache(directory: directory, maximumAge: nil, logger: log.logger)
        #expect(keeping.data(for: Self.key("c"), now: t0 + 1_000_000) == bytes)
        #expect(log.messages.isEmpty, "\(log.messages)")
    }

    @Test func aFileChangedBehindTheCachesBackIsDropped() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = LogCollector()
        let cache = ImageDiskCache(directory: directory, logger: log.logger)
        cache.store(Support.body(seed: 5, count: 2000), for: Self.key("a"), now: t0)
        let file = try #require(FileManager.default.contentsOfDirectory(atPath: cache.filesDirectory.path).first)
        try Support.body(seed: 6, count: 2000).write(to: cache.filesDirectory.appendingPathComponent(file))
        #expect(cache.data(for: Self.key("a"), now: t0 + 1) == nil)
        #expect(cache.keysByLastAccess.isEmpty)
        #expect(log.messages.count == 1 && log.messages.first?.contains("wrong checksum") == true, "\(log.messages)")
    }

    @Test func keysOfTheBuiltInEncodersNameEveryParameter() {
        #expect(JPEGEncoder(quality: 80).key != JPEGEncoder(quality: 81).key)
        #expect(JPEGEncoder(quality: 80).key.hasPrefix("jpeg;q=80;"))
        #expect(JPEGEncoder(exif: Data([1, 2])).key != JPEGEncoder(exif: Data([1, 3])).key)
        #expect(WebPEncoder(quality: 80).key != WebPEncoder(quality: 80, lossless: true).key)
        #expect(PNGEncoder(compressionLevel: 6).key != PNGEncoder(compressionLevel: 9).key)
        #expect(AVIFEncoder(quality: 60).key != AVIFEncoder(quality: 61).key)
        #expect(Set([JPEGEncoder().key, WebPEncoder().key, PNGEncoder().key, AVIFEncoder().key]).count == 4)
    }
}
