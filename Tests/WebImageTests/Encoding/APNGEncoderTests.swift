import Foundation
import Testing

@testable import WebImageCodecs

/// `APNGEncoder`: animations written as APNG decode back to the same frames, delays and loop count.
@Suite("APNG encoding", .timeLimit(.minutes(5)))
struct APNGEncoderTests {
    @Test("Every frame, delay and the loop count survive a round trip, also after a resize")
    func roundTrip() throws {
        let source = try ImageDecoderRegistry.shared.decode(try APNGDecodingTests.fixture("dispose2-blend1.png"))
        let data = try APNGEncoder().encode(source)
        #expect(ImageFormat.detect(data) == .png)
        let container = try #require(try APNGContainer.parse(data))
        #expect(container.frames.count == 4 && container.plays == 2 && !container.isTruncated)
        let decoded = try PNGDecoder().decode(data, options: .default)
        #expect(decoded.frameCount == 4 && decoded.loopCount == 2)
        #expect(decoded.frames.map(\.pixels) == source.frames.map(\.pixels))
        #expect(decoded.frames.map(\.duration) == source.frames.map(\.duration))

        let gif = try ImageDecoderRegistry.shared.decode(try Fixtures.corpusFile("chelsea-animated.gif"))
        let small = try ImageTransformer.resize(to: PixelSize(width: 60, height: 60), mode: .fit).transform(gif)
        let resized = try PNGDecoder().decode(try APNGEncoder().encode(small), options: .default)
        #expect(resized.width == small.width && resized.height == small.height)
        #expect(resized.frames.count == gif.frames.count && resized.loopCount == gif.loopCount)
        #expect(resized.frames.map(\.pixels) == small.frames.map(\.pixels))
        #expect(resized.frames.map(\.duration) == small.frames.map(\.duration))
    }

    @Test("A still image is a plain PNG; frames of different sizes are refused")
    func stillsAndMismatches() throws {
        let frame = ImageFrame(width: 2, height: 2, bytesPerRow: 8, pixels: [UInt8](repeating: 200, count: 16))
        let still = Image(format: .png, width: 2, height: 2, frames: [frame])
        let data = try APNGEncoder().encode(still)
        #expect(try APNGContainer.parse(data) == nil)
        #expect(try PNGDecoder().decode(data, options: .default).frames[0].pixels == frame.pixels)

        let other = ImageFrame(width: 1, height: 1, bytesPerRow: 4, pixels: [1, 2, 3, 4])
        let mixed = Image(format: .png, width: 2, height: 2, frames: [frame, other])
        #expect(throws: ImageCodecError.self) { try APNGEncoder().encode(mixed) }
    }

    @Test("Delays are milliseconds, or hundredths past 65.535 s")
    func delays() {
        #expect(APNGEncoder.delay(0.04) == (40, 1000))
        #expect(APNGEncoder.delay(65.535) == (65_535, 1000))
        #expect(APNGEncoder.delay(100) == (10_000, 100))
        #expect(APNGEncoder.delay(-1) == (0, 1000))
    }
}
