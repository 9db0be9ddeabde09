import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// Cache writes never run on the transport thread, which drives every transfer's bytes: while another
/// process holds the cache's SQLite index locked, a 304 refresh waits, and other downloads go on.
@Suite(.timeLimit(.minutes(2))) struct CacheOffTransportThreadTests {
    /// Holds an exclusive lock on the SQLite database at `path` for `seconds`, from another process
    /// (Python's sqlite3 module), printing "locked" once it holds it and "released" when it lets go.
    private func lockDatabase(_ path: String, seconds: Double) throws -> (Process, Pipe) {
        let script = """
            import sqlite3, sys, time
            connection = sqlite3.connect(sys.argv[1], timeout=10, isolation_level=None)
            connection.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            time.sleep(float(sys.argv[2]))
            connection.execute("COMMIT")
            print("released", flush=True)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, path, String(seconds)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        return (process, output)
    }

    @Test func a304RefreshDoesNotDelayAnotherURLsBytesWhileSQLiteIsBusy() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("webimage-busy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 8 << 20, directory: directory)
        let downloader = server.downloader { $0.urlCache = cache }
        let recorder = CallbackRecorder()
        let revalidated = server.url("/cache/max-age%3D0/coffee-progressive.jpg")
        // Stored, immediately stale: the next request sends If-None-Match and gets a 304.
        downloader.downloadImage(with: revalidated, options: .useURLCache, completed: recorder.completion(0))
        #expect(recorder.waitForTerminal(1))

        let (locker, output) = try lockDatabase(directory.appendingPathComponent("index.sqlite").path, seconds: 4)
        defer { locker.waitUntilExit() }
        let reader = output.fileHandleForReading
        #expect(String(decoding: reader.availableData, as: UTF8.self).hasPrefix("locked"))

        let finishedAt = Locked<[Int: Date]>([:])
        let done = DispatchSemaphore(value: 0)
        for (tag, url, options) in [
            (1, revalidated, ImageDownloaderOptions.useURLCache),
            // About 1 s of steady bytes, well inside the 4 s the index stays locked.
            (2, server.url("/drip/horse-rgba.png?chunk=1024&interval=70"), []),
        ] {
            downloader.downloadImage(with: url, options: options) { _, _, error, finished in
                guard finished else { return }
                #expect(error == nil, "download \(tag): \(String(describing: error))")
                finishedAt.update { $0[tag] = Date() }
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(done.wait(timeout: .now() + 30) == .success)
        let released = String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        let releasedAt = Date()
        #expect(released.contains("released"))
        let times = finishedAt.value
        let drip = try #require(times[2])
        let refresh = try #require(times[1])
        // The drip finished while the lock was still held; the refresh only once it was released.
        #expect(drip < refresh, "the other download waited for the cache write")
        #expect(
            releasedAt.timeIntervalSince(drip) > 1,
            "the drip ended \(releasedAt.timeIntervalSince(drip)) s before release")
        #expect(server.requests.filter { $0.path.hasPrefix("/cache/") }.last?.status == 304)
    }
}
