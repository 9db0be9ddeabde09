import Foundation
import Locking
import Logging

/// The default `HTTPCaching`: a private RFC 9111 cache with an LRU memory tier in front of a
/// crash-safe disk tier that several processes may share.
///
/// - **Memory tier**: the most recently used responses, bounded by `memoryCapacity` (body bytes
///   plus header bytes), behind one `Lock`.
/// - **Disk tier**: a SQLite index in WAL mode plus one body file per response under `directory`,
///   bounded by `diskCapacity` (body bytes) with least-recently-accessed eviction. A process killed
///   at any point never leaves an entry that is served torn; a body damaged behind the cache's back
///   fails its length/checksum check and is dropped; a damaged index is moved aside to
///   `index.sqlite.corrupt`, rebuilt empty, and reported through `logger`.
///
/// One response is kept per URL (without fragment): a response with `Vary` stores the request
/// header values it was selected by, and a lookup whose values differ is a miss (the next 200 then
/// replaces the stored variant). `Set-Cookie` and connection-specific fields are not stored.
///
/// Entries in the memory tier of one process do not see removals by another process; the disk
/// tier is shared exactly.
///
/// ```swift
/// // Memory only:
/// let memoryCache = HTTPCache(directory: nil)
/// // 20 MB memory, 150 MB on disk under $XDG_CACHE_HOME/webimage (or ~/.cache/webimage):
/// let cache = HTTPCache()
/// let now = Date()
/// if case .fresh(let cached) = cache.lookup(ImageDownloadRequest(url: url), now: now) {
///     print("served \(cached.body.count) bytes without the network")
/// }
/// ```
public final class HTTPCache: HTTPCaching {
    /// `$XDG_CACHE_HOME/webimage` when `XDG_CACHE_HOME` is an absolute path, else
    /// `~/.cache/webimage`; the default directory of the disk tier.
    public static var defaultDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("webimage", isDirectory: true)
        }
        return FileManager.default.homeDirectoryForCurrentUser
            .appendingPathComponent(".cache", isDirectory: true)
            .appendingPathComponent("webimage", isDirectory: true)
    }

    /// An access refreshes the disk tier's LRU time only if the last refresh is older than this, so
    /// memory hits do not each cost a disk write.
    static let diskTouchInterval: TimeInterval = 60

    /// Bytes the memory tier may hold (bodies plus header fields). 20 MB by default.
    public let memoryCapacity: Int
    /// Body bytes the disk tier may hold. 150 MB by default; 0 when there is no disk tier.
    public let diskCapacity: Int
    /// The disk tier's directory, or `nil` for a memory-only cache.
    public let directory: URL?

    private struct MemoryEntry {
        var cached: CachedHTTPResponse
        var diskTouchedAt: Date
    }

    private let memory = Lock(CostLRU<String, MemoryEntry>())
    let disk: HTTPCacheDiskStore?

    /// Creates a cache. Opening the disk tier never fails the initializer: problems are reported to
    /// `logger` and the cache works from memory until the directory becomes usable.
    ///
    /// - Parameters:
    ///   - memoryCapacity: bytes held in memory; 20 MB by default.
    ///   - diskCapacity: body bytes held on disk; 150 MB by default.
    ///   - directory: where the disk tier lives, created if needed; `nil` for memory only.
    ///     `HTTPCache.defaultDirectory` by default.
    ///   - synchronousWrites: `fsync` each body before indexing it (survives power loss, slower).
    ///     `false` by default; process crashes are safe either way.
    ///   - logger: receives the cache's warnings (a damaged index or body, failed I/O) at `.warning`; a
    ///     logger labelled `WebImage.HTTPCache` from the process's `LoggingSystem` by default.
    public init(
        memoryCapacity: Int = 20 * 1024 * 1024, diskCapacity: Int = 150 * 1024 * 1024,
        directory: URL? = HTTPCache.defaultDirectory, synchronousWrites: Bool = false,
        logger: Logger = Logger(label: "WebImage.HTTPCache")
    ) {
        self.memoryCapacity = max(0, memoryCapacity)
        self.directory = directory
        if let directory {
            self.diskCapacity = max(0, diskCapacity)
            self.disk = HTTPCacheDiskStore(
                directory: directory, capacity: diskCapacity, synchronousWrites: synchronousWrites, logger: logger)
        } else {
            self.diskCapacity = 0
            self.disk = nil
        }
    }

    /// Bytes the memory tier holds now.
    public var currentMemoryUsage: Int { memory.withLock { $0.totalCost } }

    /// Body bytes the disk tier holds now (across all processes sharing the directory).
    public var currentDiskUsage: Int { disk?.totalBodySize ?? 0 }

    // MARK: - HTTPCaching

    /// Finds a stored response for `request`: memory first, then disk (a disk hit is promoted to
    /// memory). See `HTTPCaching.lookup(_:now:)`.
    public func lookup(_ request: ImageDownloadRequest, now: Date) -> HTTPCacheLookup {
        guard let cached = storedResponse(forKey: HTTPCachePolicy.cacheKey(for: request.url), now: now) else {
            return .miss
        }
        return HTTPCachePolicy.evaluate(cached, for: request, now: now)
    }

    /// Stores a cacheable response; a non-storable 2xx (e.g. `no-store`) removes what was stored for
    /// the URL, since it supersedes it. See `HTTPCaching.store`.
    public func store(
        _ response: TransferResponse, body: Data, for request: ImageDownloadRequest, requestDate: Date,
        responseDate: Date
    ) {
        let key = HTTPCachePolicy.cacheKey(for: request.url)
        switch HTTPCachePolicy.storeDecision(for: response, bodyLength: body.count, request: request) {
        case .reject(_, let supersedesStored):
            if supersedesStored { remove(key: key) }
        case .store(let varying):
            var stored = response
            stored.headers = HTTPCachePolicy.headersToStore(response.headers, receivedAt: responseDate)
            let cached = CachedHTTPResponse(
                response: stored, body: body, requestDate: requestDate, responseDate: responseDate,
                varyingRequestHeaders: varying)
            insertInMemory(cached, key: key, diskTouchedAt: responseDate)
            disk?.save(cached, key: key, accessDate: responseDate)
        }
    }

    /// Merges a 304's fields into the stored response and returns it with its body; `nil` when
    /// nothing is stored for the request, or the stored response is another variant or has other
    /// validators than the 304 (that entry is then removed). See `HTTPCaching.refresh`.
    @discardableResult
    public func refresh(
        with notModified: TransferResponse, for request: ImageDownloadRequest, requestDate: Date,
        responseDate: Date
    ) -> CachedHTTPResponse? {
        let key = HTTPCachePolicy.cacheKey(for: request.url)
        guard let stored = storedResponse(forKey: key, now: responseDate),
            HTTPCachePolicy.varyMatches(stored, request: request)
        else { return nil }
        guard HTTPCachePolicy.notModified(notModified.headers, matches: stored.response.headers) else {
            remove(key: key)
            return nil
        }
        var refreshed = stored
        refreshed.response.headers = HTTPCachePolicy.mergedHeaders(
            stored: stored.response.headers, notModified: notModified.headers, receivedAt: responseDate)
        refreshed.requestDate = requestDate
        refreshed.responseDate = responseDate
        guard let varying = HTTPCachePolicy.varyingRequestHeaders(for: refreshed.response.headers, request: request),
            !CacheControl(refreshed.response.headers).contains("no-store")
        else {
            // The 304 made the response unstorable (Vary: *, no-store): serve it this once only.
            remove(key: key)
            return refreshed
        }
        refreshed.varyingRequestHeaders = varying
        insertInMemory(refreshed, key: key, diskTouchedAt: responseDate)
        if let disk, !disk.updateHead(refreshed, key: key, accessDate: responseDate) {
            // Since we read it, the disk entry was evicted, removed or replaced by another body
            // (perhaps by another process): the server just confirmed ours, so store it whole again.
            disk.save(refreshed, key: key, accessDate: responseDate)
        }
        return refreshed
    }

    /// Removes the response stored for `url` from both tiers.
    public func removeResponse(for url: URL) {
        remove(key: HTTPCachePolicy.cacheKey(for: url))
    }

    /// Removes every response from both tiers (the disk tier for every process sharing it).
    public func removeAll() {
        memory.withLock { $0.removeAll() }
        disk?.removeAll()
    }

    // MARK: - Tiers

    private func storedResponse(forKey key: String, now: Date) -> CachedHTTPResponse? {
        let hit = memory.withLock { lru -> (cached: CachedHTTPResponse, touchDisk: Bool)? in
            guard var entry = lru.value(forKey: key) else { return nil }
            // Decided under the lock so that concurrent hits on one entry do not all write to disk.
            guard disk != nil, now.timeIntervalSince(entry.diskTouchedAt) >= Self.diskTouchInterval else {
                return (entry.cached, false)
            }
            entry.diskTouchedAt = now
            lru.setValue(entry, forKey: key, cost: Self.cost(of: entry.cached))
            return (entry.cached, true)
        }
        if let hit {
            if hit.touchDisk { disk?.touch(key: key, accessDate: now) }
            return hit.cached
        }
        guard let cached = disk?.load(key: key, accessDate: now) else { return nil }
        insertInMemory(cached, key: key, diskTouchedAt: now)
        return cached
    }

    private func insertInMemory(_ cached: CachedHTTPResponse, key: String, diskTouchedAt: Date) {
        let cost = Self.cost(of: cached)
        let capacity = memoryCapacity
        memory.withLock { lru in
            guard cost <= capacity else {
                lru.removeValue(forKey: key)
                return
            }
            lru.setValue(MemoryEntry(cached: cached, diskTouchedAt: diskTouchedAt), forKey: key, cost: cost)
            lru.trim(toCost: capacity)
        }
    }

    private func remove(key: String) {
        _ = memory.withLock { $0.removeValue(forKey: key) }
        disk?.remove(key: key)
    }

    /// Memory cost of an entry: its body plus its header bytes.
    static func cost(of cached: CachedHTTPResponse) -> Int {
        cached.body.count
            + cached.response.headers.fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }

    /// Keys in the memory tier from most to least recently used (tests and diagnostics).
    var memoryKeysByRecency: [String] { memory.withLock { $0.keysByRecency } }
}
