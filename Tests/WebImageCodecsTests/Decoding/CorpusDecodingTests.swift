import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

@Suite("Decoding the shared corpus", .timeLimit(.minutes(5)))
struct CorpusDecodingTests {
    @Test("The corpus and its manifest are present")
    func corpusIsPresent() {
        #expect(DecodingCorpus.directory != nil, Comment(rawValue: DecodingCorpus.missingMessage))
        #expect(DecodingCorpus.entries.count >= 30)
    }

    @Test(
        "Images decode with the manifest's size, frames, alpha, orientation and block means",
        arguments: DecodingCorpus.entries.filter { $0.expect == "image" })
    func decodesLikePillow(_ entry: DecodingCorpus.Entry) async throws {
        // Decoding (a 36-megapixel JPEG among the files) and averaging the blocks is long CPU work in a debug
        // build: it runs on a thread of its own. On Swift's cooperative pool (two threads here) it kept a
        // thread for minutes, and with the other one waiting on a Dispatch queue the whole run stalled.
        let decoded = await offCooperativePool {
            Result { () throws -> (Image, [[Double]]) in
                let data = try DecodingCorpus.data(for: entry)
                // The manifest describes the pixels as stored (Pillow does not apply the orientation).
                var options = ImageDecodingOptions()
                options.preserveOrientation = true
                let image = try ImageDecoderRegistry.shared.decode(data, options: options)
                return (image, image.frames.first.map(DecodingCorpus.grid4) ?? [])
            }
        }
        let (image, actual) = try decoded.get()
        #expect(image.format.rawValue == entry.format)
        #expect(image.width == entry.width)
        #expect(image.height == entry.height)
        #expect(image.originalWidth == entry.width)
        #expect(image.frames.count == entry.frames)
        #expect(image.frameCount == entry.frames)
        #expect(image.hasAlpha == entry.hasAlpha)
        #expect(image.exifOrientation == entry.exifOrientation)
        #expect(!image.isPartial)
        let frame = try #require(image.frames.first)
        #expect(frame.width == image.width && frame.height == image.height)
        #expect(frame.pixels.count == frame.bytesPerRow * frame.height)
        let lossy = entry.format == "jpeg" || (entry.format == "webp" && !entry.note.contains("lossless"))
        let tolerance = lossy ? 4.0 : 2.0
        let expected = try #require(entry.firstFrameGrid4)
        for (index, (want, got)) in zip(expected, actual).enumerated() {
            for channel in 0..<4 {
                #expect(
                    abs(want[channel] - got[channel]) <= tolerance,
                    "block \(index) channel \(channel): Pillow \(want[channel]), ours \(got[channel])")
            }
        }
    }

    @Test(
        "Broken, empty and foreign data fail or come out partial, as the manifest says",
        arguments: DecodingCorpus.entries.filter { $0.expect != "image" })
    func failsAsExpected(_ entry: DecodingCorpus.Entry) throws {
        let data = try DecodingCorpus.data(for: entry)
        let result = Result { try ImageDecoderRegistry.shared.decode(data) }
        switch (entry.expect, result) {
        case ("partialOrError", .success(let image)):
            #expect(image.isPartial)
        case ("refuseOrScale", .success(let image)):
            #expect(image.width * image.height <= ImageDecodingOptions.default.maximumImagePixels)
        case (_, .success):
            Issue.record("\(entry.name) decoded but the manifest expects \(entry.expect)")
        case (_, .failure(let error)):
            let error = try #require(error as? ImageCodecError)
            #expect(error.code == .badImageData)
            if entry.expect == "emptyData" { #expect(error.message.contains("empty")) }
        }
    }

    @Test("Animated GIF and WebP carry per-frame durations and loop counts")
    func animationTiming() throws {
        let webp = try ImageDecoderRegistry.shared.decode(try DecodingCorpus.data("chelsea-animated.webp"))
        #expect(webp.frames.allSatisfy { abs($0.duration - 0.08) < 0.0001 })
        let gif = try ImageDecoderRegistry.shared.decode(try DecodingCorpus.data("chelsea-animated.gif"))
        #expect(gif.frames.allSatisfy { $0.duration > 0 })
        #expect(gif.frames.count == 8)
        let first = try ImageDecoderRegistry.shared.decode(
            try DecodingCorpus.data("chelsea-animated.gif"), options: .init(decodeFirstFrameOnly: true))
        #expect(first.frames.count == 1 && first.frameCount == 8)
        #expect(first.frames[0].pixels == gif.frames[0].pixels)
        let webpFirst = try ImageDecoderRegistry.shared.decode(
            try DecodingCorpus.data("chelsea-animated.webp"), options: .init(decodeFirstFrameOnly: true))
        #expect(webpFirst.frames.count == 1 && webpFirst.frameCount == 8)
    }
}
