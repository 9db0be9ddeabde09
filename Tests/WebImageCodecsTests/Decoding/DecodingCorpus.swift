import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// The test image corpus (`Tests/Fixtures/corpus`, copied from the project's shared corpus) and its
/// Pillow-made manifest.
enum DecodingCorpus {
    struct Entry: Decodable, Sendable, CustomTestStringConvertible {
        let file: String
        let format: String
        let expect: String
        let note: String
        let width: Int?
        let height: Int?
        let frames: Int?
        let hasAlpha: Bool?
        let exifOrientation: Int?
        let firstFrameGrid4: [[Double]]?

        var name: String { URL(fileURLWithPath: file).lastPathComponent }
        var testDescription: String { name }
    }

    private struct Manifest: Decodable {
        let images: [Entry]
    }

    /// The corpus folder (`Tests/Fixtures/corpus`), or nil when its manifest is missing.
    static let directory: URL? = {
        let corpus = Fixtures.corpus
        return FileManager.default.fileExists(atPath: corpus.appendingPathComponent("manifest.json").path)
            ? corpus : nil
    }()

    static let missingMessage = "image corpus not found: expected Tests/Fixtures/corpus/manifest.json"

    /// Every manifest entry; empty when the corpus is missing (the `corpusIsPresent` test then fails).
    static let entries: [Entry] = {
        guard let directory,
            let data = try? Data(contentsOf: directory.appendingPathComponent("manifest.json")),
            let manifest = try? JSONDecoder().decode(Manifest.self, from: data)
        else { return [] }
        return manifest.images
    }()

    /// The bytes of `images/<name>`, or a test failure when absent.
    static func data(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Data {
        let directory = try #require(directory, Comment(rawValue: missingMessage), sourceLocation: sourceLocation)
        let url = directory.appendingPathComponent("images").appendingPathComponent(name)
        // Data(contentsOf:) leaks its 4 KB read buffer for a 0-byte file (FoundationEssentials, seen with
        // LeakSanitizer); an empty file needs no reading.
        let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int
        return size == 0 ? Data() : try Data(contentsOf: url)
    }

    static func data(for entry: Entry) throws -> Data {
        try data(URL(fileURLWithPath: entry.file).lastPathComponent)
    }

    /// Block means of a 4×4 grid, row-major; block (i, j) covers rows [i·h/4, (i+1)·h/4) and columns
    /// [j·w/4, (j+1)·w/4) with integer division, as Pillow-based tooling cuts them.
    static func grid4(_ frame: ImageFrame) -> [[Double]] {
        var blocks: [[Double]] = []
        for i in 0..<4 {
            for j in 0..<4 {
                let y0 = i * frame.height / 4
                let y1 = max(y0 + 1, (i + 1) * frame.height / 4)
                let x0 = j * frame.width / 4
                let x1 = max(x0 + 1, (j + 1) * frame.width / 4)
                var sums = [Double](repeating: 0, count: 4)
                for y in y0..<min(y1, frame.height) {
                    for x in x0..<min(x1, frame.width) {
                        let offset = y * frame.bytesPerRow + x * 4
                        for channel in 0..<4 { sums[channel] += Double(frame.pixels[offset + channel]) }
                    }
                }
                let count = Double((min(y1, frame.height) - y0) * (min(x1, frame.width) - x0))
                blocks.append(sums.map { $0 / count })
            }
        }
        return blocks
    }

    /// Small, fast corpus files per format for loops that decode thousands of times.
    static let smallFiles: [ImageFormat: [String]] = [
        .jpeg: ["chelsea-exif-orientation6.jpg"],
        .png: ["horse-palette-trns.png", "pixel-1x1.png", "horse-gray-alpha.png"],
        .gif: ["chelsea.gif"],
        .webp: ["horse-lossless.webp", "horse-lossy-alpha.webp"],
    ]
}
