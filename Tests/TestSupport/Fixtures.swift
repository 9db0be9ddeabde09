import Foundation

/// Paths to the test image corpus and a running loopback server over it.
package enum Fixtures {
    /// The package root, found from this file's location.
    package static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }()

    /// The image corpus the repository ships (`Tests/Fixtures/corpus`: images, the Pillow-made
    /// `manifest.json`, and `SOURCES.md` with their origins and licences), so a clone of this repository
    /// alone passes its tests.
    package static let corpus: URL = packageRoot.appendingPathComponent("Tests/Fixtures/corpus")

    /// `Tests/Fixtures/corpus/images`.
    package static let corpusImages: URL = corpus.appendingPathComponent("images")

    package static func requireCorpus() throws -> URL {
        guard FileManager.default.fileExists(atPath: corpusImages.path) else {
            throw FixtureMissing("the test corpus is missing at \(corpusImages.path)")
        }
        return corpusImages
    }

    package static func corpusFile(_ name: String) throws -> Data {
        try Data(contentsOf: requireCorpus().appendingPathComponent(name))
    }
}

package struct FixtureMissing: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// Polls `condition` every 5 ms for up to `seconds`; returns whether it became true. For waiting on
/// another process's or thread's observable state, never as a substitute for a completion signal.
package func poll(seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        usleep(5_000)
    }
    return true
}

/// `poll` for async tests: sleeps between checks instead of blocking a thread of the cooperative pool.
package func pollAsync(seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}

/// Runs long synchronous (blocking) work on a thread of its own and awaits it, keeping Swift's
/// cooperative pool (as many threads as cores) free for the async tests that run in parallel. Not a
/// Dispatch global queue: on Linux its width is the core count too, and blocked blocks there starve the
/// downloader's own queues.
package func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
