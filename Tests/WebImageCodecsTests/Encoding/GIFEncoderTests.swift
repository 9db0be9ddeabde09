import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// `GIFEncoder`: stills and animations read back by the project's own `GIFDecoder` with their size,
/// frames, delays, loop count, transparency and close colours.
@Suite("GIF encoding", .timeLimit(.minutes(5)))
struct GIFEncoderTests {
    /// A `width`×`height` frame of a smooth gradient (thousands of colours) shifted by `phase`, transparent
    /// where `transparent` says.
    static func gradient(
        _ width: Int, _ height: Int, phase: Int, duration: TimeInterval,
        transparent: (Int, Int) -> Bool = { _, _ in false }
    ) -> ImageFrame {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 4
                pixels[offset] = UInt8((x * 255 / max(1, width - 1) + phase) % 256)
                pixels[offset + 1] = UInt8(y * 255 / max(1, height - 1))
                pixels[offset + 2] = UInt8((x + y + phase * 3) * 97 % 256)
                pixels[offset + 3] = transparent(x, y) ? 0 : 255
            }
        }
        return ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels, duration: duration)
    }

    /// The largest and the mean difference of the colour channels of two frames' opaque pixels, and whether
    /// every pixel's transparency (alpha below 128 in `source`) is the same in `decoded`.
    static func compare(_ source: ImageFrame, _ decoded: ImageFrame) -> (
        maximumError: Int, meanError: Double, alphaMatches: Bool
    ) {
        var maximumError = 0
        var total = 0
        var count = 0
        var alphaMatches = true
        for y in 0..<source.height {
            for x in 0..<source.width {
                let a = y * source.bytesPerRow + x * 4
                let b = y * decoded.bytesPerRow + x * 4
                let transparent = source.pixels[a + 3] < 128
                if transparent != (decoded.pixels[b + 3] == 0) { alphaMatches = false }
                guard !transparent else { continue }
                if decoded.pixels[b + 3] != 255 { alphaMatches = false }
                for channel in 0..<3 {
                    let error = abs(Int(source.pixels[a + channel]) - Int(decoded.pixels[b + channel]))
                    maximumError = max(maximumError, error)
                    total += error
                    count += 1
                }
            }
        }
        return (maximumError, count == 0 ? 0 : Double(total) / Double(count), alphaMatches)
    }

    @Test(
        "An animation of many colours comes back with its size, frames, delays, loop count, transparency and close colours"
    )
    func animationRoundTrip() throws {
        // The second frame is transparent in a square the first covers: restore-to-background disposal
        // must clear the first frame there.
        let frames = [
            Self.gradient(48, 32, phase: 0, duration: 0.1),
            Self.gradient(48, 32, phase: 40, duration: 0.25) { x, y in (10..<20).contains(x) && (5..<15).contains(y) },
            Self.gradient(48, 32, phase: 80, duration: 0.5),
        ]
        let image = Image(format: .png, width: 48, height: 32, frames: frames, loopCount: 3, hasAlpha: true)
        let data = try GIFEncoder().encode(image)
        #expect(ImageFormat.detect(data) == .gif)
        let decoded = try GIFDecoder().decode(data, options: .default)
        #expect(decoded.width == 48 && decoded.height == 32)
        #expect(decoded.frameCount == 3 && decoded.frames.count == 3)
        #expect(decoded.frames.map(\.duration) == [0.1, 0.25, 0.5])
        #expect(decoded.loopCount == 3)
        #expect(decoded.hasAlpha)
        for index in 0..<3 {
            let (maximumError, meanError, alphaMatches) = Self.compare(frames[index], decoded.frames[index])
            #expect(alphaMatches, "frame \(index)")
            // 1,536 nearly all different colours spread over the RGB cube (blue is noise) in 256 median-cut
            // boxes: about 11 levels off on average, where a wrong palette is off by tens.
            #expect(meanError <= 16, "frame \(index): mean \(meanError)")
            #expect(maximumError <= 64, "frame \(index): \(maximumError)")
        }
    }

    @Test("A still image of few colours is exact; loop counts 1 and 0 read back as written")
    func stillsAndLoopCounts() throws {
        var pixels: [UInt8] = []
        for index in 0..<16 { pixels += [UInt8(index * 16), 200, UInt8(255 - index * 16), index == 5 ? 0 : 255] }
        let frame = ImageFrame(width: 4, height: 4, bytesPerRow: 16, pixels: pixels)
        let still = try GIFDecoder().decode(
            try GIFEncoder().encode(Image(format: .png, width: 4, height: 4, frames: [frame])), options: .default)
        #expect(still.frames.count == 1 && still.width == 4 && still.height == 4)
        let (maximumError, _, alphaMatches) = Self.compare(frame, still.frames[0])
        #expect(maximumError == 0 && alphaMatches)

        for loopCount in [0, 1, 7] {
            let animation = Image(
                format: .png, width: 4, height: 4, frames: [frame, frame], loopCount: loopCount)
            #expect(
                try GIFDecoder().decode(try GIFEncoder().encode(animation), options: .default).loopCount == loopCount)
        }
    }

    @Test("The corpus's animated GIF survives decode, resize and encode with its frames and delays")
    func corpusAnimation() throws {
        let source = try ImageDecoderRegistry.shared.decode(try Fixtures.corpusFile("chelsea-animated.gif"))
        #expect(source.frames.count > 1)
        let small = try ImageTransformer.resize(to: PixelSize(width: 60, height: 60), mode: .fit).transform(source)
        let decoded = try GIFDecoder().decode(try GIFEncoder().encode(small), options: .default)
        #expect(decoded.width == small.width && decoded.height == small.height)
        #expect(decoded.frames.count == source.frames.count && decoded.loopCount == source.loopCount)
        #expect(decoded.frames.map(\.duration) == source.frames.map(\.duration))
        for index in decoded.frames.indices {
            #expect(EncoderTests.psnr(small.frames[index], decoded.frames[index]) > 28, "frame \(index)")
        }
    }

    @Test("Frames of different sizes and empty images are refused; the stop check ends an encode between rows")
    func refusalsAndStops() throws {
        let big = Self.gradient(40, 40, phase: 0, duration: 0.1)
        let other = Self.gradient(20, 20, phase: 0, duration: 0.1)
        #expect(throws: ImageCodecError.self) {
            try GIFEncoder().encode(Image(format: .png, width: 40, height: 40, frames: [big, other]))
        }
        #expect(throws: ImageCodecError.self) {
            try GIFEncoder().encode(Image(format: .png, width: 0, height: 0, frames: []))
        }
        let image = Image(format: .png, width: 40, height: 40, frames: [big, big, big])
        let never = EncodeStopCheckTests.CountingCheck(stopAt: .max)
        _ = try GIFEncoder(stopCheck: never.check).encode(image)
        // Before each palette and every 16 rows of each frame: 3 palettes, 3 rows each (0, 16, 32).
        #expect(never.count == 12)
        let partWay = EncodeStopCheckTests.CountingCheck(stopAt: 5)
        #expect {
            _ = try GIFEncoder(stopCheck: partWay.check).encode(image)
        } throws: { ($0 as? ImageCodecError)?.code == .stopped }
        #expect(partWay.count == 5)
    }
}
