import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage
import WebImageProxy

/// The proxy's operational half, in process against the loopback origin: the result cache, one piece of
/// work per result, backpressure, `/metrics`, the access log and readiness. Held requests wait at the
/// origin's gates, so every count is checked at a known moment.
@Suite("serve: cache, coalescing, backpressure, metrics, access log", .timeLimit(.minutes(5)))
struct ServeOperationsTests {
    static func proxy(
        cache: (any ProcessedImageCaching)? = nil, sourceCache: (any HTTPCaching)? = nil, concurrency: Int = 4,
        queue: Int = 8, accessLogger: LogCollector = LogCollector()
    ) -> ImageProxy {
        var configuration = ImageProxyConfiguration()
        configuration.allowsUnsigned = true
        configuration.allowedDestinations = ["127.0.0.0/8"]
        configuration.resultCache = cache
        configuration.sourceCache = sourceCache
        configuration.maximumConcurrentJobs = concurrency
        configuration.maximumQueuedJobs = queue
        // resultCache() asks for WebP and JPEG by Accept.
        configuration.formatNegotiation.webp = .auto
        // Requests held at the origin's gates wait as long as the machine takes to get every other request
        // there (minutes on two loaded cores); the default 30-second deadline would answer them 504 first.
        configuration.requestDeadline = .seconds(600)
        // A request held at a gate receives nothing: the source's idle timeout must not end it either.
        configuration.sourceIdleTimeout = .seconds(600)
        return ImageProxy(configuration: configuration, accessLogger: accessLogger.logger)
    }

    /// `/insecure/{options}/plain/{source}` for a corpus file, held at `gate` when one is given.
    static func path(_ options: String, _ origin: LocalImageServer, file: String, gate: String? = nil) -> String {
        var source = origin.url("/files/\(file)").absoluteString
        if let gate { source += "%3Fgate%3D\(gate)" }
        return "/insecure/\(options)/plain/\(source)"
    }

    static func scrape(_ proxy: ImageProxy) async -> [String: Double] {
        let reply = await proxy.respond(to: ProxyRequest(path: "/metrics"))
        return PrometheusText.samples(String(decoding: reply.body, as: UTF8.self))
    }

    @Test("a result-cache hit is served without asking the origin; the key follows the ETag; the size is bounded")
    func resultCache() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("serve-cache-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = ImageDiskCache(directory: folder, byteLimit: 40_000, maximumAge: nil)
        let proxy = Self.proxy(cache: cache)
        let path = Self.path("rs:fill:120:120", origin, file: "coffee-progressive.jpg")

        let first = await proxy.respond(to: ProxyRequest(path: path, accept: "image/webp"))
        #expect(first.status == 200)
        #expect(first.cacheStatus == .miss)
        let second = await proxy.respond(to: ProxyRequest(path: path, accept: "image/webp"))
        #expect(second.status == 200)
        #expect(second.cacheStatus == .hit)
        #expect(second.body == first.body)
        #expect(second.header("ETag") == first.header("ETag"))
        #expect(second.header("Content-Type") == "image/webp")
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 1, "the hit fetched nothing")

        // Another Accept is another ETag, so another result: a miss, and JPEG bytes.
        let jpeg = await proxy.respond(to: ProxyRequest(path: path, accept: "image/jpeg"))
        #expect(jpeg.cacheStatus == .miss)
        #expect(jpeg.header("Content-Type") == "image/jpeg")
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 2)

        // Larger results than the limit holds push the oldest out; the cache never exceeds its bytes.
        for width in [300, 310, 320, 330] {
            let reply = await proxy.respond(
                to: ProxyRequest(path: Self.path("w:\(width)/f:png", origin, file: "coffee-progressive.jpg")))
            #expect(reply.status == 200)
        }
        #expect(cache.currentByteCount <= 40_000)

        let samples = await Self.scrape(proxy)
        #expect(samples["webimage_serve_result_cache_hits_total"] == 1)
        #expect(samples["webimage_serve_result_cache_misses_total"] == 6)
    }

    @Test("concurrent requests for one result share one fetch and one encode and get identical bodies")
    func coalescing() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let proxy = Self.proxy()
        let path = Self.path("rs:fill:90:90/f:webp", origin, file: "coffee-progressive.jpg", gate: "coalesce")
        let count = 8
        let replies = await withTaskGroup(of: ProxyResponse.self) { group in
            for _ in 0..<count { group.addTask { await proxy.respond(to: ProxyRequest(path: path)) } }
            // Every request is waiting on the one piece of work before the origin answers.
            let allWaiting = await pollAsync(seconds: 180) {
                proxy.load.requestsWaiting == count && origin.waitingCount(atGate: "coalesce") == 1
            }
            #expect(allWaiting, "\(proxy.load)")
            #expect(proxy.load.jobsInFlight == 1)
            origin.openGate("coalesce")
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(replies.count == count)
        #expect(replies.allSatisfy { $0.status == 200 })
        #expect(Set(replies.map(\.body)).count == 1, "identical bodies")
        #expect(replies.filter { $0.cacheStatus == .miss }.count == 1)
        #expect(replies.filter { $0.cacheStatus == .joined }.count == count - 1)
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 1)
        #expect(proxy.load.sourceRequests == 1, "one download for the one result")
        #expect(await Self.scrape(proxy)["webimage_serve_coalesced_requests_total"] == Double(count - 1))
    }

    @Test("different results from one source share its download: the origin sees one request")
    func sharedSource() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let proxy = Self.proxy()
        let widths = [40, 60, 80]
        let replies = await withTaskGroup(of: (Int, ProxyResponse).self) { group in
            for width in widths {
                let path = Self.path("w:\(width)/f:png", origin, file: "coffee-progressive.jpg", gate: "shared")
                group.addTask { (width, await proxy.respond(to: ProxyRequest(path: path))) }
            }
            // Each result's work has attached its caller to the URL's download before the origin answers.
            let attached = await pollAsync(seconds: 180) {
                proxy.load.sourceRequests == widths.count && origin.waitingCount(atGate: "shared") == 1
            }
            #expect(attached, "\(proxy.load)")
            origin.openGate("shared")
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for width in widths {
            #expect(replies[width]?.status == 200)
            #expect(replies[width].flatMap { ServeProcess.pngSize($0.body) }?.width == width)
        }
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 1)
    }

    @Test("with a source cache, results of one source asked one after another fetch it once; no-store fetches each")
    func sourceCache() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let proxy = Self.proxy(sourceCache: HTTPCache(memoryCapacity: 16 << 20, directory: nil))
        for (policy, fetches) in [("max-age=600", 1), ("no-store", 3), ("no-cache", 1)] {
            let source = origin.url("/cache/\(policy)/coffee-progressive.jpg").absoluteString
            for width in [40, 60, 80] {
                let reply = await proxy.respond(to: ProxyRequest(path: "/insecure/w:\(width)/f:png/plain/\(source)"))
                #expect(reply.status == 200, "\(policy) w:\(width)")
                #expect(ServeProcess.pngSize(reply.body)?.width == width)
            }
            let path = "/cache/\(policy)/coffee-progressive.jpg"
            // no-cache revalidates each time: the origin answers 304 after the first download.
            #expect(origin.count(for: path) == (policy == "no-cache" ? 3 : fetches), "\(policy)")
            if policy == "no-cache" {
                #expect(origin.requests(for: path).filter { $0.request.header("If-None-Match") != nil }.count == 2)
            }
        }
        // Without a source cache every result fetches its source.
        let uncached = Self.proxy()
        let source = origin.url("/cache/max-age=600/horse-rgba.png").absoluteString
        for width in [40, 60] {
            let reply = await uncached.respond(to: ProxyRequest(path: "/insecure/w:\(width)/f:png/plain/\(source)"))
            #expect(reply.status == 200)
        }
        #expect(origin.count(for: "/cache/max-age=600/horse-rgba.png") == 2)
    }

    @Test("past the slots and the queue a request is 503 with Retry-After at once; the queued ones are served")
    func backpressure() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let proxy = Self.proxy(concurrency: 1, queue: 1)
        let running = Self.path("w:30/f:png", origin, file: "coffee-progressive.jpg", gate: "busy")
        let queued = Self.path("w:31/f:png", origin, file: "coffee-progressive.jpg", gate: "busy")
        let refused = Self.path("w:32/f:png", origin, file: "coffee-progressive.jpg", gate: "busy")

        async let first = proxy.respond(to: ProxyRequest(path: running))
        #expect(await pollAsync(seconds: 180) { origin.waitingCount(atGate: "busy") == 1 })
        async let second = proxy.respond(to: ProxyRequest(path: queued))
        #expect(await pollAsync(seconds: 180) { proxy.load.jobsQueued == 1 })
        #expect(proxy.load.jobsInFlight == 1)
        let busy = await Self.scrape(proxy)
        #expect(busy["webimage_serve_jobs_in_flight"] == 1)
        #expect(busy["webimage_serve_queue_depth"] == 1)

        let third = await proxy.respond(to: ProxyRequest(path: refused))
        #expect(third.status == 503)
        #expect(third.header("Retry-After") == "1")
        #expect(third.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(proxy.load.sourceRequests == 1, "neither the queued nor the refused request fetched yet")

        origin.openGate("busy")
        #expect(await first.status == 200)
        #expect(await second.status == 200)
        let load = proxy.load
        #expect(load.jobsInFlight == 0 && load.jobsQueued == 0 && load.requestsWaiting == 0, "\(load)")
        #expect(load.sourceRequests == 2)
        let after = await Self.scrape(proxy)
        #expect(after["webimage_serve_rejected_total"] == 1)
        #expect(after["webimage_serve_requests_total{status=\"503\",format=\"none\"}"] == 1)
        #expect(after["webimage_serve_requests_total{status=\"200\",format=\"png\"}"] == 2)
        #expect(after["webimage_serve_queue_depth"] == 0)
    }

    @Test("queued jobs take the freed slot in arrival order, one at a time")
    func queueOrder() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let proxy = Self.proxy(concurrency: 1, queue: 2)
        async let first = proxy.respond(
            to: ProxyRequest(path: Self.path("w:20/f:png", origin, file: "coffee-progressive.jpg", gate: "order-a")))
        #expect(await pollAsync(seconds: 180) { origin.waitingCount(atGate: "order-a") == 1 })
        async let second = proxy.respond(
            to: ProxyRequest(path: Self.path("w:20/f:png", origin, file: "horse-rgba.png", gate: "order-b")))
        #expect(await pollAsync(seconds: 180) { proxy.load.jobsQueued == 1 })
        async let third = proxy.respond(
            to: ProxyRequest(path: Self.path("w:21/f:png", origin, file: "horse-rgba.png", gate: "order-c")))
        #expect(await pollAsync(seconds: 180) { proxy.load.jobsQueued == 2 })

        origin.openGate("order-a")
        #expect(await first.status == 200)
        // The second arrival runs; the third still waits, and has fetched nothing.
        #expect(await pollAsync(seconds: 180) { origin.waitingCount(atGate: "order-b") == 1 })
        #expect(proxy.load.jobsQueued == 1 && proxy.load.jobsInFlight == 1)
        #expect(origin.waitingCount(atGate: "order-c") == 0)
        origin.openGate("order-b")
        #expect(await second.status == 200)
        origin.openGate("order-c")
        #expect(await third.status == 200)
        #expect(proxy.load.jobsQueued == 0 && proxy.load.jobsInFlight == 0)
    }

    @Test("/metrics counts requests by status and format, latency, and source errors by code")
    func metrics() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let proxy = Self.proxy()
        let photo = Self.path("w:20", origin, file: "coffee-progressive.jpg")
        #expect(await proxy.respond(to: ProxyRequest(path: photo, accept: "image/webp")).status == 200)
        #expect(await proxy.respond(to: ProxyRequest(path: photo + "@png")).status == 200)
        let missing = "/insecure/w:20/plain/" + origin.url("/status/404").absoluteString
        #expect(await proxy.respond(to: ProxyRequest(path: missing)).status == 404)
        #expect(await proxy.respond(to: ProxyRequest(path: "/bad/w:20/plain/http://h/a.jpg")).status == 403)

        let reply = await proxy.respond(to: ProxyRequest(path: "/metrics"))
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        let text = String(decoding: reply.body, as: UTF8.self)
        #expect(text.contains("# TYPE webimage_serve_requests_total counter"))
        #expect(text.contains("# TYPE webimage_serve_request_duration_seconds histogram"))
        let samples = PrometheusText.samples(text)
        #expect(samples["webimage_serve_requests_total{status=\"200\",format=\"webp\"}"] == 1)
        #expect(samples["webimage_serve_requests_total{status=\"200\",format=\"png\"}"] == 1)
        #expect(samples["webimage_serve_requests_total{status=\"404\",format=\"none\"}"] == 1)
        #expect(samples["webimage_serve_requests_total{status=\"403\",format=\"none\"}"] == 1)
        #expect(samples["webimage_serve_source_errors_total{code=\"invalidDownloadStatusCode\"}"] == 1)
        #expect(samples["webimage_serve_request_duration_seconds_count"] == 4, "the scrape is counted after it")
        #expect(samples["webimage_serve_request_duration_seconds_bucket{le=\"+Inf\"}"] == 4)
        #expect(samples["webimage_serve_jobs_in_flight"] == 0)
        #expect(samples["webimage_serve_queue_depth"] == 0)
        // The downloader reports into the same registry.
        #expect(samples["webimage_downloads_total{result=\"success\"}"] == 2)
        #expect(samples["webimage_errors_total{code=\"invalidDownloadStatusCode\"}"] == 1)
        #expect((samples["webimage_bytes_received_total"] ?? 0) > 0)
    }

    @Test("each request is one access-log line with its status, bytes, cache and format, without the signature")
    func accessLog() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let log = LogCollector()
        let proxy = Self.proxy(accessLogger: log)
        let path = Self.path("w:25/f:png", origin, file: "coffee-progressive.jpg")
        let reply = await proxy.respond(to: ProxyRequest(path: path))
        #expect(reply.status == 200)
        #expect(log.records.count == 1)
        let line = try #require(log.records.first)
        #expect(line.message == "request")
        #expect(line.level == .info)
        #expect(line.metadata["method"] == "GET")
        #expect(line.metadata["path"] == "\(path)")
        #expect(line.metadata["status"] == "200")
        #expect(line.metadata["bytes"] == "\(reply.body.count)")
        #expect(line.metadata["cache"] == "miss")
        #expect(line.metadata["format"] == "png")
        #expect(line.metadata["duration_ms"].map { Double("\($0)") != nil } == true)

        let signed = "/c2lnbmF0dXJl/w:25/plain/http://h/a.jpg"
        #expect(await proxy.respond(to: ProxyRequest(method: "HEAD", path: signed)).status == 403)
        #expect(log.records.count == 2)
        #expect(log.records.last?.metadata["path"] == "/-/w:25/plain/http://h/a.jpg", "the signature is not logged")
        #expect(log.records.last?.metadata["bytes"] == "0")
        #expect(log.records.last?.metadata["cache"] == "-")

        #expect(await proxy.respond(to: ProxyRequest(path: "/health")).status == 200)
        #expect(log.records.count == 3)
        #expect(log.records.last?.level == .debug, "probes log below info")
    }

    @Test("/health is liveness; /health/ready turns 503 once draining while images are still served")
    func readiness() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let proxy = Self.proxy()
        #expect(await proxy.respond(to: ProxyRequest(path: "/health/ready")).status == 200)
        proxy.beginDraining()
        let ready = await proxy.respond(to: ProxyRequest(path: "/health/ready"))
        #expect(ready.status == 503)
        #expect(String(decoding: ready.body, as: UTF8.self) == "draining\n")
        #expect(await proxy.respond(to: ProxyRequest(path: "/health")).status == 200)
        let image = await proxy.respond(to: ProxyRequest(path: Self.path("w:10/f:png", origin, file: "horse-rgba.png")))
        #expect(image.status == 200)
    }

    @Test("sizes take K, M, G and T as powers of 1024 and refuse anything else")
    func byteCounts() {
        #expect(ImageProxyConfiguration.byteCount("1048576") == 1_048_576)
        #expect(ImageProxyConfiguration.byteCount("512K") == 512 * 1024)
        #expect(ImageProxyConfiguration.byteCount("500m") == 500 * 1024 * 1024)
        #expect(ImageProxyConfiguration.byteCount("2GiB") == 2 << 30)
        #expect(ImageProxyConfiguration.byteCount("1TB") == 1 << 40)
        for bad in ["", "G", "1.5G", "-1M", "10X", "99999999999999999999", "9999999999T", "１G"] {
            #expect(ImageProxyConfiguration.byteCount(bad) == nil, "\(bad)")
        }
    }
}
