import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// Files of the conformance subset (`Tests/Fixtures/conformance`, checked in full by
/// `Tests/Conformance/check.py` in `make test`) whose decoding a fix brought in line with the suite's
/// reference: each test keeps its fix from going back, in the Swift suite alone.
@Suite(.timeLimit(.minutes(2))) struct ConformanceFixtureTests {
    static let directory = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/conformance")

    static func decode(_ path: String) throws -> Image {
        let data = try Data(contentsOf: directory.appendingPathComponent(path))
        return try ImageDecoderRegistry.shared.decode(data, options: .default)
    }

    /// The largest difference between the first frames' samples in 8-bit steps, each colour difference
    /// weighted by the reference's alpha (the colour of a transparent pixel is never seen), as the checker
    /// measures it.
    static func peakError(_ image: Image, reference: Image) -> Int {
        let decoded = image.frames[0]
        let expected = reference.frames[0]
        var peak = 0
        for y in 0..<expected.height {
            for x in 0..<expected.width {
                let i = y * decoded.bytesPerRow + x * 4
                let j = y * expected.bytesPerRow + x * 4
                let alpha = Int(expected.pixels[j + 3])
                for channel in 0..<3 {
                    let difference = abs(Int(decoded.pixels[i + channel]) - Int(expected.pixels[j + channel]))
                    peak = max(peak, (difference * alpha + 127) / 255)
                }
                peak = max(peak, abs(Int(decoded.pixels[i + 3]) - alpha))
            }
        }
        return peak
    }

    @Test("A JPEG XL file with premultiplied alpha decodes to straight alpha, as its reference shows it")
    func jxlPremultipliedAlphaComesBackStraight() throws {
        let image = try Self.decode("jxl/alpha_premultiplied/input.jxl")
        let reference = try Self.decode("jxl/alpha_premultiplied/ref.png")
        #expect(image.width == reference.width && image.height == reference.height)
        // Premultiplied colours were up to 64 steps too dark (the checker's measure before the fix).
        #expect(Self.peakError(image, reference: reference) <= 3)
    }

    @Test("A lossy JPEG XL with a gray ICC original decodes without banding its dark tones")
    func jxlXYBDecodesToSRGBWithoutBands() throws {
        let image = try Self.decode("jxl/grayscale/input.jxl")
        let reference = try Self.decode("jxl/grayscale/ref.png")
        #expect(image.width == reference.width && image.height == reference.height)
        // Through libjxl's 8-bit linear output the dark tones were up to 13 steps off.
        #expect(Self.peakError(image, reference: reference) <= 3)
    }

    @Test("An AVIF's clean aperture is applied, even at an origin that libavif's strict mode refuses")
    func avifCleanApertureIsTheImage() throws {
        let data = try Data(
            contentsOf: Self.directory.appendingPathComponent("avif/Link-U/kimono.crop.avif"))
        let cropped = try AVIFDecoder().decode(data, options: .default)
        // The same file with a clap that keeps everything (722/1 × 1024/1, no offset): the whole coded image.
        var bytes = [UInt8](data)
        var rewritten = 0
        for index in 4..<(bytes.count - 36) where bytes[index..<(index + 4)].elementsEqual("clap".utf8) {
            let whole: [UInt32] = [722, 1, 1024, 1, 0, 1, 0, 1]
            bytes.replaceSubrange(
                (index + 4)..<(index + 36), with: whole.flatMap { withUnsafeBytes(of: $0.bigEndian, Array.init) })
            rewritten += 1
        }
        #expect(rewritten == 1)
        let whole = try AVIFDecoder().decode(Data(bytes), options: .default)
        #expect(whole.width == 722 && whole.height == 1024)
        // clap: 385 × 330, centre moved by (207/2, -616/2): the rectangle at (272, 39).
        #expect(cropped.width == 385 && cropped.height == 330)
        #expect(cropped.originalWidth == 385 && cropped.originalHeight == 330)
        let source = whole.frames[0]
        var expected = [UInt8]()
        for row in 39..<(39 + 330) {
            let start = row * source.bytesPerRow + 272 * 4
            expected += source.pixels[start..<(start + 385 * 4)]
        }
        #expect(cropped.frames[0].pixels == expected)
    }

    @Test("A 12-bit 4:2:0 AVIF decodes as libavif's 16-bit conversion rounded, without 8-bit chroma-edge errors")
    func twelveBitAVIFRoundsLibavifsSixteenBitConversion() throws {
        // libavif's direct 8-bit conversion was up to 19 steps off there.
        #expect(try Self.sixteenBitCropError("fox.profile2.12bpc.yuv420") <= 1)
    }

    @Test("A 10-bit AVIF decodes as libavif's 16-bit conversion rounded, not through libyuv's 8-bit matrices")
    func tenBitAVIFRoundsLibavifsSixteenBitConversion() throws {
        // libavif's direct 8-bit conversion (libyuv) put red and blue about a step low, up to 3 steps there.
        #expect(try Self.sixteenBitCropError("fox.profile1.10bpc.yuv444.odd-width.odd-height") <= 1)
    }

    /// The largest sample difference between the decode of `avif/Link-U/NAME.avif` and the 64 × 64 pixels at
    /// (192, 300) of `avifdec -d 16` (libavif 0.11.1) of the same file rounded to 8 bits (NAME.avifdec-crop-
    /// 192-300.png), which equal the ITU-T H.273 equations computed in floating point.
    static func sixteenBitCropError(_ name: String) throws -> Int {
        let image = try decode("avif/Link-U/\(name).avif")
        let crop = try decode("avif/Link-U/\(name).avifdec-crop-192-300.png")
        let frame = image.frames[0]
        let expected = crop.frames[0]
        var peak = 0
        for y in 0..<64 {
            for x in 0..<64 {
                for channel in 0..<4 {
                    let decoded = Int(frame.pixels[(300 + y) * frame.bytesPerRow + (192 + x) * 4 + channel])
                    let reference = Int(expected.pixels[y * expected.bytesPerRow + x * 4 + channel])
                    peak = max(peak, abs(decoded - reference))
                }
            }
        }
        return peak
    }
}
