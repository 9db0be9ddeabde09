import Foundation
import LocalImageServer
import Locking
import ServerTestSupport
import TestSupport
import Testing

/// `webimage serve`'s OpenTelemetry spans, exported over OTLP/HTTP (JSON) as the standard `OTEL_*` variables
/// say, to a receiver on loopback (a route of the test's origin server): the names, the trace continued
/// from the request's `traceparent`, and every span's parent.
@Suite("webimage serve: OpenTelemetry spans", .timeLimit(.minutes(5)))
struct ServeTracingTests {
    static let key = ServeCommandTests.key
    static let salt = ServeCommandTests.salt

    /// One span as the OTLP JSON export carries it.
    struct Span {
        var name: String
        var traceID: String
        var spanID: String
        var parentID: String
        var kind: String
        var attributes: [String: String]
        var isError: Bool
    }

    @Test("spans for request, cache, fetch, decode, transform and encode, continuing the traceparent's trace")
    func spansReachTheCollectorWithTheirParents() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let exports = Lock<[Data]>([])
        origin.route("/v1/traces") { request in
            exports.withLock { $0.append(request.body) }
            return .init(status: 200, headers: [("Content-Type", "application/json")], body: .data(Data("{}".utf8)))
        }
        let cache = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: cache) }
        let serve = try await ServeProcess.start(
            ["--allow-destination", "127.0.0.0/8", "--cache-dir", cache.path, "--cache-size", "16M"],
            environment: [
                "IMGPROXY_KEY": Self.key, "IMGPROXY_SALT": Self.salt,
                "OTEL_EXPORTER_OTLP_ENDPOINT": origin.url("/").absoluteString.trimmingSuffix("/"),
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_BSP_SCHEDULE_DELAY": "100",
            ])
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString
        let path = "/rs:fit:64:64/plain/\(source)@png"
        let signature = try await ServeProcess.sign(path, key: Self.key, salt: Self.salt)
        let traceID = "0af7651916cd43dd8448eb211c80319c"
        let callerSpan = "b7ad6b7169203331"
        let first = try await serve.get(
            "/\(signature)\(path)", headers: ["traceparent": "00-\(traceID)-\(callerSpan)-01"])
        #expect(first.status == 200)
        // The same URL again, from the result cache, in a trace of its own.
        let second = try await serve.get("/\(signature)\(path)")
        #expect(second.status == 200)
        // A graceful stop flushes the batch of spans not yet sent.
        #expect(await serve.stop() == 0, "\(serve.stderr)")
        #expect(serve.stderr.contains("exporting spans"), "\(serve.stderr)")

        let spans = try exports.withLock { $0 }.flatMap(Self.spans(in:))
        let continued = spans.filter { $0.traceID == traceID }
        let names = continued.map(\.name)
        for name in ["request", "cache", "fetch", "decode", "transform", "encode"] {
            #expect(names.filter { $0 == name }.count == 1, "\(name) in \(names)")
        }
        let request = try #require(continued.first { $0.name == "request" })
        #expect(request.parentID == callerSpan)
        #expect(request.kind == "SPAN_KIND_SERVER" || request.kind == "2", "\(request.kind)")
        #expect(request.attributes["http.response.status_code"] == "200")
        #expect(request.attributes["webimage.cache"] == "miss")
        #expect(request.attributes["url.path"]?.hasPrefix("/-/rs:fit:64:64/plain/") == true)
        for step in continued where step.name != "request" {
            #expect(step.parentID == request.spanID, "\(step.name)'s parent")
            #expect(!step.isError, "\(step.name)")
        }
        #expect(continued.first { $0.name == "cache" }?.attributes["webimage.cache.hit"] == "false")

        // The repeat: a new trace (no parent), one cache lookup that hit, and no work.
        let others = Dictionary(grouping: spans.filter { $0.traceID != traceID }, by: \.traceID)
        #expect(others.count == 1)
        let repeatSpans = others.values.first ?? []
        #expect(repeatSpans.map(\.name).sorted() == ["cache", "request"])
        let repeatRequest = try #require(repeatSpans.first { $0.name == "request" })
        #expect(repeatRequest.parentID.isEmpty)
        #expect(repeatRequest.attributes["webimage.cache"] == "hit")
        #expect(repeatSpans.first { $0.name == "cache" }?.attributes["webimage.cache.hit"] == "true")
        #expect(repeatSpans.first { $0.name == "cache" }?.parentID == repeatRequest.spanID)
    }

    @Test("without an OTLP endpoint nothing is exported; OTEL_SDK_DISABLED=true turns an endpoint off")
    func nothingIsSentUnlessAsked() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let exports = Lock(0)
        origin.route("/v1/traces") { _ in
            exports.withLock { $0 += 1 }
            return .init(status: 200, headers: [("Content-Type", "application/json")], body: .data(Data("{}".utf8)))
        }
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString
        let path = "/rs:fit:32:32/plain/\(source)@png"
        let signature = try await ServeProcess.sign(path, key: Self.key, salt: Self.salt)
        let endpoint = origin.url("/").absoluteString.trimmingSuffix("/")
        for environment in [
            [:], ["OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint],
            ["OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint],
        ] {
            let serve = try await ServeProcess.start(
                ["--allow-destination", "127.0.0.0/8"],
                environment: ["IMGPROXY_KEY": Self.key, "IMGPROXY_SALT": Self.salt].merging(environment) { $1 })
            #expect(try await serve.get("/\(signature)\(path)").status == 200)
            #expect(await serve.stop() == 0, "\(serve.stderr)")
            #expect(!serve.stderr.contains("exporting spans"), "\(environment)")
        }
        #expect(exports.withLock { $0 } == 0)
    }

    /// The spans of one OTLP/HTTP JSON export body (`ExportTraceServiceRequest`).
    static func spans(in body: Data) throws -> [Span] {
        let root = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        var spans: [Span] = []
        for resource in root["resourceSpans"] as? [[String: Any]] ?? [] {
            for scope in resource["scopeSpans"] as? [[String: Any]] ?? [] {
                for span in scope["spans"] as? [[String: Any]] ?? [] {
                    var attributes: [String: String] = [:]
                    for attribute in span["attributes"] as? [[String: Any]] ?? [] {
                        guard let key = attribute["key"] as? String, let value = attribute["value"] as? [String: Any],
                            let first = value.values.first
                        else { continue }
                        // A bool arrives as an NSNumber, which prints as 0 or 1.
                        if let flag = value["boolValue"] as? Bool {
                            attributes[key] = flag ? "true" : "false"
                        } else {
                            attributes[key] = "\(first)"
                        }
                    }
                    let status = "\((span["status"] as? [String: Any])?["code"] ?? "")"
                    spans.append(
                        Span(
                            name: span["name"] as? String ?? "", traceID: hex(span["traceId"]),
                            spanID: hex(span["spanId"]), parentID: hex(span["parentSpanId"]),
                            kind: "\(span["kind"] ?? "")", attributes: attributes,
                            isError: status == "STATUS_CODE_ERROR" || status == "2"))
                }
            }
        }
        return spans
    }

    /// An id as lowercase hex: OTLP's JSON writes ids in hex; a protobuf JSON mapping would write base64.
    static func hex(_ value: Any?) -> String {
        guard let text = value as? String, !text.isEmpty else { return "" }
        if text.count % 2 == 0, text.allSatisfy(\.isHexDigit) { return text.lowercased() }
        return Data(base64Encoded: text)?.map { String(format: "%02x", $0) }.joined() ?? text
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
