import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// `JXLEncoder`: lossy, lossless, alpha and animations read back by `JXLDecoder`.
@Suite("JPEG XL encoding", .timeLimit(.minutes(5)))
struct JXLEncoderTests {
    @Test("Quality maps to cjxl's distances, lossless at 100 and capped at libjxl 0.7's 15")
    func distances() {
        #expect(JXLEncoder.distance(forQuality: 100) == 0)
        #expect(abs(JXLEncoder.distance(forQuality: 90) - 1.0) < 0.0001)
        #expect(abs(JXLEncoder.distance(forQuality: 80) - 1.9) < 0.0001)
        #expect(abs(JXLEncoder.distance(forQuality: 30) - 6.4) < 0.0001)
        #expect(abs(JXLEncoder.distance(forQuality: 20) - 9.0667) < 0.001)
        #expect(JXLEncoder.distance(forQuality: 1) == 15)
        #expect(JXLEncoder.distance(forQuality: -5) == 15)
    }

    @Test("A lossy photo decodes back at its size, close to the source; lower quality is smaller")
    func lossy() throws {
        let photo = try EncodeStopCheckTests.photo()
        let good = try JXLEncoder(quality: 90, effort: 3).encode(photo)
        #expect(ImageFormat.detect(good) == .jxl)
        let decoded = try JXLDecoder().decode(good, options: .default)
        #expect(decoded.width == photo.width && decoded.height == photo.height && !decoded.hasAlpha)
        #expect(EncoderTests.psnr(photo.frames[0], decoded.frames[0]) > 34)
        let small = try JXLEncoder(quality: 40, effort: 3).encode(photo)
        #expect(small.count < good.count)
    }

    @Test("Quality 100 is lossless, alpha included")
    func losslessWithAlpha() throws {
        let frame = GIFEncoderTests.gradient(33, 17, phase: 5, duration: 0) { x, _ in x < 8 }
        var pixels = frame.pixels
        for index in stride(from: 3, to: pixels.count, by: 4) where pixels[index] == 255 {
            pixels[index] = UInt8(index / 4 % 200 + 40)  // partial alpha too
        }
        let source = ImageFrame(width: 33, height: 17, bytesPerRow: 132, pixels: pixels)
        let data = try JXLEncoder(quality: 100).encode(Image(format: .png, width: 33, height: 17, frames: [source]))
        let decoded = try JXLDecoder().decode(data, options: .default)
        #expect(decoded.hasAlpha)
        #expect(decoded.frames[0].pixels == source.pixels)
    }

    @Test("An animation keeps its frames, durations and loop count; the stop check ends it between frames")
    func animation() throws {
        let frames = (0..<3).map { GIFEncoderTests.gradient(24, 16, phase: $0 * 50, duration: [0.1, 0.2, 0.75][$0]) }
        let image = Image(format: .gif, width: 24, height: 16, frames: frames, loopCount: 2)
        let decoded = try JXLDecoder().decode(try JXLEncoder(quality: 100).encode(image), options: .default)
        #expect(decoded.frameCount == 3 && decoded.frames.count == 3 && decoded.loopCount == 2)
        #expect(decoded.frames.map(\.duration) == [0.1, 0.2, 0.75])
        #expect(decoded.frames.map(\.pixels) == frames.map(\.pixels))

        let never = EncodeStopCheckTests.CountingCheck(stopAt: .max)
        _ = try JXLEncoder(quality: 80, effort: 3, stopCheck: never.check).encode(image)
        #expect(never.count == 4)  // before the encoder starts and before each frame
        let partWay = EncodeStopCheckTests.CountingCheck(stopAt: 3)
        #expect {
            _ = try JXLEncoder(quality: 80, effort: 3, stopCheck: partWay.check).encode(image)
        } throws: { ($0 as? ImageCodecError)?.code == .stopped }
        #expect(partWay.count == 3)
        #expect(throws: ImageCodecError.self) {
            try JXLEncoder().encode(
                Image(
                    format: .png, width: 24, height: 16,
                    frames: [frames[0], GIFEncoderTests.gradient(8, 8, phase: 0, duration: 0)]))
        }
    }
}
