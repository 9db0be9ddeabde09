import Foundation
import TestSupport
import Testing
import WebImage

@testable import WebImageDataset

/// ``PerceptualHash`` and the output's index of kept pictures (``BulkPerceptualIndex``).
@Suite("Perceptual hash and its index")
struct PerceptualHashTests {
    static func hash(_ name: String) throws -> UInt64 {
        let url = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/corpus/images/\(name)")
        let image = try ImageDecoderRegistry.shared.decode(try Data(contentsOf: url))
        return PerceptualHash.hash(try #require(image.frames.first))
    }

    @Test("one picture in other files is a few bits apart; different pictures are far apart")
    func samePictureOtherFiles() throws {
        let pictures = [
            ["astronaut-baseline.jpg", "astronaut-444.jpg", "astronaut-lossy.webp"],
            ["coffee-rgb.png", "coffee-progressive.jpg", "coffee-interlaced.png"],
            ["camera-gray.png", "camera-gray.jpg"],
            ["horse-rgba.png", "horse-lossless.webp", "horse-lossy-alpha.webp"],
        ]
        let hashes = try pictures.map { try $0.map(Self.hash) }
        var near: [Int] = []
        var far: [Int] = []
        for (index, group) in hashes.enumerated() {
            for a in group { for b in group { near.append(PerceptualHash.distance(a, b)) } }
            for other in hashes[(index + 1)...] {
                for a in group { for b in other { far.append(PerceptualHash.distance(a, b)) } }
            }
        }
        #expect(near.max() ?? 99 <= 4, "\(near)")
        #expect(far.min() ?? 0 >= 12, "\(far)")
        #expect(PerceptualHash.hex(0x00ab) == "00000000000000ab")
    }

    @Test("the index keeps the first picture, finds near ones from this and other processes, and its own key")
    func indexClaims() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("phash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let index = BulkPerceptualIndex(directory: folder, threshold: 4)
        let base: UInt64 = 0x0123_4567_89AB_CDEF
        #expect(index.claim(hash: base, key: "000000000") == .kept)
        // Four bits off: the same picture; five: another.
        #expect(index.claim(hash: base ^ 0x0000_0000_0000_000F, key: "000000001") == .duplicate(of: "000000000"))
        #expect(index.claim(hash: base ^ 0x1000_0100_0010_0001, key: "000000002") == .duplicate(of: "000000000"))
        #expect(index.claim(hash: base ^ 0x0000_0000_0000_001F, key: "000000003") == .kept)
        // Four bits in four different bytes: still found (the byte tables find up to seven).
        #expect(index.claim(hash: ~base, key: "000000004") == .kept)
        #expect(index.claim(hash: ~base ^ 0x0100_0001_0000_0101, key: "000000005") == .duplicate(of: "000000004"))
        // A redone row finds its own key.
        #expect(index.claim(hash: base, key: "000000000") == .kept)
        // Another process (another index on the same folder) reads the log.
        let other = BulkPerceptualIndex(directory: folder, threshold: 4)
        #expect(other.claim(hash: base ^ 1, key: "000010000") == .duplicate(of: "000000000"))
        #expect(other.claim(hash: 0xFFFF_0000_FFFF_0000, key: "000010001") == .kept)
        #expect(index.claim(hash: 0xFFFF_0000_FFFF_0001, key: "000000006") == .duplicate(of: "000010001"))
    }
}
