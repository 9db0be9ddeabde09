import Foundation
import TestSupport
import Testing

@testable import WebImage

#if canImport(Glibc)
    import Glibc
#endif

/// A writer process killed with SIGKILL at arbitrary points must never leave an index row that
/// names a torn or missing body.
///
/// The writer is this test binary itself, started again with `--filter` selecting
/// `crashWriterChild()` and the cache directory in an environment variable; without that variable
/// the child is disabled, so a normal run reports it as skipped (never as a pass).
@Suite(.timeLimit(.minutes(5))) struct HTTPCacheCrashTests {
    static let childDirectoryVariable = "WEBIMAGE_CACHE_CRASH_CHILD_DIRECTORY"
    typealias Support = CachingTestSupport

    static func path(for index: Int) -> String { "crash/\(index).png" }

    static func bodySize(for index: Int) -> Int { 64 * 1024 * (1 + index % 4) }

    /// The body stored for `index`: cheap to make (so the child spends its time writing, where a
    /// kill is interesting) and unique per index.
    static func body(for index: Int) -> Data {
        var body = Data(repeating: UInt8(truncatingIfNeeded: index % 251), count: bodySize(for: index))
        withUnsafeBytes(of: UInt64(index).littleEndian) { body.replaceSubrange(0..<8, with: $0) }
        return body
    }

    /// The child: stores bodies of 64–256 KB (by default practically forever), printing
    /// "stored <n>" after each commit, until the parent kills it or it has stored its count. Capacity is small so eviction deletes files while it runs.
    @Test(
        "The writer child (runs only when the crash test starts this binary as its writer)",
        .enabled(if: ProcessInfo.processInfo.environment[HTTPCacheCrashTests.childDirectoryVariable] != nil))
    func crashWriterChild() throws {
        let directory = try #require(ProcessInfo.processInfo.environment[Self.childDirectoryVariable])
        let environment = ProcessInfo.processInfo.environment
        let start = environment["WEBIMAGE_CACHE_CRASH_CHILD_START"].flatMap { Int($0) } ?? 0
        let count = environment["WEBIMAGE_CACHE_CRASH_CHILD_COUNT"].flatMap { Int($0) } ?? 100_000
        let cache = HTTPCache(
            memoryCapacity: 0, diskCapacity: 3 * 1024 * 1024, directory: URL(fileURLWithPath: directory),
            logger: LogCollector { record in FileHandle.standardOutput.write(Data("log \(record.message)\n".utf8)) }
                .logger)
        for index in start..<(start + count) {
            let body = Self.body(for: index)
            cache.store(
                Support.response(Self.path(for: index), headers: ["Cache-Control": "max-age=100000"], body: body),
                body: body, for: Support.request(Self.path(for: index)), requestDate: Support.t0,
                responseDate: Support.t0)
            // write(2) directly: unbuffered, so the parent sees each line as soon as it is committed.
            FileHandle.standardOutput.write(Data("stored \(index)\n".utf8))
        }
    }

    @Test func killedWritersNeverLeaveTornEntries() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var nextIndex = 0
        // Kill at a few different points; each round starts where the last one stopped.
        for killAfter in [3, 11, 7, 19] {
            let (child, output) = try startWriter(directory, start: nextIndex)

            // Wait (on the pipe, not a timer) until the child reports enough commits, then kill it
            // while it is in the middle of the next write.
            var buffer = ""
            var stored: [Int] = []
            var childLogs: [String] = []
            while stored.count < killAfter {
                let chunk = output.fileHandleForReading.availableData
                guard !chunk.isEmpty else { break }  // the child exited on its own: a failure below
                buffer += String(decoding: chunk, as: UTF8.self)
                while let newline = buffer.firstIndex(of: "\n") {
                    let line = String(buffer[..<newline])
                    buffer.removeSubrange(...newline)
                    if line.hasPrefix("stored "), let index = Int(line.dropFirst(7)) { stored.append(index) }
                    if line.hasPrefix("log ") { childLogs.append(line) }
                }
            }
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            #expect(stored.count >= killAfter, "the child stopped early: \(buffer)")
            #expect(child.terminationReason == .uncaughtSignal)
            #expect(childLogs.isEmpty, "\(childLogs)")
            nextIndex = (stored.last ?? nextIndex) + 1

            try verifyEveryIndexedEntryIsIntact(directory)
        }
    }

    /// Starts this test binary as a writer of entries `start..<start + count` into `directory`.
    private func startWriter(_ directory: URL, start: Int, count: Int? = nil) throws -> (Process, Pipe) {
        let child = Process()
        child.executableURL = URL(
            fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        child.arguments = ["--testing-library", "swift-testing", "--filter", "HTTPCacheCrashTests/crashWriterChild"]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childDirectoryVariable] = directory.path
        environment["WEBIMAGE_CACHE_CRASH_CHILD_START"] = String(start)
        if let count { environment["WEBIMAGE_CACHE_CRASH_CHILD_COUNT"] = String(count) }
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()
        return (child, output)
    }

    @Test func processesShareOneDirectoryConcurrently() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Two writer processes and this one, with overlapping keys (a key's body depends only on its
        // index, so whoever wins, the entry must be intact).
        let writers = try [0, 15].map { try startWriter(directory, start: $0, count: 30) }
        let log = LogCollector()
        let cache = HTTPCache(
            memoryCapacity: 0, diskCapacity: 3 * 1024 * 1024, directory: directory, logger: log.logger)
        for index in 10..<40 {
            let body = Self.body(for: index)
            cache.store(
                Support.response(Self.path(for: index), headers: ["Cache-Control": "max-age=100000"], body: body),
                body: body, for: Support.request(Self.path(for: index)), requestDate: Support.t0,
                responseDate: Support.t0)
            _ = cache.lookup(Support.request(Self.path(for: index - 5)), now: Support.t0)
        }
        for (child, output) in writers {
            // Read to the end before waiting, so a full pipe can never block the child.
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            child.waitUntilExit()
            #expect(child.terminationStatus == 0)
            #expect(text.components(separatedBy: "\n").filter { $0.hasPrefix("stored ") }.count == 30)
            #expect(!text.contains("\nlog "), "\(text)")
        }
        #expect(log.messages.isEmpty, "\(log.messages)")
        try verifyEveryIndexedEntryIsIntact(directory)
    }

    private func verifyEveryIndexedEntryIsIntact(_ directory: URL) throws {
        let log = LogCollector()
        let cache = HTTPCache(
            memoryCapacity: 0, diskCapacity: 3 * 1024 * 1024, directory: directory, logger: log.logger)
        let keys = try #require(cache.disk?.keysByLastAccess)
        #expect(!keys.isEmpty)
        for key in keys {
            let index = try #require(key.split(separator: "/").last.flatMap { Int($0.dropLast(4)) })
            let result = cache.lookup(ImageDownloadRequest(url: URL(string: key)!), now: Support.t0 + 1)
            #expect(result.isFresh, "\(key) is indexed but not served")
            #expect(result.cachedResponse?.body == Self.body(for: index), "\(key)")
        }
        #expect(log.messages.isEmpty, "\(log.messages)")
    }
}
