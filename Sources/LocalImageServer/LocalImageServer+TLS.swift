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
        /// The `openssl` command could not run or failed; `output` is what it printed.
        case certificateGenerationFailed(status: Int32, output: String)

        /// A readable description.
        public var description: String {
            switch self {
            case .alreadyShutDown:
                "LocalImageServer.start() after shutdown()"
            case .certificateGenerationFailed(let status, let output):
                "openssl failed to make a self-signed certificate (exit status \(status)): \(output)"
            }
        }
    }
}

/// A self-signed certificate and key in a temporary directory, removed by `remove()`.
struct SelfSignedIdentity: Sendable {
    let directory: URL
    let certificateURL: URL
    let keyURL: URL

    /// Runs `openssl req -x509` for an EC P-256 key (fast to generate) valid two days for 127.0.0.1/localhost.
    static func generate() throws -> SelfSignedIdentity {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("LocalImageServer-tls-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let identity = SelfSignedIdentity(
            directory: directory,
            certificateURL: directory.appendingPathComponent("cert.pem"),
            keyURL: directory.appendingPathComponent("key.pem")
        )
        do {
            try runOpenSSL([
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", identity.keyURL.path, "-out", identity.certificateURL.path, "-days", "2",
                "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                "-addext", "basicConstraints=critical,CA:TRUE",
            ])
        } catch {
            identity.remove()
            throw error
        }
        return identity
    }

    /// A server context offering `alpn` (most preferred first) to clients that negotiate a protocol.
    func makeSSLContext(alpn: [String]) throws -> NIOSSLContext {
        let certificates = try NIOSSLCertificate.fromPEMFile(certificateURL.path)
        let key = try NIOSSLPrivateKey(file: keyURL.path, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.applicationProtocols = alpn
        return try NIOSSLContext(configuration: configuration)
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    private static func runOpenSSL(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        do {
            try process.run()
        } catch {
            throw LocalImageServer.StartError.certificateGenerationFailed(status: -1, output: "\(error)")
        }
        // Read before waiting so a chatty openssl cannot fill the pipe and block.
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw LocalImageServer.StartError.certificateGenerationFailed(
                status: process.terminationStatus, output: String(decoding: printed, as: UTF8.self))
        }
    }
}
