import Foundation
import TestSupport
import Testing

@testable import WebImage

#if canImport(Glibc)
    import Glibc
#endif

/// The processed-image cache across processes: a writer killed with SIGKILL at arbitrary points, and
/// two writer processes plus two instances in this one sharing a directory, must leave every indexed
/// entry intact. The same pattern as `HTTPCacheCrashTests`: the writer is this test binary, started
/// with `--filter` selecting `writerChild()`; without the variable a normal run skips it.
@Suite(.timeLimit(.minutes(5))) struct ImageDiskCacheCrashTests {
    static let childDirectoryVariable = "WEBIMAGE_IMAGE_DISK_CACHE_CHILD_DIRECTORY"
    static let byteLimit = 3 * 1024 * 1024
    typealias Support = CachingTestSupport

    static func key(for index: Int) -> ProcessedImageKey {
        ProcessedImageKey(
            url: Support.url("crash/\(index).png"), transformerKey: "resize", encoderKey: WebPEncoder().key)
    }

    /// The bytes stored for `index`: 64–256 KB, cheap to make and unique per index.
    static func bytes(for index: Int) -> Data {
        var bytes = Data(repeating: UInt8(truncatingIfNeeded: index % 251), count: 64 * 1024 * (1 + index % 4))
        withUnsafeBytes(of: UInt64(index).littleEndian) { bytes.replaceSubrange(0..<8, with: $0) }
        return bytes
    }

    static func cache(_ directory: URL, log: LogCollector) -> ImageDiskCache {
        ImageDiskCache(directory: directory, byteLimit: byteLimit, maximumAge: nil, logger: log.logger)
    }

    /// The child: stores entries, printing "stored <n>" after each commit, until killed or done. The
    /// byte limit is small, so eviction deletes files while it runs.
    @Test(
        "The writer child (runs only when a crash test starts this binary as its writer)",
        .enabled(if: ProcessInfo.processInfo.environment[ImageDiskCacheCrashTests.childDirectoryVariable] != nil))
    func writerChild() throws {
        let environment = ProcessInfo.processInfo.environment
        let directory = try #require(environment[Self.childDirectoryVariable])
        let start = environment["WEBIMAGE_IMAGE_DISK_CACHE_CHILD_START"].flatMap { Int($0) } ?? 0
        let count = environment["WEBIMAGE_IMAGE_DISK_CACHE_CHILD_COUNT"].flatMap { Int($0) } ?? 100_000
        let log = LogCollector { record in FileHandle.standardOutput.write(Data("log \(record.message)\n".utf8)) }
        let cache = Self.cache(URL(fileURLWithPath: directory), log: log)
        for index in start..<(start + count) {
            cache.store(Self.bytes(for: index), for: Self.key(for: index))
            _ = cache.data(for: Self.key(for: index - 3))
            FileHandle.standardOutput.write(Data("stored \(index)\n".utf8))
        }
    }

    @Test func killedWritersNeverLeaveTornEntries() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var nextIndex = 0
        // 24 rounds, each killing the writer after 1–19 commits.
        for round in 0..<24 {
            let killAfter = 1 + round * 7 % 19
            let (child, output) = try startWriter(directory, start: nextIndex)
            // Wait on the pipe (not a timer) for enough commits, then kill the child mid-write.
            var buffer = ""
            var stored: [Int] = []
            var childLogs: [String] = []
            func take(_ chunk: Data) {
                buffer += String(decoding: chunk, as: UTF8.self)
                while let newline = buffer.firstIndex(of: "\n") {
                    let line = String(buffer[..<newline])
                    buffer.removeSubrange(...newline)
                    if line.hasPrefix("stored "), let index = Int(line.dropFirst(7)) { stored.append(index) }
                    if line.hasPrefix("log ") { childLogs.append(line) }
                }
            }
            while stored.count < killAfter {
                let chunk = output.fileHandleForReading.availableData
                guard !chunk.isEmpty else { break }  // the child exited on its own: a failure below
                take(chunk)
            }
            // Killing right after a line would always land at the start of the next store; a random
            // delay of up to a few stores spreads the kills over every step of one (not a wait for
            // anything: any kill point must leave a consistent cache).
            usleep(UInt32.random(in: 0...2000))
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            take(output.fileHandleForReading.readDataToEndOfFile())  // what it stored meanwhile
            #expect(stored.count >= killAfter, "the child stopped early: \(buffer)")
            #expect(child.terminationReason == .uncaughtSignal)
            #expect(childLogs.isEmpty, "\(childLogs)")
            nextIndex = (stored.last ?? nextIndex) + 1
            try verifyEveryIndexedEntryIsIntact(directory, upTo: nextIndex + 1)
        }
    }

    @Test func processesAndInstancesShareOneDirectory() throws {
        let directory = try Support.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Two writer processes and two instances here, with overlapping keys (an entry's bytes depend
        // only on its index, so whoever wins, the entry must be intact).
        let writers = try [0, 15].map { try startWriter(directory, start: $0, count: 30) }
        let log = LogCollector()
        let caches = [Self.cache(directory, log: log), Self.cache(directory, log: log)]
        for index in 10..<40 {
            caches[index % 2].store(Self.bytes(for: index), for: Self.key(for: index))
            if let read = caches[(index + 1) % 2].data(for: Self.key(for: index - 5)) {
                #expect(read == Self.bytes(for: index - 5))
            }
        }
        for (child, output) in writers {
            // Read to the end before waiting, so a full pipe can never block the child.
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            child.waitUntilExit()
            #expect(child.terminationStatus == 0)
            #expect(text.components(separatedBy: "\n").filter { $0.hasPrefix("stored ") }.count == 30)
            #expect(!text.contains("log "), "\(text)")
        }
        #expect(caches[0].currentByteCount <= Self.byteLimit)
        #expect(log.messages.isEmpty, "\(log.messages)")
        try verifyEveryIndexedEntryIsIntact(directory, upTo: 45, exactFiles: true)
    }

    /// Starts this test binary as a writer of entries `start..<start + count` into `directory`.
    private func startWriter(_ directory: URL, start: Int, count: Int? = nil) throws -> (Process, Pipe) {
        let child = Process()
        child.executableURL = URL(
            fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        child.arguments = [
            "--testing-library", "swift-testing", "--filter", "ImageDiskCacheCrashTests/writerChild",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childDirectoryVariable] = directory.path
        environment["WEBIMAGE_IMAGE_DISK_CACHE_CHILD_START"] = String(start)
        if let count { environment["WEBIMAGE_IMAGE_DISK_CACHE_CHILD_COUNT"] = String(count) }
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()
        return (child, output)
    }

    /// Every indexed key reads back exactly the bytes written for it; with `exactFiles`, every file is
    /// indexed (a killed writer may leave unindexed files, swept after the grace period).
    private func verifyEveryIndexedEntryIsIntact(_ directory: URL, upTo limit: Int, exactFiles: Bool = false) throws {
        let log = LogCollector()
        let cache = Self.cache(directory, log: log)
        let keys = cache.keysByLastAccess
        #expect(!keys.isEmpty)
        var served = 0
        for index in 0..<limit where keys.contains(Self.key(for: index).stringValue) {
            #expect(cache.data(for: Self.key(for: index)) == Self.bytes(for: index), "entry \(index)")
            served += 1
        }
        #expect(served == keys.count, "indexed keys that are not crash entries: \(keys)")
        if exactFiles {
            let files = try FileManager.default.contentsOfDirectory(atPath: cache.filesDirectory.path)
            #expect(files.count == keys.count, "\(files.count) files for \(keys.count) entries")
        }
        #expect(log.messages.isEmpty, "\(log.messages)")
    }
}
