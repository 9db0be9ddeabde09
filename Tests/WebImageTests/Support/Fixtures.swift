import Foundation
import LocalImageServer
import Testing

/// Paths to the shared corpus and a running loopback server over it.
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

    /// `../shared/corpus/images` next to the package; tests that need it fail with this message if absent.
    static let corpusImages: URL = packageRoot.deletingLastPathComponent().appendingPathComponent(
        "shared/corpus/images")

    static func requireCorpus() throws -> URL {
        guard FileManager.default.fileExists(atPath: corpusImages.path) else {
            throw FixtureMissing(
                "the shared corpus is missing at \(corpusImages.path); it must sit next to the package as ../shared")
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

/// Runs long synchronous work on a Dispatch thread and awaits it, keeping Swift's cooperative pool (as
/// many threads as cores) free for the async tests that run in parallel.
func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: work()) }
    }
}
