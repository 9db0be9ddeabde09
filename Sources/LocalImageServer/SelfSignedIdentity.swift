import Foundation

/// A self-signed certificate and key in a temporary directory, removed by `remove()`. Foundation only, so
/// that the benchmarks can compile this file and NginxServer.swift into their own executable.
package struct SelfSignedIdentity: Sendable {
    package let directory: URL
    package let certificateURL: URL
    package let keyURL: URL

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
            throw CertificateGenerationFailed(status: -1, output: "\(error)")
        }
        // Read before waiting so a chatty openssl cannot fill the pipe and block.
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CertificateGenerationFailed(
                status: process.terminationStatus, output: String(decoding: printed, as: UTF8.self))
        }
    }
}

/// The `openssl` command could not run or failed; `output` is what it printed.
struct CertificateGenerationFailed: Error, CustomStringConvertible {
    let status: Int32
    let output: String

    var description: String {
        "openssl failed to make a self-signed certificate (exit status \(status)): \(output)"
    }
}
