import Foundation
import Testing

/// The fixtures of `Tests/Fixtures/pipeline` (made by its `make-fixtures.py` with avifenc / cjxl, their
/// references decoded by avifdec / djxl) and their manifest: what the pipeline's decoders must make of them.
package enum PipelineFixtures {
    package struct Entry: Decodable, Sendable, CustomTestStringConvertible {
        package let file: String
        package let format: String
        package let width: Int
        package let height: Int
        package let alpha: Bool
        package let frames: Int
        package let durationsMs: [Int]?
        package let reference: String?
        package let profile: String?
        package let adobe: Bool?
        package let resizedFrom: String?

        package var testDescription: String { file }
    }

    package static let directory = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/pipeline")

    package static let entries: [Entry] = {
        guard let data = try? Data(contentsOf: directory.appendingPathComponent("manifest.json")) else { return [] }
        return (try? JSONDecoder().decode([Entry].self, from: data)) ?? []
    }()

    package static func entries(format: String) -> [Entry] { entries.filter { $0.format == format } }

    package static func data(_ name: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent(name))
    }

    /// small-horse-lossless.jxl with every 37th byte past the header flipped: libjxl rejects a histogram
    /// and prints a line for each check on the way out.
    package static func damagedJXL() throws -> Data {
        var bytes = [UInt8](try data("small-horse-lossless.jxl"))
        for index in stride(from: 100, to: bytes.count, by: 37) { bytes[index] ^= 0x55 }
        return Data(bytes)
    }

    /// coffee.avif with the second byte of its AV1 data (in `mdat`) flipped: dav1d prints "Error parsing
    /// OBU data" and libavif fails to decode the colour planes.
    package static func damagedAVIF() throws -> Data {
        var bytes = [UInt8](try data("coffee.avif"))
        let mdat = try #require(Data(bytes).range(of: Data("mdat".utf8)))
        bytes[mdat.upperBound + 1] ^= 0xFF
        return Data(bytes)
    }

    /// The largest difference between two 4×4 block-mean grids, over every block and channel.
    package static func maximumDifference(_ a: [[Double]], _ b: [[Double]]) -> Double {
        zip(a, b).flatMap { zip($0, $1).map { abs($0 - $1) } }.max() ?? .infinity
    }
}
