import Foundation
import LocalImageServer
import LocalImageServerTLS
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// The protocols the downloader's behaviour tests run over: every such test takes a `Wire` argument, so
/// the suite can never again be blind to HTTP/2, the protocol most servers speak over TLS.
enum Wire: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// Plain HTTP/1.1 on loopback.
    case http1 = "HTTP/1.1"
    /// HTTP/2 over TLS (ALPN `h2`), the downloader verifying the server's self-signed certificate as a CA.
    case http2 = "HTTP/2"

    var testDescription: String { rawValue }

    /// The curl-reported version the wire must give (`ImageDownloadMetrics.httpVersion`).
    var httpVersion: String { self == .http1 ? "1.1" : "2" }

    /// A started loopback server over the corpus speaking this wire's protocol.
    func startServer() throws -> LocalImageServer {
        try Fixtures.server(tls: self == .http1 ? .none : .selfSignedHTTP2)
    }

    /// A started server with TLS in either case: HTTP/1.1 over TLS, or HTTP/2 over TLS.
    func startTLSServer() throws -> LocalImageServer {
        try Fixtures.server(tls: self == .http1 ? .selfSigned : .selfSignedHTTP2)
    }
}

extension LocalImageServer {
    /// The default configuration, trusting this server's certificate (when it has one) as a CA, then
    /// changed by `change`.
    func downloaderConfig(_ change: (inout ImageDownloaderConfig) -> Void = { _ in }) -> ImageDownloaderConfig {
        var config = ImageDownloaderConfig()
        config.caBundlePath = certificateURL?.path
        change(&config)
        return config
    }

    /// A downloader with ``downloaderConfig(_:)``.
    func downloader(_ change: (inout ImageDownloaderConfig) -> Void = { _ in }) -> ImageDownloader {
        ImageDownloader(config: downloaderConfig(change))
    }
}
