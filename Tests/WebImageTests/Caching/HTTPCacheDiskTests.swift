import Foundation
import TestSupport
import Testing

@testable import WebImage

/// The disk tier: persistence, LRU eviction, damaged bodies and indexes, concurrent instances.
@Suite(.timeLimit(.minutes(5))) struct HTTPCacheDiskTests {
    typealias Support = CachingTestSupport
    let t0 = CachingTestSupport.t0

    private func store(
        _ cache: HTTPCache, _ path: String, body: Data, at seconds: TimeInterval = 0, etag: String = "\"v1\""
    ) {
        let date = t0 + seconds
        cache.store(
            Support.response(
                path, headers: ["Date": Support.httpDate(date), "Cache-Control": "max-age=3600", "ETag": etag],
                body: body),
            body: body, for: Support.request(path), requestDate: date, responseDate: date)
    }

    /// A cache with no memory tier, so every lookup reads the disk.
    private func diskOnlyCache(_ directory: URL, capacity: Int = 10_000_000, log: LogCollector) -> HTTPCache {
        HTTPCache(memoryCapacity: 0, diskCapacity: capacity, directory: directory, logger: log.logger)
    }

    @Test func entriesPersistAcrossInstances() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = LogCollector()
        let body = Support.body(seed: 7, count: 50_000)
        do {
            let first = HTTPCache(directory: directory, logger: log.logger)
            store(first, "a.png", body: body)
            #expect(first.currentDiskUsage == body.count)
        }
        let second = HTTPCache(directory: directory, logger: log.logger)
        let result = second.lookup(Support.request("a.png"), now: t0 + 10)
        #expect(result.isFresh)
        #expect(result.cachedResponse?.body == body)
        #expect(result.cachedResponse?.response.headers["ETag"] == "\"v1\"")

        // A 304 refresh reaches the disk too.
        let notModified = Support.response("a.png", status: 304, headers: ["ETag": "\"v1\"", "X-Refreshed": "yes"])
        #expect(
            second.refresh(
                with: notModified, for: Support.request("a.png"), requestDate: t0 + 4000, responseDate: t0 + 4000)
                != nil)
        let third = diskOnlyCache(directory, log: log)
        let refreshed = third.lookup(Support.request("a.png"), now: t0 + 4010)
        #expect(refreshed.isFresh)
        #expect(refreshed.cachedResponse?.response.headers["X-Refreshed"] == "yes")
        #expect(refreshed.cachedResponse?.body == body)

        third.removeResponse(for: Support.url("a.png"))
        #expect(HTTPCache(directory: directory, logger: log.logger).lookup(Support.request("a.png"), now: t0).isMiss)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("bodies").path).isEmpty
        )
        #expect(log.messages.isEmpty)
    }

    @Test func aRefreshNeverAttachesItsHeadToAnotherInstancesBody() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = LogCollector()
        let first = HTTPCache(directory: directory, logger: log.logger)
        let second = HTTPCache(directory: directory, logger: log.logger)
        let original = Support.body(seed: 1, count: 4000)
        let replacement = Support.body(seed: 2, count: 4000)
        store(first, "a.png", body: original, etag: "\"v1\"")
        // Another process stores a different representation; `first` still holds v1 in memory.
        store(second, "a.png", body: replacement, at: 1, etag: "\"v2\"")
        let notModified = Support.response("a.png", status: 304, headers: ["ETag": "\"v1\"", "X-Refreshed": "1"])
        let refreshed = first.refresh(
            with: notModified, for: Support.request("a.png"), requestDate: t0 + 2, responseDate: t0 + 2)
        #expect(refreshed?.body == original)

        // The disk entry is consistent: the server just confirmed v1, so v1 is stored whole again.
        let checker = diskOnlyCache(directory, log: log)
        let cached = try #require(checker.lookup(Support.request("a.png"), now: t0 + 3).cachedResponse)
        #expect(cached.response.headers["ETag"] == "\"v1\"")
        #expect(cached.response.headers["X-Refreshed"] == "1")
        #expect(cached.body == original)
        #expect(log.messages.isEmpty)
    }

    @Test func diskEvictsLeastRecentlyAccessedBeyondCapacity() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = LogCollector()
        let cache = diskOnlyCache(directory, capacity: 3000, log: log)
        for (index, path) in ["a", "b", "c"].enumerated() {
            store(cache, path, body: Support.body(seed: index, count: 1000), at: TimeInterval(index))
        }
        #expect(cache.currentDiskUsage == 3000)
        #expect(cache.lookup(Support.request("a"), now: t0 + 3).isFresh)  // a is now the most recent
        store(cache, "d", body: Support.body(seed: 3, count: 1000), at: 4)
        #expect(cache.disk?.keysByLastAccess == ["c", "a", "d"].map { Support.url($0).absoluteString })
        #expect(cache.lookup(Support.request("b"), now: t0 + 5).isMiss)
        #expect(cache.currentDiskUsage == 3000)
        let bodies = try FileManager.default.contentsOfDirectory(
            atPath: directory.appendingPathComponent("bodies").path)
        #expect(bodies.count == 3)

        // A body larger than the whole disk tier is not stored (and does not flush the others).
        store(cache, "huge", body: Support.body(seed: 9, count: 3001), at: 6)
        #expect(cache.lookup(Support.request("huge"), now: t0 + 7).isMiss)
        #expect(cache.currentDiskUsage == 3000)
        #expect(log.messages.isEmpty)
    }

    @Test func memoryEvictsLeastRecentlyUsedBeyondCapacity() throws {
        let probe = CachedHTTPResponse(
            response: Support.response(
                "a", headers: ["Date": Support.httpDate(t0), "Cache-Control": "max-age=3600", "ETag": "\"v1\""],
                body: Data(count: 1000)),
            body: Data(count: 1000), requestDate: t0, responseDate: t0)
        let entryCost = HTTPCache.cost(of: probe)
        let cache = HTTPCache(memoryCapacity: entryCost * 3, directory: nil)
        for (index, path) in ["a", "b", "c"].enumerated() {
            store(cache, path, body: Support.body(seed: index, count: 1000), at: TimeInterval(index))
        }
        #expect(cache.currentMemoryUsage == entryCost * 3)
        #expect(cache.lookup(Support.request("a"), now: t0 + 3).isFresh)
        store(cache, "d", body: Support.body(seed: 3, count: 1000), at: 4)
        #expect(cache.memoryKeysByRecency == ["d", "a", "c"].map { Support.url($0).absoluteString })
        #expect(cache.lookup(Support.request("b"), now: t0 + 5).isMiss)
        #expect(cache.currentMemoryUsage == entryCost * 3)
        cache.removeAll()
        #expect(cache.currentMemoryUsage == 0)
    }

    @Test func aTruncatedOrAlteredBodyIsDroppedNotServed() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = LogCollector()
        let cache = diskOnlyCache(directory, log: log)
        let body = Support.body(seed: 1, count: 10_000)
        store(cache, "torn.png", body: body)
        store(cache, "flipped.png", body: body)
        let key = { (path: String) in Support.url(path).absoluteString }
        let tornFile = cache.disk?.bodiesDirectory.appendingPathComponent(
            try #require(cache.disk?.fileName(forKey: key("torn.png"))))
        let flippedFile = cache.disk?.bodiesDirectory.appendingPathComponent(
            try #require(cache.disk?.fileName(forKey: key("flipped.png"))))

        // Behind the cache's back: cut one body in half, change one byte of the other.
        let torn = try FileHandle(forWritingTo: try #require(tornFile))
        try torn.truncate(atOffset: 5000)
        try torn.close()
        var altered = try Data(contentsOf: try #require(flippedFile))
        altered[1234] ^= 0xFF
        try altered.write(to: try #require(flippedFile))

        #expect(cache.lookup(Support.request("torn.png"), now: t0 + 1).isMiss)
        #expect(cache.lookup(Support.request("flipped.png"), now: t0 + 1).isMiss)
        #expect(cache.disk?.keysByLastAccess.isEmpty == true)
        #expect(!FileManager.default.fileExists(atPath: try #require(tornFile).path))
        #expect(log.messages.filter { $0.contains("dropping") }.count == 2)

        // A body deleted outright is a plain miss and its row goes too.
        store(cache, "deleted.png", body: body)
        let deleted = try #require(cache.disk?.fileName(forKey: key("deleted.png")))
        try FileManager.default.removeItem(
            at: directory.appendingPathComponent("bodies").appendingPathComponent(deleted))
        #expect(cache.lookup(Support.request("deleted.png"), now: t0 + 1).isMiss)
        #expect(cache.disk?.fileName(forKey: key("deleted.png")) == nil)
    }

    @Test func aCorruptIndexIsMovedAsideAndRebuilt() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let databasePath = directory.appendingPathComponent("index.sqlite").path
        let log = LogCollector()
        do {
            let cache = diskOnlyCache(directory, log: log)
            for index in 0..<20 { store(cache, "\(index).png", body: Support.body(seed: index, count: 2000)) }
        }
        #expect(log.messages.isEmpty)

        // Garbage over the whole file, header included, while no connection is open.
        let size = try #require(try FileManager.default.attributesOfItem(atPath: databasePath)[.size] as? Int)
        try Support.body(seed: 99, count: size).write(to: URL(fileURLWithPath: databasePath))

        let cache = diskOnlyCache(directory, log: log)
        #expect(log.messages.contains { $0.contains("damaged") })
        #expect(log.records.allSatisfy { $0.level == .warning })
        #expect(FileManager.default.fileExists(atPath: databasePath + ".corrupt"))
        #expect(cache.lookup(Support.request("0.png"), now: t0).isMiss)
        let body = Support.body(seed: 5, count: 3000)
        store(cache, "new.png", body: body)
        #expect(cache.lookup(Support.request("new.png"), now: t0 + 1).cachedResponse?.body == body)

        let reopened = diskOnlyCache(directory, log: log)
        #expect(reopened.lookup(Support.request("new.png"), now: t0 + 1).cachedResponse?.body == body)
        #expect(log.messages.filter { $0.contains("is damaged") }.count == 1)
    }

    @Test func corruptionReportedByALaterQueryAlsoRebuildsAndOtherErrorsDoNot() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let databasePath = directory.appendingPathComponent("index.sqlite").path
        let log = LogCollector()
        let cache = diskOnlyCache(directory, log: log)
        let disk = try #require(cache.disk)
        store(cache, "a.png", body: Support.body(seed: 1, count: 100))

        // An ordinary SQLite error is logged; the index stays.
        let failed = disk.withIndexForTesting { database throws(SQLiteError) -> Bool in
            try database.execute("SELECT * FROM no_such_table")
            return true
        }
        #expect(failed == nil)
        #expect(log.messages.count == 1)
        #expect(!FileManager.default.fileExists(atPath: databasePath + ".corrupt"))
        #expect(cache.lookup(Support.request("a.png"), now: t0).isFresh)

        // SQLITE_CORRUPT from a query on an open index: moved aside, rebuilt, working.
        _ = disk.withIndexForTesting { _ throws(SQLiteError) in
            throw SQLiteError.corrupt("injected", operation: "test")
        }
        #expect(FileManager.default.fileExists(atPath: databasePath + ".corrupt"))
        #expect(log.messages.contains { $0.contains("is damaged") })
        #expect(cache.lookup(Support.request("a.png"), now: t0).isMiss)
        let body = Support.body(seed: 2, count: 100)
        store(cache, "b.png", body: body)
        #expect(
            diskOnlyCache(directory, log: log).lookup(Support.request("b.png"), now: t0).cachedResponse?.body == body)
    }

    @Test func aTruncatedIndexFileIsRebuiltToo() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let databasePath = directory.appendingPathComponent("index.sqlite").path
        let log = LogCollector()
        do {
            let cache = diskOnlyCache(directory, log: log)
            for index in 0..<200 { store(cache, "\(index).png", body: Support.body(seed: index, count: 100)) }
        }
        // Keep the valid header but cut the file mid-way and scribble over what is left of page 2 on.
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: databasePath))
        try handle.truncate(atOffset: 6000)
        try handle.seek(toOffset: 4096)
        try handle.write(contentsOf: Support.body(seed: 1, count: 1904))
        try handle.close()

        let cache = diskOnlyCache(directory, log: log)
        let body = Support.body(seed: 5, count: 300)
        store(cache, "new.png", body: body)
        #expect(cache.lookup(Support.request("new.png"), now: t0 + 1).cachedResponse?.body == body)
        #expect(log.messages.contains { $0.contains("damaged") })
        #expect(FileManager.default.fileExists(atPath: databasePath + ".corrupt"))
    }

    @Test func independentInstancesWriteOneDirectoryConcurrently() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = LogCollector()
        let writers = 4
        let entriesPerWriter = 60
        let t0 = self.t0
        // Each writer has its own HTTPCache and so its own SQLite connection, like separate processes.
        DispatchQueue.concurrentPerform(iterations: writers) { writer in
            let cache = HTTPCache(memoryCapacity: 0, diskCapacity: 400_000, directory: directory, logger: log.logger)
            for index in 0..<entriesPerWriter {
                // Half the keys are shared between writers, so they also replace each other's entries.
                let path = index % 2 == 0 ? "shared-\(index).png" : "w\(writer)-\(index).png"
                let seed = writer * 1000 + index
                let body = Support.body(seed: seed, count: 2000 + index * 10)
                let date = t0 + TimeInterval(index)
                cache.store(
                    Support.response(
                        path, headers: ["Cache-Control": "max-age=3600", "X-Seed": String(seed)], body: body),
                    body: body, for: Support.request(path), requestDate: date, responseDate: date)
                _ = cache.lookup(Support.request("shared-\(index / 2 * 2).png"), now: date)
            }
        }
        #expect(log.messages.isEmpty, "\(log.messages)")

        let checker = diskOnlyCache(directory, capacity: 400_000, log: log)
        let keys = try #require(checker.disk?.keysByLastAccess)
        #expect(!keys.isEmpty)
        #expect(checker.currentDiskUsage <= 400_000)
        for key in keys {
            let cached = try #require(
                checker.lookup(ImageDownloadRequest(url: URL(string: key)!), now: t0 + 100).cachedResponse)
            let seed = try #require(cached.response.headers["X-Seed"].flatMap { Int($0) })
            #expect(cached.body == Support.body(seed: seed, count: cached.body.count))
            #expect(cached.body.count == 2000 + (seed % 1000) * 10)
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("bodies").path)
        #expect(files.count == keys.count)
        #expect(log.messages.isEmpty, "\(log.messages)")
    }

    @Test func anUnusableDirectoryFallsBackToMemory() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let blocker = directory.appendingPathComponent("file")
        try Data("not a directory".utf8).write(to: blocker)
        let log = LogCollector()
        let cache = HTTPCache(directory: blocker, logger: log.logger)
        store(cache, "a.png", body: Support.body(seed: 1, count: 100))
        #expect(cache.lookup(Support.request("a.png"), now: t0).isFresh)
        #expect(log.messages.count == 1, "\(log.messages)")  // reported once, not on every call
    }

    @Test func defaultDirectoryFollowsXDG() {
        let directory = HTTPCache.defaultDirectory
        #expect(directory.lastPathComponent == "webimage")
        if let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            #expect(directory.path == URL(fileURLWithPath: xdg).appendingPathComponent("webimage").path)
        } else {
            #expect(directory.deletingLastPathComponent().lastPathComponent == ".cache")
        }
    }
}
