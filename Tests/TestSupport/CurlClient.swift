import Foundation

/// Runs the `curl` command as an independent client for the server tests. (curl only checks the test
/// server here; the product's own transport is tested elsewhere.)
package struct Curl {
    /// What one curl run produced.
    package struct Result: Sendable {
        /// curl's exit code: 0 success, 22 HTTP error with -f, 28 timeout, 47 too many redirects,
        /// 18 partial file, 60 certificate not trusted, 63 max file size exceeded.
        package let exitCode: Int32
        /// The body of the (last) transfer.
        package let body: Data
        /// The raw response heads, all of them when curl followed redirects.
        package let rawHeaders: String
        /// What `-w` printed.
        package let writeOut: String
        package let stderr: String

        /// The header `name` of the last response head (case-insensitive), or `nil`.
        package func header(_ name: String) -> String? {
            lastHead.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// The status line's code of the last response head.
        package var status: Int? {
            let heads = rawHeaders.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
            guard let statusLine = heads.last?.components(separatedBy: "\r\n").first else { return nil }
            let parts = statusLine.split(separator: " ")
            return parts.count > 1 ? Int(parts[1]) : nil
        }

        private var lastHead: [(name: String, value: String)] {
            let heads = rawHeaders.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
            guard let head = heads.last else { return [] }
            return head.components(separatedBy: "\r\n").dropFirst().compactMap { line in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (
                    String(line[..<colon]),
                    line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                )
            }
        }
    }

    /// Runs `curl -sS -D <headers> -o <body> <arguments>` (no `-o` added when `arguments` has one) and
    /// waits for it on a Dispatch thread, never blocking the cooperative pool.
    package static func run(_ arguments: [String]) async throws -> Result {
        try await launch(arguments).result()
    }

    /// A curl process already started; `result()` waits for it.
    package struct Launched: Sendable {
        package let process: Process
        package let scratch: URL
        package let stdout: Pipe
        package let stderr: Pipe
        package let exited: Task<Void, Never>

        package func result() async -> Result {
            await exited.value
            defer { try? FileManager.default.removeItem(at: scratch) }
            return Result(
                exitCode: process.terminationStatus,
                body: (try? Data(contentsOf: scratch.appendingPathComponent("body"))) ?? Data(),
                rawHeaders: (try? String(contentsOf: scratch.appendingPathComponent("headers"), encoding: .utf8)) ?? "",
                writeOut: String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                stderr: String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            )
        }
    }

    /// Starts curl now, on the calling thread, so several launches overlap even when the cooperative pool
    /// is busy.
    package static func launch(_ arguments: [String]) throws -> Launched {
        let scratch = FileManager.default.temporaryDirectory
            .appendingPathComponent("curl-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        var full = ["curl", "-sS", "-D", scratch.appendingPathComponent("headers").path]
        if !arguments.contains("-o") { full += ["-o", scratch.appendingPathComponent("body").path] }
        full += arguments
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = full
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        let exited = Task.detached { await offCooperativePool { done.wait() } }
        return Launched(process: process, scratch: scratch, stdout: stdout, stderr: stderr, exited: exited)
    }
}
