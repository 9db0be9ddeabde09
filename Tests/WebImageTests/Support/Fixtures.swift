import Foundation
import LocalImageServer
import Testing

/// Paths to the test image corpus and a running loopback server over it.
enum Fixtures {
    /// The package root, found from this file's location.
    static let packageRoot: URL = {
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
    static let corpus: URL = packageRoot.appendingPathComponent("Tests/Fixtures/corpus")

    /// `Tests/Fixtures/corpus/images`.
    static let corpusImages: URL = corpus.appendingPathComponent("images")

    static func requireCorpus() throws -> URL {
        guard FileManager.default.fileExists(atPath: corpusImages.path) else {
            throw FixtureMissing("the test corpus is missing at \(corpusImages.path)")
        }
        return corpusImages
    }

    static func corpusFile(_ name: String) throws -> Data {
        try Data(contentsOf: requireCorpus().appendingPathComponent(name))
    }

    /// A started server over the corpus images.
    static func server(tls: LocalImageServer.TLSMode = .none) throws -> LocalImageServer {
        let server = LocalImageServer(root: try requireCorpus(), tls: tls)
        try server.start()
        return server
    }
}

struct FixtureMissing: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` every 5 ms for up to `seconds`; returns whether it became true. For waiting on
/// another process's or thread's observable state, never as a substitute for a completion signal.
func poll(seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        usleep(5_000)
    }
    return true
}

/// Runs long synchronous (blocking) work on a thread of its own and awaits it, keeping Swift's
/// cooperative pool (as many threads as cores) free for the async tests that run in parallel. Not a
/// Dispatch global queue: on Linux its width is the core count too, and blocked blocks there starve the
/// downloader's own queues.
func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
