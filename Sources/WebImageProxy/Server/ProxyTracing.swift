import Foundation
import Instrumentation
import Tracing
import WebImage

/// The proxy's spans, through swift-distributed-tracing's global tracer (`InstrumentationSystem`): nothing
/// is recorded until an application bootstraps one (`webimage serve` does with swift-otel when the `OTEL_*`
/// variables ask for an exporter).
///
/// An image or `/info` request is one `request` span (kind server). Its parent is the span current where
/// the proxy was called (a Hummingbird `TracingMiddleware` in an application that mounts the proxy), else
/// the W3C `traceparent` and `tracestate` of the request, else none. Under it:
/// - `cache`: the result cache's lookup, with `webimage.cache.hit`;
/// - `fetch`, `decode`, `transform` and `encode`: the steps of the work that made the result, from the
///   downloader's step reports (`ImageDownloadStepObserving`), timed as they ran. The work is shared by the
///   requests for one result that arrive while it runs: its steps are under the request that started it, and
///   a request that joined has none (its `webimage.cache` attribute says `joined`).
///
/// Attributes follow OpenTelemetry's HTTP conventions where one applies (`http.request.method`,
/// `http.response.status_code`, `url.path` with the signature hidden); a 5xx answer sets the error status.
enum ProxyTracing {
    /// The W3C trace-context fields a request's span continues from.
    static let propagatedFields = ["traceparent", "tracestate"]

    /// Runs `answer` in the `request` span of `request`, logged as `path`.
    static func request(
        _ request: ProxyRequest, path: String, _ answer: () async -> ProxyResponse
    ) async -> ProxyResponse {
        var parent = InstrumentationContext.current ?? .topLevel
        if parent.isEmpty, !request.traceContext.isEmpty {
            InstrumentationSystem.instrument.extract(request.traceContext, into: &parent, using: FieldExtractor())
        }
        return await withSpan("request", context: parent, ofKind: .server) { span in
            span.attributes["http.request.method"] = request.method
            span.attributes["url.path"] = path
            let response = await answer()
            span.attributes["http.response.status_code"] = response.status
            if let cache = response.cacheStatus { span.attributes["webimage.cache"] = cache.rawValue }
            if response.status >= 500 { span.setStatus(SpanStatus(code: .error)) }
            return response
        }
    }

    /// Runs `lookup` (the result cache's read) in a `cache` span; `lookup` returns whether it was a hit.
    static func cacheLookup<T>(_ lookup: () async -> T?) async -> T? {
        await withSpan("cache") { span in
            let found = await lookup()
            span.attributes["webimage.cache.hit"] = found != nil
            return found
        }
    }

    /// Reads the propagated fields out of `ProxyRequest.traceContext`.
    private struct FieldExtractor: Extractor {
        func extract(key: String, from carrier: [String: String]) -> String? { carrier[key.lowercased()] }
    }
}

/// Turns the downloader's step reports for one piece of work into spans under `parent`.
struct ProxyStepSpans: ImageDownloadStepObserving {
    /// The context of the request span the work runs for.
    let parent: InstrumentationContext

    /// The steps of work started in the current context; nil when no span is current (nothing to parent
    /// them to, so nothing is recorded).
    static var current: ProxyStepSpans? {
        guard let context = InstrumentationContext.current, !context.isEmpty else { return nil }
        return ProxyStepSpans(parent: context)
    }

    func downloadStep(_ step: ImageDownloadStep, ranFrom start: Date, to end: Date, error: (any Error)?) {
        let span = startSpan(step.rawValue, at: WallInstant(start), context: parent)
        if let error {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
        }
        span.end(at: WallInstant(max(start, end)))
    }
}

/// A wall-clock time as the tracer's instant.
private struct WallInstant: TracerInstant {
    let nanosecondsSinceEpoch: UInt64

    init(_ date: Date) {
        nanosecondsSinceEpoch = UInt64(max(0, date.timeIntervalSince1970 * 1_000_000_000))
    }

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch }
}
