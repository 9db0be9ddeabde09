import Foundation

// The benchmarks' server is the conformance tests' `NginxServer`: one nginx worker,
// long keep-alive, serving the generated file set on plain HTTP/1.1 (most workloads) and on HTTP/2
// over TLS (the `small-h2` workload), with the plain listener's access log off so logging costs its
// rows nothing. NginxServer.swift and SelfSignedIdentity.swift beside this file are symbolic links to
// the test server's sources (Sources/LocalImageServer), compiled into the benchmark itself:
// LocalImageServer is not a product of WebImage, so another package cannot depend on it.

extension NginxServer {
    /// Starts nginx over `www` for the benchmarks.
    static func forBenchmarks(serving www: URL) throws -> NginxServer {
        var options = Options()
        options.logsPlainHTTP = false
        return try NginxServer(serving: www, options: options)
    }

    /// `http://127.0.0.1:PORT` of the plain listener.
    var baseURL: String { "http://127.0.0.1:\(port(.http1))" }

    /// `https://127.0.0.1:PORT` of the HTTP/2 listener.
    var http2BaseURL: String { "https://127.0.0.1:\(port(.http2))" }

    /// Requests nginx has served so far (stub_status on the plain listener), counting the status request.
    func requestCount() -> Int? {
        let outcome = runChild(["curl", "-s", "\(baseURL)/nginx_status"])
        // "Active connections: 1 \nserver accepts handled requests\n 5 5 17 \n..."
        let lines = outcome.stdout.split(separator: "\n")
        guard outcome.status == 0, lines.count > 2 else { return nil }
        return lines[2].split(separator: " ").last.flatMap { Int($0) }
    }
}

extension String {
    var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
