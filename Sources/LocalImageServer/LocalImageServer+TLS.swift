import Foundation
import NIOSSL

extension LocalImageServer {
    /// Whether the server speaks plain HTTP or HTTPS.
    public enum TLSMode: Sendable, Equatable {
        /// Plain HTTP.
        case none
        /// HTTPS with a fresh self-signed certificate for `127.0.0.1` and `localhost`, made with the
        /// `openssl` command at ``LocalImageServer/start()``. A client that verifies certificates against
        /// the system trust store rejects it; one that trusts
        /// ``LocalImageServer/certificateURL`` as a CA, or does not verify, accepts it. ALPN offers
        /// `http/1.1` only, so every client speaks HTTP/1.1.
        case selfSigned
        /// HTTPS as ``selfSigned``, with ALPN offering `h2` first and `http/1.1` second: a client that
        /// asks for HTTP/2 (curl over TLS does by default) gets it, with every stream of a connection
        /// sharing that connection's id; a client that offers only HTTP/1.1, or no ALPN, falls back.
        case selfSignedHTTP2

        /// Whether the server speaks TLS at all.
        public var isTLS: Bool { self != .none }
    }

    /// Errors from starting the server.
    public enum StartError: Error, CustomStringConvertible {
        /// `start()` was called after `shutdown()`; a server runs at most once.
        case alreadyShutDown

        /// A readable description.
        public var description: String {
            switch self {
            case .alreadyShutDown:
                "LocalImageServer.start() after shutdown()"
            }
        }
    }
}

extension SelfSignedIdentity {
    /// A server context offering `alpn` (most preferred first) to clients that negotiate a protocol.
    func makeSSLContext(alpn: [String]) throws -> NIOSSLContext {
        let certificates = try NIOSSLCertificate.fromPEMFile(certificateURL.path)
        let key = try NIOSSLPrivateKey(file: keyURL.path, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.applicationProtocols = alpn
        return try NIOSSLContext(configuration: configuration)
    }
}
