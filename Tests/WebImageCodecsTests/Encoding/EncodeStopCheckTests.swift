import Foundation
import Locking
import Testing

@testable import WebImageCodecs

/// `EncodeStopCheck`: libwebp asks it from its progress hook, so a WebP encode ends part-way; AVIF asks it
/// between its steps.
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

    @Test("an AVIF encode asks before the colour conversion and before the AV1 encode; threads are in the key")
    func avifStopsBetweenSteps() throws {
        guard AVIFEncoder.isAvailable else { return }
        let image = try Self.photo()
        let never = CountingCheck(stopAt: .max)
        let data = try AVIFEncoder(quality: 50, speed: 9, threads: 1, stopCheck: never.check).encode(image)
        #expect(ImageFormat.detect(data) == .avif)
        #expect(never.count == 2)
        for stopAt in [1, 2] {
            let stopping = CountingCheck(stopAt: stopAt)
            #expect {
                _ = try AVIFEncoder(quality: 50, speed: 9, stopCheck: stopping.check).encode(image)
            } throws: { ($0 as? ImageCodecError)?.code == .stopped }
            #expect(stopping.count == stopAt)
        }
        #expect(AVIFEncoder(threads: 1).key != AVIFEncoder(threads: 2).key)
    }
}
