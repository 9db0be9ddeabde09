import Foundation
import Locking

/// Runs the package's built executables (`webimage`, `thumbnailer`) as child processes.
///
/// `swift build --build-tests --traits Tools` (what `make test` runs) builds every product, so the
/// binaries sit next to the test bundle. When one is missing (e.g. `swift test --filter` after building
/// only the tests), it is built once with `swift build --traits Tools --product`.
package enum CLIRunner {
    package struct Output: Sendable {
        package var status: Int32
        /// Whether the process ended by a signal (a crash or a trap) rather than by exiting.
        package var signalled = false
        package var stdout: String
        package var stderr: String
        /// The child's peak resident memory in KiB (its VmHWM, read every 5 ms while it ran).
        package var peakRSSKiB = 0
        /// The names of the child's threads seen while it ran (`/proc/PID/task/*/comm`, read every 5 ms).
        package var threadNames: Set<String> = []
        package var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    /// The folder holding the build products: the test bundle's folder.
    package static let productsFolder: URL = {
        let candidates = [
            Bundle.main.executableURL?.deletingLastPathComponent(),
            Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent(),
        ].compactMap { $0 }
        for candidate in candidates
        where FileManager.default.fileExists(atPath: candidate.appendingPathComponent("webimage").path) {
            return candidate
        }
        return candidates.first ?? Fixtures.packageRoot.appendingPathComponent(".build/debug")
    }()

    private static let buildLock = Lock<Set<String>>([])

    /// The path of product `name`, building it first when it is missing.
    package static func executable(_ name: String) throws -> URL {
        let url = productsFolder.appendingPathComponent(name)
        try buildLock.withLock { built in
            guard !FileManager.default.isExecutableFile(atPath: url.path), !built.contains(name) else { return }
            built.insert(name)
            let build = Process()
            build.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            build.arguments = ["swift", "build", "--traits", "Tools", "--product", name]
            build.currentDirectoryURL = Fixtures.packageRoot
            try build.run()
            build.waitUntilExit()
        }
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw FixtureMissing(
                "\(url.path) is missing and `swift build --traits Tools --product \(name)` did not make it")
        }
        return url
    }

    /// Runs product `name` with `arguments`, feeding `stdin`, and returns its exit status and output.
    /// `shell` is a shell command run first, in the same process (`ulimit -v 600000`, say).
    /// `killAfterMilliseconds`: the child gets SIGKILL that long after it starts (if still running).
    package static func run(
        _ name: String, _ arguments: [String], stdin: Data? = nil, in directory: URL? = nil,
        environment: [String: String] = [:], shell: String? = nil, killAfterMilliseconds: Int? = nil
    ) async throws -> Output {
        try await runExecutable(
            try executable(name), arguments, stdin: stdin, in: directory, environment: environment, shell: shell,
            killAfterMilliseconds: killAfterMilliseconds)
    }

    /// Runs any program (a path) the same way.
    package static func runProgram(
        _ path: String, _ arguments: [String], environment: [String: String] = [:], killAfterMilliseconds: Int? = nil
    ) async throws -> Output {
        try await runExecutable(
            URL(fileURLWithPath: path), arguments, environment: environment,
            killAfterMilliseconds: killAfterMilliseconds)
    }

    private static func runExecutable(
        _ executable: URL, _ arguments: [String], stdin: Data? = nil, in directory: URL? = nil,
        environment: [String: String] = [:], shell: String? = nil, killAfterMilliseconds: Int? = nil
    ) async throws -> Output {
        let process = Process()
        if let shell {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "\(shell); exec \"$0\" \"$@\"", executable.path] + arguments
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        if let directory { process.currentDirectoryURL = directory }
        var processEnvironment = ProcessInfo.processInfo.environment
        processEnvironment["TERM"] = "dumb"
        for (key, value) in environment { processEnvironment[key] = value }
        process.environment = processEnvironment
        let outPipe = Pipe()
        let errPipe = Pipe()
        let inPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = inPipe
        try process.run()
        if let killAfterMilliseconds {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(killAfterMilliseconds)) {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }
        }
        // Blocking reads and the wait run on threads of their own: neither the cooperative pool nor
        // Dispatch's global queues (whose width on Linux is the core count) are held while a child runs.
        return await withCheckedContinuation { continuation in
            Thread {
                let group = DispatchGroup()
                let stdout = Lock(Data())
                let stderr = Lock(Data())
                group.enter()
                Thread {
                    let data = outPipe.fileHandleForReading.readDataToEndOfFile()
                    stdout.withLock { $0 = data }
                    group.leave()
                }.start()
                group.enter()
                Thread {
                    let data = errPipe.fileHandleForReading.readDataToEndOfFile()
                    stderr.withLock { $0 = data }
                    group.leave()
                }.start()
                if let stdin { inPipe.fileHandleForWriting.write(stdin) }
                try? inPipe.fileHandleForWriting.close()
                // This thread watches the child's high-water mark until it exits.
                let statusFile = "/proc/\(process.processIdentifier)/status"
                var peak = 0
                var threadNames: Set<String> = []
                while process.isRunning {
                    if let kib = Self.highWaterMarkKiB(statusFile) { peak = max(peak, kib) }
                    threadNames.formUnion(Self.threadNames(of: process.processIdentifier))
                    usleep(5_000)
                }
                process.waitUntilExit()
                group.wait()
                continuation.resume(
                    returning: Output(
                        status: process.terminationStatus,
                        signalled: process.terminationReason == .uncaughtSignal,
                        stdout: String(decoding: stdout.withLock { $0 }, as: UTF8.self),
                        stderr: String(decoding: stderr.withLock { $0 }, as: UTF8.self),
                        peakRSSKiB: peak, threadNames: threadNames))
            }.start()
        }
    }

    /// The names of the threads of process `pid` now (empty once it is gone).
    package static func threadNames(of pid: Int32) -> Set<String> {
        guard let directory = opendir("/proc/\(pid)/task") else { return [] }
        defer { closedir(directory) }
        var names: Set<String> = []
        while let entry = readdir(directory) {
            let task = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let tid = Int(task) else { continue }
            let descriptor = open("/proc/\(pid)/task/\(tid)/comm", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
            if count > 0 {
                names.insert(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .newlines))
            }
        }
        return names
    }

    /// VmHWM from a /proc status file, in KiB; nil once the process is gone.
    package static func highWaterMarkKiB(_ path: String) -> Int? {
        // Plain open/read: the file vanishes when the process exits, and Foundation's reader leaks its
        // buffer when a read fails midway (LeakSanitizer reports it).
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[0..<count], as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return nil
    }

    /// Each stdout line parsed as a JSON object.
    package static func jsonObjects(_ output: Output) throws -> [[String: Any]] {
        try output.stdoutLines.map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw FixtureMissing("not a JSON object: \(line)")
            }
            return object
        }
    }

    /// A fresh empty folder under the temporary directory.
    package static func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("webimage-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
