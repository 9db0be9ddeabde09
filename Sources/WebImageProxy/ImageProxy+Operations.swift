import Foundation
import Logging

/// How busy a proxy is now: `ImageProxy.load`.
public struct ProxyLoad: Sendable, Equatable {
    /// Results being made (each holds one of `maximumConcurrentJobs` slots).
    public var jobsInFlight: Int
    /// Results waiting for a slot (at most `maximumQueuedJobs`).
    public var jobsQueued: Int
    /// Requests waiting for a result being made, those that started the work included; all requests
    /// for one result wait for one piece of work.
    public var requestsWaiting: Int
    /// Source downloads started or joined since the proxy was made: one per result made, however many
    /// requests shared it (two when `skip_processing` fetched the bytes first and the format was not skipped).
    public var sourceRequests: Int
}

/// What the proxy keeps besides its configuration.
struct OperationalState {
    var draining = false
    var sourceRequests = 0
}

extension ImageProxy {
    /// The answer to `request`. Never throws: every failure is a status with a plain-text sentence.
    ///
    /// Besides image URLs it answers three paths, for orchestrators:
    /// - `GET /health`: liveness, 200 `ok` while the process serves at all;
    /// - `GET /health/ready`: readiness, 200 `ready`, or 503 `draining` once `beginDraining()` was called
    ///   (on SIGTERM), so a load balancer stops sending new requests before the listener closes;
    /// - `GET /metrics`: the metrics in Prometheus's text format (see `ProxyMetrics`).
    ///
    /// and `/info/{signature}/{info options}/{source}`, JSON about the source (`ImageProxy+Info.swift`).
    /// With a `pathPrefix`, every one of these paths is answered under it, and any other path with 404;
    /// `/metrics` is answered only while `servesMetrics`.
    ///
    /// Each request is counted in the metrics and logged once to the access logger, at `.info` (`.debug`
    /// for those three paths, which probes and scrapers ask every few seconds): message `request`, with
    /// metadata `method`, `path` (without the signature segment, so a log reader cannot replay signed URLs,
    /// and at most 1,024 characters), `status`, `bytes` (the body sent), `duration_ms`, `cache` (`hit`,
    /// `miss`, `joined`, `revalidated` or `-`) and `format` (`jpeg`, `png`, `webp`, `avif` or `-`).
    public func respond(to request: ProxyRequest) async -> ProxyResponse {
        let started = ContinuousClock.now
        var response: ProxyResponse
        var isOperational = true
        var request = request
        let fullPath = request.path
        // An image URL's path is logged with its signature hidden, after the prefix.
        var loggedPath = fullPath
        switch Self.path(request.path, under: configuration.pathPrefix) {
        case nil:
            isOperational = false
            loggedPath = Self.loggedPath(fullPath)
            response = ProxyResponse(error: ProxyError(status: 404, "not found"))
        case let path? where path == "/health" || path == configuration.healthCheckPath:
            response = ProxyResponse(status: 200, contentType: "text/plain; charset=utf-8", body: Data("ok\n".utf8))
        case "/health/ready"?:
            response =
                isDraining
                ? ProxyResponse(status: 503, contentType: "text/plain; charset=utf-8", body: Data("draining\n".utf8))
                : ProxyResponse(status: 200, contentType: "text/plain; charset=utf-8", body: Data("ready\n".utf8))
        case "/metrics"?:
            // On a listener of their own, the metrics are not answered here (imgproxy's PROMETHEUS_BIND).
            response =
                configuration.servesMetrics
                ? metricsResponse() : ProxyResponse(error: ProxyError(status: 404, "not found"))
        case let path?:
            isOperational = false
            loggedPath = configuration.pathPrefix + Self.loggedPath(path)
            request.path = path
            response = await ProxyTracing.request(request, path: loggedPath) { [request] in
                await respondToImageRequest(request)
            }
        }
        if request.method == "HEAD" {
            // HEAD answers with the GET's header fields, its length included, and no body.
            response.headers.append(("Content-Length", "\(response.body.count)"))
            response.body = Data()
        }
        let elapsed = ContinuousClock.now - started
        let format = response.status == 200 ? response.imageFormatName : nil
        metrics.request(status: response.status, format: format ?? "none", duration: elapsed)
        accessLogger.log(
            level: isOperational ? .debug : .info, "request",
            metadata: [
                "method": "\(request.method)",
                "path": "\(loggedPath)",
                "status": "\(response.status)", "bytes": "\(response.body.count)",
                "duration_ms": "\(Self.milliseconds(elapsed))", "cache": "\(response.cacheStatus?.rawValue ?? "-")",
                "format": "\(format ?? "-")",
            ])
        return response
    }

    /// The metrics in Prometheus's text format (see `ProxyMetrics`), as `GET /metrics` answers them; for a
    /// metrics listener of its own (`ProxyServer.metricsAddress`).
    public func metricsResponse() -> ProxyResponse {
        ProxyResponse(
            status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
            body: Data(metrics.exposition(load: limiter.snapshot)))
    }

    /// `path` after `prefix` (`/` for the prefix alone), as imgproxy's router matches it: the prefix must
    /// end at a `/` or at the end. nil when `path` is not under it; `path` itself without a prefix.
    static func path(_ path: String, under prefix: String) -> String? {
        guard !prefix.isEmpty else { return path }
        guard path.hasPrefix(prefix) else { return nil }
        let rest = path.dropFirst(prefix.count)
        if rest.isEmpty { return "/" }
        return rest.hasPrefix("/") ? String(rest) : nil
    }

    /// Makes `/health/ready` answer 503 from now on; image requests are still served. `ProxyServer` calls
    /// it when a graceful shutdown starts.
    public func beginDraining() {
        state.withLock { $0.draining = true }
    }

    /// Whether `beginDraining()` was called.
    public var isDraining: Bool { state.withLock { $0.draining } }

    /// How busy the proxy is now.
    public var load: ProxyLoad {
        let snapshot = limiter.snapshot
        return ProxyLoad(
            jobsInFlight: snapshot.running, jobsQueued: snapshot.queued, requestsWaiting: results.waiterCount,
            sourceRequests: state.withLock { $0.sourceRequests })
    }

    private func respondToImageRequest(_ request: ProxyRequest) async -> ProxyResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            var refused = ProxyResponse(error: ProxyError(status: 405, "only GET and HEAD are served"))
            refused.headers.append(("Allow", "GET, HEAD"))
            return refused
        }
        do {
            return try await request.path.hasPrefix("/info/") ? processInfo(request) : process(request)
        } catch {
            var response = ProxyResponse(error: error)
            if error.status == 503 { response.headers.append(("Retry-After", "\(configuration.retryAfterSeconds)")) }
            return response
        }
    }

    /// The path with its signature segment (the first, the second after `/info`) written `-`, unless it is
    /// `insecure`, and a source URL's user name and password written `***`.
    static func loggedPath(_ path: String) -> String {
        // An `/info` URL's signature is its second segment.
        if path.hasPrefix("/info/") {
            let rest = String(path.dropFirst("/info".count))
            // A signature with nothing after it is still a signature.
            return rest.dropFirst().contains("/") ? "/info" + loggedPath(rest) : "/info/-"
        }
        var logged = ProxyURL.redactingUserInfo(path)
        if logged.hasPrefix("/"), let slash = logged.dropFirst().firstIndex(of: "/"),
            logged[logged.index(after: logged.startIndex)..<slash] != "insecure"
        {
            logged = "/-" + logged[slash...]
        }
        return logged.count > 1024 ? String(logged.prefix(1024)) + "…" : logged
    }

    private static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.1f", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
    }
}
