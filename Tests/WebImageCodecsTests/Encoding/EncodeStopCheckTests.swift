import Foundation
import Locking
import Testing

@testable import WebImageCodecs

/// `EncodeStopCheck`: libwebp asks it from its progress hook, libjpeg from its progress monitor, the PNG
/// writer between rows, so those encodes end part-way; AVIF asks it between its steps and, with a check,
/// runs the AV1 encode in a child process that the check ends.
@Suite("EncodeStopCheck", .timeLimit(.minutes(3)))
struct EncodeStopCheckTests {
    /// A check that says stop from its `stopAt`th call on, counting the calls.
    final class CountingCheck: Sendable {
        let calls = Lock(0)
        let stopAt: Int

        init(stopAt: Int) { self.stopAt = stopAt }

        var check: EncodeStopCheck {
            EncodeStopCheck { [self] in
                calls.withLock {
                    $0 += 1
                    return $0 >= stopAt
                }
            }
        }
        var count: Int { calls.withLock { $0 } }
    }

    static func photo() throws -> Image {
        try ImageDecoderRegistry.shared.decode(DecodingCorpus.data("coffee-rgb.png"))
    }

    @Test("a WebP encode asks the check from libwebp's progress hook and stops part-way when it says so")
    func webPStopsPartWay() throws {
        let image = try Self.photo()
        for lossless in [false, true] {
            let never = CountingCheck(stopAt: .max)
            let whole = try WebPEncoder(quality: 80, lossless: lossless, stopCheck: never.check).encode(image)
            #expect(ImageFormat.detect(whole) == .webp)
            // Asked many times over the encode (600×400 is 25 rows of macroblocks), not once at the start.
            #expect(never.count > 3, "lossless \(lossless): \(never.count) calls")

            let partWay = CountingCheck(stopAt: 3)
            #expect {
                _ = try WebPEncoder(quality: 80, lossless: lossless, stopCheck: partWay.check).encode(image)
            } throws: { ($0 as? ImageCodecError)?.code == .stopped }
            #expect(partWay.count == 3, "lossless \(lossless): libwebp stopped at the first 'stop'")
        }
    }

    @Test("a JPEG encode asks the check from libjpeg's progress monitor, baseline and progressive, and stops part-way")
    func jpegStopsPartWay() throws {
        let image = try Self.photo()
        for progressive in [false, true] {
            let never = CountingCheck(stopAt: .max)
            let whole = try JPEGEncoder(quality: 80, progressive: progressive, stopCheck: never.check).encode(image)
            #expect(ImageFormat.detect(whole) == .jpeg)
            #expect(
                whole == (try JPEGEncoder(quality: 80, progressive: progressive).encode(image)),
                "the check changes no byte")
            // Asked over the rows (400) and the passes after them, not once.
            #expect(never.count > 10, "progressive \(progressive): \(never.count) calls")

            let stopAt = never.count - 2
            let partWay = CountingCheck(stopAt: stopAt)
            #expect {
                _ = try JPEGEncoder(quality: 80, progressive: progressive, stopCheck: partWay.check).encode(image)
            } throws: { ($0 as? ImageCodecError)?.code == .stopped }
            #expect(partWay.count == stopAt, "progressive \(progressive): libjpeg stopped at the first 'stop'")
        }
    }

    @Test("a WebP animation asks the check before each frame and stops between frames")
    func webPAnimationStopsBetweenFrames() throws {
        let frames = (0..<4).map { GIFEncoderTests.gradient(64, 48, phase: $0 * 30, duration: 0.1) }
        let image = Image(format: .gif, width: 64, height: 48, frames: frames)
        let never = CountingCheck(stopAt: .max)
        let whole = try WebPEncoder(quality: 80, stopCheck: never.check).encode(image)
        #expect(try WebPDecoder().decode(whole, options: .default).frames.count == 4)
        #expect(never.count == 4)
        let partWay = CountingCheck(stopAt: 3)
        #expect {
            _ = try WebPEncoder(quality: 80, stopCheck: partWay.check).encode(image)
        } throws: { ($0 as? ImageCodecError)?.code == .stopped }
        #expect(partWay.count == 3)
    }

    @Test("a PNG encode asks the check between rows and stops part-way")
    func pngStopsPartWay() throws {
        let image = try Self.photo()
        let never = CountingCheck(stopAt: .max)
        let whole = try PNGEncoder(stopCheck: never.check).encode(image)
        #expect(whole == (try PNGEncoder().encode(image)), "the check changes no byte")
        #expect(never.count == (image.height + 15) / 16, "asked before every 16th of \(image.height) rows")

        let partWay = CountingCheck(stopAt: 5)
        #expect {
            _ = try PNGEncoder(stopCheck: partWay.check).encode(image)
        } throws: { ($0 as? ImageCodecError)?.code == .stopped }
        #expect(partWay.count == 5)
    }

    @Test("an AVIF encode with a check asks it before each step and during the AV1 encode, and stops it part-way")
    func avifStopsPartWay() throws {
        guard AVIFEncoder.isAvailable else { return }
        let image = try Self.photo()
        let never = CountingCheck(stopAt: .max)
        let data = try AVIFEncoder(quality: 50, speed: 9, threads: 1, stopCheck: never.check).encode(image)
        #expect(ImageFormat.detect(data) == .avif)
        #expect(data == (try AVIFEncoder(quality: 50, speed: 9, threads: 1).encode(image)), "same bytes as in process")
        for stopAt in [1, 2] {
            let stopping = CountingCheck(stopAt: stopAt)
            #expect {
                _ = try AVIFEncoder(quality: 50, speed: 9, stopCheck: stopping.check).encode(image)
            } throws: { ($0 as? ImageCodecError)?.code == .stopped }
            #expect(stopping.count == stopAt)
        }
        #expect(AVIFEncoder(threads: 1).key != AVIFEncoder(threads: 2).key)
        guard AVIFEncoder.stopsInChildProcess else { return }
        #expect(never.count > 2, "asked while the AV1 encode ran, not only before it")

        // Four times the photo's pixels at libaom's slowest speed: seconds of AV1 work, stopped on the
        // check's fifth call, about 60 ms into the encode.
        let large = Self.tiled(image, times: 2)
        let partWay = CountingCheck(stopAt: 5)
        #expect {
            _ = try AVIFEncoder(quality: 50, speed: 0, threads: 1, stopCheck: partWay.check).encode(large)
        } throws: { ($0 as? ImageCodecError)?.code == .stopped }
        #expect(partWay.count == 5, "the encode stopped at the first 'stop', during the AV1 encode")
    }

    /// `image`'s first frame repeated `times`×`times`.
    static func tiled(_ image: Image, times: Int) -> Image {
        let frame = image.frames[0]
        let width = frame.width * times
        var pixels = [UInt8](repeating: 0, count: width * frame.height * times * 4)
        for y in 0..<(frame.height * times) {
            let sourceRow = (y % frame.height) * frame.bytesPerRow
            for tile in 0..<times {
                let target = (y * width + tile * frame.width) * 4
                pixels.replaceSubrange(
                    target..<(target + frame.width * 4), with: frame.pixels[sourceRow..<(sourceRow + frame.width * 4)])
            }
        }
        let tiled = ImageFrame(width: width, height: frame.height * times, bytesPerRow: width * 4, pixels: pixels)
        return Image(format: image.format, width: width, height: frame.height * times, frames: [tiled])
    }
}
