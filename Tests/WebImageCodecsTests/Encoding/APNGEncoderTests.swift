import Foundation
import TestSupport
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
        // A later frame whose buffer is short of its rows fails with the frame's numbers, before any compare.
        let short = ImageFrame(width: 2, height: 2, bytesPerRow: 8, pixels: [UInt8](repeating: 1, count: 12))
        let error = #expect(throws: ImageCodecError.self) {
            try APNGEncoder().encode(Image(format: .png, width: 2, height: 2, frames: [frame, short]))
        }
        #expect(error?.message == "APNG: invalid frame 1: 2×2, 8 bytes per row, 12 bytes of pixels")
    }

    @Test("Delays are milliseconds, or hundredths past 65.535 s")
    func delays() {
        #expect(APNGEncoder.delay(0.04) == (40, 1000))
        #expect(APNGEncoder.delay(65.535) == (65_535, 1000))
        #expect(APNGEncoder.delay(100) == (10_000, 100))
        #expect(APNGEncoder.delay(-1) == (0, 1000))
    }

    /// `width`×`height` opaque noise from a fixed generator: pixels that do not compress.
    static func noise(_ width: Int, _ height: Int) -> [UInt8] {
        var state: UInt32 = 7
        return (0..<(width * height)).flatMap { _ -> [UInt8] in
            state = state &* 1_664_525 &+ 1_013_904_223
            return [
                UInt8(truncatingIfNeeded: state >> 24), UInt8(truncatingIfNeeded: state >> 16),
                UInt8(truncatingIfNeeded: state >> 8), 255,
            ]
        }
    }

    /// A 96×64 animation on noise: an opaque square appears, moves, stays, gives way to a translucent one,
    /// and then only the corners differ from the background (one of them turned transparent).
    static func movingSquare() -> [ImageFrame] {
        let (width, height) = (96, 64)
        let background = noise(width, height)
        func frame(_ squares: [(x: Int, y: Int, side: Int, rgba: [UInt8])]) -> ImageFrame {
            var pixels = background
            for square in squares {
                for y in square.y..<(square.y + square.side) {
                    for x in square.x..<(square.x + square.side) {
                        let offset = (y * width + x) * 4
                        pixels.replaceSubrange(offset..<(offset + 4), with: square.rgba)
                    }
                }
            }
            return ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels, duration: 0.05)
        }
        let red: [UInt8] = [255, 0, 0, 255]
        return [
            frame([]),
            frame([(10, 20, 6, red)]),
            frame([(12, 20, 6, red)]),
            frame([(12, 20, 6, red)]),
            frame([(40, 30, 5, [0, 0, 255, 128])]),
            frame([(0, 0, 1, [0, 0, 0, 0]), (95, 63, 1, [1, 2, 3, 255])]),
        ]
    }

    @Test("Later frames store only the rectangle that changed and decode back to every frame exactly")
    func changedRectangles() throws {
        let frames = Self.movingSquare()
        let image = Image(format: .png, width: 96, height: 64, frames: frames, loopCount: 3, hasAlpha: true)
        let data = try APNGEncoder().encode(image)
        let decoded = try PNGDecoder().decode(data, options: .default)
        #expect(decoded.frames.count == frames.count && decoded.loopCount == 3)
        for (index, (read, written)) in zip(decoded.frames, frames).enumerated() {
            #expect(read.width == 96 && read.height == 64 && read.bytesPerRow == 384, "frame \(index)")
            #expect(read.pixels == written.pixels, "frame \(index)")
            #expect(read.duration == written.duration, "frame \(index)")
        }
        // x, y, width, height and blend of each fcTL: the whole canvas first; the square (all of it changed:
        // source); its move (the part it still covers unchanged: over); nothing changed (a 1×1 rectangle);
        // the square's old place and a translucent one (source: "over" would mix them); the corners.
        let container = try #require(try APNGContainer.parse(data))
        let controls = container.frames.map {
            [$0.control.x, $0.control.y, $0.control.width, $0.control.height, $0.control.blend]
        }
        #expect(
            controls == [
                [0, 0, 96, 64, 0], [10, 20, 6, 6, 0], [10, 20, 8, 6, 1], [0, 0, 1, 1, 0], [12, 20, 33, 15, 0],
                [0, 0, 96, 64, 0],
            ])
        #expect(container.frames.allSatisfy { $0.control.dispose == 0 })

        // Five frames that differ in a few pixels take little more than one: noise does not compress, so
        // whole frames would take five times one.
        let one = try PNGEncoder().encode(frames[0]).count
        let five = try APNGEncoder().encode(
            Image(format: .png, width: 96, height: 64, frames: Array(frames[0..<5]), hasAlpha: true))
        #expect(five.count < one + one / 5, "\(five.count) bytes for 5 frames, \(one) for one")
        #expect(try PNGDecoder().decode(five, options: .default).frames.map(\.pixels) == frames[0..<5].map(\.pixels))
    }
}
