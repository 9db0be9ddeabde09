import Foundation
import Testing

@testable import WebImageCodecs

@Suite("Progressive decoding", .timeLimit(.minutes(5)))
struct ProgressiveDecodingTests {
    static let chunkSize = 4096

    /// Feeds `data` in 4 KB chunks (the accumulated body each time) and returns the partial images seen
    /// before the last chunk and the final image.
    private static func feed(_ data: Data, options: ImageDecodingOptions = .default) throws -> (
        partials: [Image], final: Image
    ) {
        var partials: [Image] = []
        var decoder: (any ImageIncrementalDecoding)?
        var end = 0
        while end < data.count {
            end = min(data.count, end + chunkSize)
            let received = data.prefix(end)
            if decoder == nil {
                decoder = ImageDecoderRegistry.shared.makeIncrementalDecoder(for: received, options: options)
            }
            if end < data.count, let partial = decoder?.decodePartial(received) { partials.append(partial) }
        }
        let incremental = try #require(decoder)
        return (partials, try incremental.decodeFinal(data))
    }

    @Test(
        "Progressive JPEG, interlaced PNG and WebP yield partial images, then the one-shot result",
        arguments: [
            "coffee-progressive.jpg", "astronaut-baseline.jpg", "coffee-interlaced.png", "coffee-rgb.png",
            "astronaut-lossy.webp", "horse-lossless.webp", "chelsea-animated.webp",
        ])
    func partialsThenFinal(file: String) throws {
        let data = try DecodingCorpus.data(file)
        #expect(data.count > Self.chunkSize)
        let (partials, final) = try Self.feed(data)
        #expect(!partials.isEmpty, "no partial image from \(file) before its last chunk")
        for partial in partials {
            #expect(partial.isPartial)
            #expect(partial.width == final.width && partial.height == final.height)
        }
        let oneShot = try ImageDecoderRegistry.shared.decode(data)
        #expect(!final.isPartial)
        #expect(final.frames.count == oneShot.frames.count)
        #expect(final.frameCount == oneShot.frameCount)
        #expect(final.exifOrientation == oneShot.exifOrientation)
        #expect(final.hasAlpha == oneShot.hasAlpha)
        for (a, b) in zip(final.frames, oneShot.frames) {
            #expect(a.pixels == b.pixels, "final incremental decode differs from the one-shot decode")
            #expect(a.duration == b.duration)
        }
    }

    @Test(
        "Incremental decoding honours thumbnails and still ends equal to the one-shot decode",
        arguments: ["coffee-interlaced.png", "astronaut-lossy.webp", "coffee-progressive.jpg"])
    func incrementalThumbnail(file: String) throws {
        let data = try DecodingCorpus.data(file)
        let options = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 100, height: 100))
        let (partials, final) = try Self.feed(data, options: options)
        #expect(partials.allSatisfy { $0.width <= 100 && $0.height <= 100 })
        let oneShot = try ImageDecoderRegistry.shared.decode(data, options: options)
        #expect(final.frames.first?.pixels == oneShot.frames.first?.pixels)
    }

    @Test(
        "Truncated data through the incremental decoder ends partial or badImageData",
        arguments: ["truncated-half.jpg", "truncated.png", "truncated.webp"])
    func truncatedFinal(file: String) throws {
        let data = try DecodingCorpus.data(file)
        let decoder = try #require(ImageDecoderRegistry.shared.makeIncrementalDecoder(for: data))
        _ = decoder.decodePartial(data.prefix(data.count / 2))
        do {
            let image = try decoder.decodeFinal(data)
            #expect(image.isPartial)
        } catch let error as ImageCodecError {
            #expect(error.code == .badImageData)
        }
    }
}
