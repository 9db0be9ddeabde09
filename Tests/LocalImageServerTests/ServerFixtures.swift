import Foundation
import TestSupport

/// A temporary folder with a few corpus images (copied from `Tests/Fixtures/corpus/images`).
struct ServerFixtures {
    static let names = [
        "pixel-1x1.png", "horse-rgba.png", "astronaut-baseline.jpg", "chelsea.gif", "horse-lossless.webp",
    ]

    let folder: URL

    init() throws {
        let corpus = try Fixtures.requireCorpus()
        folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("LocalImageServerTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in Self.names {
            try FileManager.default.copyItem(
                at: corpus.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
    }

    func data(_ name: String) throws -> Data {
        try Data(contentsOf: folder.appendingPathComponent(name))
    }

    func remove() {
        try? FileManager.default.removeItem(at: folder)
    }
}
