import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

@Suite("Corrupted data never crashes or hangs")
struct MutationDecodingTests {
    static let variantsPerFormat = 10_000

    /// The 64 × 52 AVIF and JPEG XL files of Tests/Fixtures/pipeline (lossy with alpha; JXL also lossless).
    static let pipelineFiles: [ImageFormat: [String]] = [
        .avif: ["small-horse.avif"],
        .jxl: ["small-horse.jxl", "small-horse-lossless.jxl"],
    ]

    static let interlacedGIF = TestGIFWriter(
        width: 16, height: 12, loopCount: 2,
        frames: [
            .init(width: 16, height: 12, indices: (0..<192).map { UInt8($0 % 4) }, interlaced: true),
            .init(
                left: 4, top: 4, width: 8, height: 6, indices: (0..<48).map { UInt8($0 % 3) }, disposal: 3,
                transparentIndex: 2, interlaced: true),
        ])

    /// One random corruption of `data`: bit flips, a truncation, inserted bytes, or a mix.
    static func mutate(_ data: [UInt8], using rng: inout SeededGenerator) -> [UInt8] {
        var bytes = data
        let kinds = Int.random(in: 1...3, using: &rng)
        for _ in 0..<kinds {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0, 1:  // bit flips, biased towards the header where the structure lives
                for _ in 0..<Int.random(in: 1...8, using: &rng) where !bytes.isEmpty {
                    let limit = Bool.random(using: &rng) ? min(bytes.count, 256) : bytes.count
                    let index = Int.random(in: 0..<limit, using: &rng)
                    bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
                }
            case 2:  // truncation
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
            default:  // inserted bytes
                let position = Int.random(in: 0...bytes.count, using: &rng)
                let inserted = (0..<Int.random(in: 1...16, using: &rng)).map { _ in
                    UInt8.random(in: 0...255, using: &rng)
                }
                bytes.insert(contentsOf: inserted, at: position)
            }
        }
        return bytes
    }

    @Test(
        "10,000 corrupted variants per format decode or fail with badImageData",
        // A guard against a hang, not a speed bound: a full make test-asan beside other builds took over 3
        // minutes for the JPEG variants alone at load 22, and over 20 at load 30.
        .timeLimit(.minutes(60)),
        arguments: [ImageFormat.jpeg, .png, .gif, .webp, .avif, .jxl, .heic])
    func corruptedVariants(format: ImageFormat) async throws {
        var originals: [[UInt8]]
        if format == .heic {
            // Two small files: one with alpha (a second HEVC image), one assembled from a grid of tiles.
            originals = try ["alpha.heic", "grid.heic"].map { [UInt8](try HEIFDecodingTests.data($0)) }
        } else if let pipelineFiles = Self.pipelineFiles[format] {
            originals = try pipelineFiles.map { [UInt8](try PipelineFixtures.data($0)) }
        } else {
            let files = try #require(DecodingCorpus.smallFiles[format])
            originals = try files.map { [UInt8](try DecodingCorpus.data($0)) }
        }
        if format == .gif {
            // chelsea.gif alone costs ~3 ms a decode in debug; small generated animations keep the loop fast
            // and cover disposal, transparency and interlacing.
            originals += [[UInt8](GIFCompositingDecodingTests.animation.data()), [UInt8](Self.interlacedGIF.data())]
        }
        // A fixed seed per format (hashValue is randomised per process, so it would not reproduce).
        let seed = 0x5EED_0000 + UInt64(format.rawValue.utf8.reduce(0) { $0 &* 31 &+ Int($1) } & 0xFFFF)
        let inputs = originals
        // The loop is long CPU work: it runs on a Dispatch thread so Swift's cooperative pool (two threads
        // here) stays free for the async tests running beside it.
        let outcome = await offCooperativePool { Self.decodeVariants(of: inputs, format: format, seed: seed) }
        #expect(outcome.decoded + outcome.failed == Self.variantsPerFormat)
        #expect(outcome.decoded > 0 && outcome.failed > 0, "decoded \(outcome.decoded), failed \(outcome.failed)")
        #expect(outcome.malformedFrames == 0)
        #expect(outcome.unexpectedErrors.isEmpty, "\(outcome.unexpectedErrors.prefix(3))")
    }

    struct Outcome: Sendable {
        var decoded = 0
        var failed = 0
        var malformedFrames = 0
        var unexpectedErrors: [String] = []
    }

    static func decodeVariants(of originals: [[UInt8]], format: ImageFormat, seed: UInt64) -> Outcome {
        var rng = SeededGenerator(seed: seed)
        // Flipped header bits can declare huge sizes; a 4 MP ceiling keeps each variant quick while still
        // exercising the refusal path.
        let options = ImageDecodingOptions(maximumImagePixels: 2048 * 2048)
        var outcome = Outcome()
        for variant in 0..<variantsPerFormat {
            // The large corpus GIF takes one variant in eight.
            let pick =
                format == .gif && variant % 8 != 0 ? 1 + variant % (originals.count - 1) : variant % originals.count
            let data = Data(mutate(originals[pick], using: &rng))
            do {
                let image = try ImageDecoderRegistry.shared.decode(data, options: options)
                if !image.frames.allSatisfy({ $0.pixels.count == $0.bytesPerRow * $0.height }) {
                    outcome.malformedFrames += 1
                }
                outcome.decoded += 1
            } catch let error as ImageCodecError where error.code == .badImageData {
                outcome.failed += 1
            } catch {
                outcome.unexpectedErrors.append("\(error)")
                outcome.failed += 1
            }
            // Every 16th variant also goes through the incremental decoder, in two pieces.
            if variant % 16 == 0,
                let incremental = ImageDecoderRegistry.shared.makeIncrementalDecoder(for: data, options: options)
            {
                _ = incremental.decodePartial(data.prefix(data.count / 2))
                _ = try? incremental.decodeFinal(data)
            }
        }
        return outcome
    }
}
