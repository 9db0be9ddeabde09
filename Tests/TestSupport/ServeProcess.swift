import Foundation
import Locking

/// `webimage serve` running as a child process on a free loopback port, and a curl-based client for it.
///
/// The child is started with `--host 127.0.0.1 --port 0`; its first stdout line names the port. `stop()`
/// sends SIGTERM and waits for the exit, so each test also checks the graceful shutdown (status 0).
package final class ServeProcess: Sendable {
    /// One HTTP exchange as curl saw it.
    package struct Reply: Sendable {
        package var status: Int
        /// Header fields, names lowercased; the last value of a repeated field.
        package var headers: [String: String]
        package var body: Data

        package func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    package let port: Int
    private let process: Process
    private let stderrText: Lock<Data>

    /// Starts `webimage serve` with `arguments` (after `--host 127.0.0.1 --port 0` unless `listenFlags` is
    /// false, when the environment must say where to listen), and returns once it listens.
    ///
    /// The start blocks until the child prints its port (seconds under a sanitizer or a loaded machine), so
    /// it runs on a thread of its own: blocked on Swift's cooperative pool (two threads on two cores), a few
    /// starting servers would stall every async test of the run.
    package static func start(
        _ arguments: [String], environment: [String: String] = [:], listenFlags: Bool = true
    ) async throws -> ServeProcess {
        let started = await offCooperativePool {
            Result { try ServeProcess(arguments, environment: environment, listenFlags: listenFlags) }
        }
        return try started.get()
    }

    private init(_ arguments: [String], environment: [String: String] = [:], listenFlags: Bool = true) throws {
        let process = Process()
        process.executableURL = try CLIRunner.executable("webimage")
        process.arguments = ["serve"] + (listenFlags ? ["--host", "127.0.0.1", "--port", "0"] : []) + arguments
        // Only the test's own settings: none of the runner's WEBIMAGE_* or imgproxy's IMGPROXY_* variables.
        var processEnvironment = ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("IMGPROXY_")
                && !["WEBIMAGE_KEY", "WEBIMAGE_SALT", "WEBIMAGE_HOST", "WEBIMAGE_PORT"].contains($0.key)
        }
        for (key, value) in environment { processEnvironment[key] = value }
        process.environment = processEnvironment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process

        let stderrText = Lock(Data())
        self.stderrText = stderrText
        Thread {
            while case let chunk = err.fileHandleForReading.availableData, !chunk.isEmpty {
                stderrText.withLock { $0.append(chunk) }
            }
        }.start()
        // The first stdout line, read on this thread: the child writes it as soon as it listens, and a
        // child that fails to start closes the pipe, which ends the read.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "listening on http://127.0.0.1:"),
            let port = Int(text[range.upperBound...].prefix { $0.isNumber })
        else {
            process.waitUntilExit()
            throw FixtureMissing(
                "webimage serve did not start: \(text) \(String(decoding: stderrText.withLock { $0 }, as: UTF8.self))")
        }
        self.port = port
        Thread {
            // Drains stdout so the child never blocks on a full pipe.
            while !out.fileHandleForReading.availableData.isEmpty {}
        }.start()
    }

    deinit {
        // A test that threw before `stop()` still ends its child.
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
    }

    /// The child's peak resident memory so far (VmHWM), in KiB; nil once it exited.
    package var peakResidentKiB: Int? { CLIRunner.highWaterMarkKiB("/proc/\(process.processIdentifier)/status") }

    /// What the child wrote to stderr so far.
    package var stderr: String { String(decoding: stderrText.withLock { $0 }, as: UTF8.self) }

    /// Sends SIGTERM and returns at once.
    package func terminate() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
    }

    /// SIGTERM, then the exit status (0 after a graceful shutdown).
    @discardableResult
    package func stop() async -> Int32 {
        let process = self.process
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        return await withCheckedContinuation { continuation in
            Thread {
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus)
            }.start()
        }
    }

    /// GET (or `method`) `path` with extra header fields, through curl.
    package func get(_ path: String, headers: [String: String] = [:], method: String = "GET") async throws -> Reply {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bodyFile = folder.appendingPathComponent("body")
        let headerFile = folder.appendingPathComponent("headers")
        var arguments = [
            "-s", "--path-as-is", "-X", method, "-o", bodyFile.path, "-D", headerFile.path, "-w", "%{http_code}",
            "--max-time", "60",
        ]
        if method == "HEAD" { arguments.append("-I") }
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        arguments.append("http://127.0.0.1:\(port)\(path)")
        let output = try await CLIRunner.runProgram("/usr/bin/curl", arguments)
        guard let status = Int(output.stdout) else {
            throw FixtureMissing("curl failed: \(output.stdout) \(output.stderr)")
        }
        var fields: [String: String] = [:]
        let headerText = (try? String(contentsOf: headerFile, encoding: .utf8)) ?? ""
        for line in headerText.split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Reply(status: status, headers: fields, body: (try? Data(contentsOf: bodyFile)) ?? Data())
    }

    /// imgproxy's signature of `path`, computed by Python's `hmac` (not by the code under test).
    package static func sign(_ path: String, key: String, salt: String) async throws -> String {
        let script = """
            import base64, hashlib, hmac, sys
            mac = hmac.new(bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2]) + sys.argv[3].encode(), hashlib.sha256)
            print(base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode())
            """
        let output = try await CLIRunner.runProgram("/usr/bin/env", ["python3", "-c", script, key, salt, path])
        let signature = output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard output.status == 0, !signature.isEmpty else { throw FixtureMissing("python3 failed: \(output.stderr)") }
        return signature
    }

    /// The width and height in a PNG's IHDR.
    package static func pngSize(_ data: Data) -> (width: Int, height: Int)? {
        let bytes = [UInt8](data)
        guard bytes.count >= 24, bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) else { return nil }
        func word(_ offset: Int) -> Int { bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) } }
        return (word(16), word(20))
    }
}
