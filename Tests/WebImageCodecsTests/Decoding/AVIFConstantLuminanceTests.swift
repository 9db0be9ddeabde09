import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// AVIF coded with BT.2020 constant luminance (matrix coefficients 10), which libavif 0.11's own conversion
/// refuses: WebImage converts it (AVIFConstantLuminance). The fixtures (Tests/Fixtures/avif/make-fixtures.py)
/// are eight flat patches whose planes were computed from known R′G′B′ with the forward equations and
/// encoded losslessly.
@Suite("AVIF constant luminance", .timeLimit(.minutes(2)))
struct AVIFConstantLuminanceTests {
    static func decode(_ name: String) throws -> Image {
        let data = try Data(
            contentsOf: Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/avif/\(name).avif"))
        return try AVIFDecoder().decode(data, options: .default)
    }

    /// The RGB of pixel (x, y) of the first frame.
    static func rgb(_ image: Image, _ x: Int, _ y: Int) -> [Int] {
        let frame = image.frames[0]
        return (0..<3).map { Int(frame.pixels[y * frame.bytesPerRow + x * 4 + $0]) }
    }

    @Test("sRGB curve, 4:4:4, full range: every pixel of every patch comes back as encoded")
    func srgbPatchesComeBack() throws {
        let image = try Self.decode("constant-luminance-srgb-444-full")
        #expect(image.width == 32 && image.height == 16)
        let patches = [
            [255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0], [0, 255, 255], [255, 0, 255], [128, 128, 128],
            [230, 120, 40],
        ]
        var peak = 0
        for (index, patch) in patches.enumerated() {
            for y in 0..<8 {
                for x in 0..<8 {
                    let decoded = Self.rgb(image, (index % 4) * 8 + x, (index / 4) * 8 + y)
                    peak = max(peak, zip(decoded, patch).map { abs($0 - $1) }.max() ?? 0)
                }
            }
        }
        // 10-bit planes: one step of rounding. Read as ordinary BT.2020 (non-constant luminance), the
        // saturated patches would be tens of steps off.
        #expect(peak <= 1)
        #expect(image.frames[0].pixels[3] == 255)
    }

    @Test("PQ, 4:2:0, limited range: the patches decode to PQ's code values, then are tone-mapped")
    func pqPatchesAreToneMapped() throws {
        let image = try Self.decode("constant-luminance-pq-420-limited")
        let mapper = try #require(HDRToneMapper(primaries: 9, transfer: 16))
        let patches: [[UInt16]] = [
            [153, 77, 77], [77, 153, 102], [89, 102, 158], [140, 140, 51], [115, 115, 115], [148, 89, 128],
            [51, 128, 140], [166, 128, 89],
        ]
        for (index, patch) in patches.enumerated() {
            let expected = mapper.map(patch.map { $0 * 257 } + [65_535]).prefix(3).map(Int.init)
            // The middle of the patch, whose chroma samples all lie inside it.
            for (x, y) in [(3, 3), (4, 4)] {
                let decoded = Self.rgb(image, (index % 4) * 8 + x, (index / 4) * 8 + y)
                let error = zip(decoded, expected).map { abs($0 - $1) }.max() ?? 0
                #expect(error <= 2, "patch \(index): \(decoded), expected \(expected)")
            }
        }
        let gray = Self.rgb(image, 4 * 8 + 4, 12)
        #expect(abs(gray[0] - gray[1]) <= 1 && abs(gray[1] - gray[2]) <= 1, "\(gray)")
    }

    @Test("the transfers the conversion inverts go back and forth")
    func transfersInvert() throws {
        for code in [1, 6, 8, 13, 14, 15, 16, 18] {
            let transfer = try #require(AVIFConstantLuminance.transfer(code))
            for value in stride(from: 0.0, through: 1.0, by: 0.05) {
                let back = transfer.fromLinear(transfer.toLinear(value))
                #expect(abs(back - value) < 1e-6, "transfer \(code) at \(value): \(back)")
            }
        }
        #expect(AVIFConstantLuminance.transfer(17) == nil && AVIFConstantLuminance.transfer(2) == nil)
    }
}
