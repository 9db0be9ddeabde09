import Foundation
import TestSupport
import Testing
import WebImageCodecs

@Suite("PNGEncoder", .timeLimit(.minutes(5)))
struct PNGEncoderTests {
    @Test("an encoded frame decodes back to the same pixels, alpha included")
    func roundTrip() throws {
        let width = 7
        let height = 5
        var pixels = [UInt8]()
        for y in 0..<height {
            for x in 0..<width { pixels += [UInt8(x * 30), UInt8(y * 50), UInt8((x + y) * 10), UInt8(255 - x * 20)] }
        }
        let frame = ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)
        let png = try PNGEncoder().encode(frame)
        #expect(ImageFormat.detect(png) == .png)
        let decoded = try PNGDecoder().decode(png, options: .default)
        #expect(decoded.width == width && decoded.height == height && decoded.hasAlpha)
        #expect(decoded.frames[0].pixels == pixels)
    }

    @Test("a corpus image survives decode → encode → decode")
    func corpusRoundTrip() throws {
        let original = try ImageDecoderRegistry.shared.decode(try Fixtures.corpusFile("horse-lossless.webp"))
        let again = try PNGDecoder().decode(try PNGEncoder(compressionLevel: 1).encode(original), options: .default)
        #expect(again.width == original.width && again.height == original.height)
        #expect(again.frames[0].pixels == original.frames[0].pixels)
    }

    @Test("rows wider than the pixels are honoured; inconsistent frames are refused")
    func strideAndErrors() throws {
        let padded = ImageFrame(
            width: 1, height: 2, bytesPerRow: 8, pixels: [1, 2, 3, 4, 9, 9, 9, 9, 5, 6, 7, 8, 9, 9, 9, 9])
        let decoded = try PNGDecoder().decode(try PNGEncoder().encode(padded), options: .default)
        #expect(decoded.frames[0].pixels.prefix(4) == [1, 2, 3, 4])
        #expect(Array(decoded.frames[0].pixels[decoded.frames[0].bytesPerRow...].prefix(4)) == [5, 6, 7, 8])
        #expect(throws: ImageCodecError.self) {
            try PNGEncoder().encode(ImageFrame(width: 4, height: 4, bytesPerRow: 16, pixels: [0, 0]))
        }
        #expect(throws: ImageCodecError.self) {
            try PNGEncoder().encode(Image(format: .png, width: 0, height: 0, frames: []))
        }
    }
}
