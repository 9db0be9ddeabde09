import Prometheus

/// The proxy's counters in a Prometheus registry of its own (so two proxies in one process never mix), read
/// by `GET /metrics` in Prometheus's text format:
///
/// - `webimage_serve_requests_total{status,format}`: every answer; `format` is `jpeg`, `png`, `webp`,
///   `avif` for an image and `none` otherwise (errors, 304s, `/health`, `/metrics`);
/// - `webimage_serve_request_duration_seconds`: a histogram of the time to answer;
/// - `webimage_serve_source_errors_total{code}`: failed source fetches by `ImageDownloaderError.Code`
///   (`timedOut`, `invalidDownloadStatusCode`, `destinationNotAllowed`, …; `deadline` when the requests'
///   deadline passed first or every request for the result left, so the work was cancelled; `truncated`
///   for a source file that ends early);
/// - `webimage_serve_result_cache_hits_total`, `webimage_serve_result_cache_misses_total`;
/// - `webimage_serve_coalesced_requests_total`: requests answered by work another request started;
/// - `webimage_serve_rejected_total`: requests refused with 503 because the queue was full;
/// - `webimage_serve_jobs_in_flight`, `webimage_serve_queue_depth`: jobs running and waiting, when scraped;
/// - and the proxy's downloader's metrics (`webimage_downloads_total`, `webimage_errors_total`,
///   `webimage_bytes_received_total`, `webimage_download_duration`, …; see `ImageDownloaderConfig.metricsFactory`).
///
/// With a namespace (`ImageProxyConfiguration.metricsNamespace`) every name starts with it and `_`.
final class ProxyMetrics: Sendable {
    /// The registry the metrics live in.
    let registry: PrometheusCollectorRegistry
    /// What every name starts with: `webimage`, or the namespace, `_` and `webimage`.
    let namespace: String
    private let duration: DurationHistogram
    private let cacheHits: Counter
    private let cacheMisses: Counter
    private let coalesced: Counter
    private let rejected: Counter
    private let inFlight: Gauge
    private let queueDepth: Gauge

    init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), namespace: String? = nil) {
        self.registry = registry
        let namespace = namespace.map { $0 + "_webimage" } ?? "webimage"
        self.namespace = namespace
        duration = registry.makeDurationHistogram(
            descriptor: Self.name(in: namespace, "request_duration", unit: "seconds", "Time from request to answer."),
            labels: [],
            buckets: [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000].map { .milliseconds($0) })
        cacheHits = registry.makeCounter(
            descriptor: Self.name(
                in: namespace, "result_cache_hits", unit: "total", "Results served from the result cache."),
            labels: [])
        cacheMisses = registry.makeCounter(
            descriptor: Self.name(
                in: namespace, "result_cache_misses", unit: "total", "Results not in the result cache."),
            labels: [])
        coalesced = registry.makeCounter(
            descriptor: Self.name(
                in: namespace, "coalesced_requests", unit: "total", "Requests that joined running work."),
            labels: [])
        rejected = registry.makeCounter(
            descriptor: Self.name(
                in: namespace, "rejected", unit: "total", "Requests refused with 503: the queue was full."),
            labels: [])
        inFlight = registry.makeGauge(
            descriptor: Self.name(in: namespace, "jobs_in_flight", unit: "", "Results being made now."), labels: [])
        queueDepth = registry.makeGauge(
            descriptor: Self.name(in: namespace, "queue_depth", unit: "", "Results waiting for a slot."), labels: [])
    }

    /// Counts one answer.
    func request(status: Int, format: String, duration: Duration) {
        registry.makeCounter(
            descriptor: Self.name(in: namespace, "requests", unit: "total", "Requests answered, by status and format."),
            labels: [("status", String(status)), ("format", format)]
        ).increment()
        self.duration.record(duration)
    }

    /// Counts a failed source fetch.
    func sourceError(code: String) {
        registry.makeCounter(
            descriptor: Self.name(
                in: namespace, "source_errors", unit: "total", "Failed source fetches, by error code."),
            labels: [("code", code)]
        ).increment()
    }

    /// Counts a result-cache lookup.
    func resultCache(hit: Bool) {
        (hit ? cacheHits : cacheMisses).increment()
    }

    /// Counts a request that joined work already running.
    func joined() { coalesced.increment() }

    /// Counts a 503.
    func refused() { rejected.increment() }

    /// The text exposition, with the gauges set from `load` first.
    func exposition(load: WorkLimiter.Snapshot) -> [UInt8] {
        inFlight.set(to: Double(load.running))
        queueDepth.set(to: Double(load.queued))
        return registry.emitToBuffer()
    }

    private static func name(in namespace: String, _ metric: String, unit: String, _ help: String)
        -> MetricNameDescriptor
    {
        MetricNameDescriptor(
            namespace: namespace, subsystem: "serve", metricName: metric, unitName: unit, helpText: help)
    }
}
