import Foundation
import LocalImageServer
import ServerTestSupport
import Synchronization
import TestSupport
import Testing

@testable import WebImage

/// The library must not need a second thread of Swift's shared pool to finish what an awaiting caller
/// waits for. On Linux that pool and Dispatch's global queues share one thread per core, so a library
/// hop that blocks a thread until other work on them runs would stall every caller of a busy process.
/// The test runs itself again as a child process that first keeps all pool threads but one busy, for
/// good, then creates, uses and stops many downloaders at once on the one left.
@Suite("a pool of one free thread", .timeLimit(.minutes(5)))
struct NarrowPoolTests {
    static let childVariable = "WEBIMAGE_NARROW_POOL_CHILD"
    static let downloaders = 24

    @Test("many downloaders created, used and invalidated at once from async code finish on one pool thread")
    func manyDownloadersOnANarrowPool() async throws {
        if ProcessInfo.processInfo.environment[Self.childVariable] == "1" {
            return try await Self.workload()
        }
        let output = try await CLIRunner.runProgram(
            CommandLine.arguments[0],
            ["--testing-library", "swift-testing", "--filter", "manyDownloadersOnANarrowPool"],
            environment: [Self.childVariable: "1"], killAfterMilliseconds: 240_000)
        #expect(output.status == 0, "\(output.stdout)\n\(output.stderr)")
        // The child says it ran the workload with one free thread, every download and stop finished.
        let marker =
            "narrow pool: 1 free thread, \(Self.downloaders) downloaders, \(Self.downloaders * 3) images, stopped"
        #expect(output.stdout.contains(marker), "\(output.stdout)\n\(output.stderr)")
    }

    /// In the child: the pool is as wide as the online cores; all but one thread are held by tasks that
    /// spin until the end. Each downloader then fetches three images at once and stops, half
    /// of them by the synchronous `invalidate(cancelPendingDownloads:)` (as a `defer` in async code
    /// does) followed by the awaited `invalidate()`, half by the awaited one alone.
    static func workload() async throws {
        let width = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        // Spinning, not blocked: libdispatch's monitor adds threads when pool threads block, but not
        // while they run.
        let holders = Holders()
        for _ in 1..<width {
            Task.detached {
                holders.holding.add(1, ordering: .relaxed)
                while !holders.released.load(ordering: .relaxed) {}
            }
        }
        defer { holders.released.store(true, ordering: .relaxed) }
        let deadline = Date().addingTimeInterval(60)
        while holders.holding.load(ordering: .relaxed) < width - 1 {
            try #require(Date() < deadline, "the other pool threads were not taken")
            await Task.yield()
        }

        let server = try Fixtures.server()
        defer { server.shutdown() }
        let images = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<downloaders {
                group.addTask {
                    // One pool thread serves all 72 downloads, on a machine that may be busy (a sanitizer
                    // run beside other builds stalled one past the 15 s default): the limits here are
                    // about finishing, so they are as wide as the parent's 240 s.
                    var config = ImageDownloaderConfig()
                    config.downloadTimeout = 200
                    config.totalTimeout = 0
                    let downloader = ImageDownloader(config: config)
                    let count = try await withThrowingTaskGroup(of: Int.self) { fetches in
                        for name in ["horse-rgba.png", "astronaut-lossy.webp", "chelsea-animated.gif"] {
                            fetches.addTask {
                                let result = try await downloader.image(for: server.url("/files/\(name)?d=\(index)"))
                                return result.image == nil ? 0 : 1
                            }
                        }
                        return try await fetches.reduce(0, +)
                    }
                    if index.isMultiple(of: 2) { downloader.invalidate(cancelPendingDownloads: true) }
                    await downloader.invalidate()
                    return downloader.isTransportStopped ? count : -1000
                }
            }
            return try await group.reduce(0, +)
        }
        print("narrow pool: 1 free thread, \(downloaders) downloaders, \(images) images, stopped")
    }

    /// What the spinning tasks share with the workload.
    final class Holders: Sendable {
        let released = Atomic<Bool>(false)
        let holding = Atomic<Int>(0)
    }
}
