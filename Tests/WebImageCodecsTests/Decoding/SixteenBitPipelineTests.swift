import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// `ImageDecodingOptions.keepsSixteenBits`: a 16-bit PNG keeps its 65,536 levels through the decode, the
/// transforms that work at 16 bits, and the PNG encoder; an 8-bit operation falls back to 8 bits.
@Suite struct SixteenBitPipelineTests {
    /// PngSuite's 256×256 16-bit RGB gradient with an sRGB chunk (no conversion: the samples as stored).
    static func gradient() throws -> Data {
        try Data(
            contentsOf: Fixtures.packageRoot.appendingPathComponent(
                "Tests/Fixtures/conformance/pngsuite/testpngs/rgb-16-sRGB.png"))
    }

    static var sixteen: ImageDecodingOptions {
        var options = ImageDecodingOptions.default
        options.keepsSixteenBits = true
        return options
    }

    /// The bit depth an encoded PNG's IHDR declares.
    static func bitDepth(_ png: Data) -> Int { Int(png[png.startIndex + 24]) }

    /// The frame without its 16-bit samples: what the 8-bit paths see.
    static func eightBit(_ image: Image) -> Image {
        var copy = image
        copy.frames = copy.frames.map { frame in
            var frame = frame
            frame.deepPixels = nil
            return frame
        }
        return copy
    }

    @Test("a 16-bit PNG decodes to its 16-bit samples, the 8-bit pixels their rounding; without the option, 8 bits")
    func decodesSixteenBits() throws {
        let image = try PNGDecoder().decode(try Self.gradient(), options: Self.sixteen)
        let frame = try #require(image.frames.first)
        let deep = try #require(frame.sixteenBitSamples)
        #expect(deep.count == 256 * 256 * 4)
        #expect(Set(deep).count > 30_000, "a gradient of 32,768 levels: \(Set(deep).count)")
        #expect(deep.enumerated().contains { $0.offset % 4 != 3 && $0.element % 257 != 0 })
        #expect(stride(from: 3, to: deep.count, by: 4).allSatisfy { deep[$0] == 65535 })
        let plain = try PNGDecoder().decode(try Self.gradient(), options: .default)
        #expect(plain.frames[0].deepPixels == nil)
        // libpng's 8-bit path keeps each sample's high byte; the rounding is at most one level off it.
        let worst = zip(plain.frames[0].pixels, frame.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(worst <= 1)
    }

    @Test("a linear (gAMA 1.0) 16-bit PNG is converted to sRGB at 16 bits, not in 257-level steps")
    func convertsAtSixteenBits() throws {
        let samples = (0..<64).map { UInt16($0 * 1024) }
        let image = try PNGDecoder().decode(PNGSixteenBitColorTests.linearGray16(samples), options: Self.sixteen)
        let deep = try #require(image.frames[0].sixteenBitSamples)
        for (index, sample) in samples.enumerated() {
            let linear = Double(sample) / 65535
            let encoded = linear <= 0.003_130_8 ? linear * 12.92 : 1.055 * pow(linear, 1 / 2.4) - 0.055
            let expected = encoded * 65535
            // LittleCMS's 16-bit pipeline is exact to a few parts in 65,535.
            #expect(
                abs(Double(deep[index * 4]) - expected) <= 64, "sample \(sample): \(deep[index * 4]) for \(expected)")
            #expect(deep[index * 4] == deep[index * 4 + 1] && deep[index * 4] == deep[index * 4 + 2])
        }
        #expect(Set(deep.enumerated().filter { $0.offset % 4 == 0 }.map(\.element)).count == samples.count)
    }

    @Test("crop, turn, flip and place keep the 16 bits, and agree exactly with the 8-bit paths")
    func movesKeepSixteenBits() throws {
        let image = try PNGDecoder().decode(try Self.gradient(), options: Self.sixteen)
        let steps: [ImageTransformer] = [
            .crop(PixelRect(x: 10, y: 20, width: 100, height: 50)), .rotate(.degrees90), .rotate(.degrees180),
            .flip(.horizontal), .place(on: PixelSize(width: 300, height: 280), x: 20, y: 10, color: .white),
        ]
        for step in steps {
            let deep = try step.transform(image)
            let eight = try step.transform(Self.eightBit(image))
            let samples = try #require(deep.frames[0].sixteenBitSamples, "\(step.key)")
            #expect(Set(samples).count > 1000, "\(step.key)")
            #expect(deep.frames[0].pixels == eight.frames[0].pixels, "\(step.key)")
            #expect(deep.width == eight.width && deep.height == eight.height, "\(step.key)")
        }
    }

    @Test("a resize keeps 16 bits, within a level of the 8-bit resize; an 8-bit operation drops them")
    func resizeKeepsSixteenBits() throws {
        let image = try PNGDecoder().decode(try Self.gradient(), options: Self.sixteen)
        for size in [
            PixelSize(width: 100, height: 100), PixelSize(width: 40, height: 90), PixelSize(width: 300, height: 300),
        ] {
            let resized = try ImageTransformer.resize(to: size, mode: .stretch).transform(image)
            let samples = try #require(resized.frames[0].sixteenBitSamples, "\(size)")
            #expect(resized.width == size.width && resized.height == size.height)
            #expect(samples.contains { $0 % 257 != 0 }, "\(size)")
            let eight = try ImageTransformer.resize(to: size, mode: .stretch).transform(Self.eightBit(image))
            let worst = zip(resized.frames[0].pixels, eight.frames[0].pixels).map { abs(Int($0) - Int($1)) }.max()
            #expect((worst ?? 255) <= 2, "\(size): \(worst ?? -1) levels")
        }
        let rounded = try ImageTransformer.roundCorners(radius: 30).transform(image)
        #expect(rounded.frames[0].deepPixels != nil && rounded.frames[0].sixteenBitSamples == nil)
        #expect(Self.bitDepth(try PNGEncoder().encode(rounded)) == 8)
    }

    @Test("the PNG encoder writes 16 bits for a frame that keeps them, and they decode back the same")
    func encodesSixteenBits() throws {
        let image = try PNGDecoder().decode(try Self.gradient(), options: Self.sixteen)
        let resized = try ImageTransformer.resize(to: PixelSize(width: 120, height: 90), mode: .stretch).transform(
            image)
        let encoded = try PNGEncoder().encode(resized)
        #expect(Self.bitDepth(encoded) == 16)
        let again = try PNGDecoder().decode(encoded, options: Self.sixteen)
        #expect(again.frames[0].sixteenBitSamples == resized.frames[0].sixteenBitSamples)
        #expect(Self.bitDepth(try PNGEncoder().encode(Self.eightBit(resized))) == 8)
        // An 8-bit decode of the 16-bit file is the 8-bit rounding, within a level.
        let plain = try PNGDecoder().decode(encoded, options: .default)
        let worst = zip(plain.frames[0].pixels, resized.frames[0].pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(worst <= 1)
    }
}
