import Foundation
import Testing

@testable import WebImageCodecs

@Suite("Format detection and the decoder registry", .timeLimit(.minutes(5)))
struct DecoderRegistryTests {
    @Test("Magic bytes decide the format, whatever the file is called")
    func detection() throws {
        #expect(ImageFormat.detect(Data([0xFF, 0xD8, 0xFF, 0xE0])) == .jpeg)
        #expect(ImageFormat.detect(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])) == .png)
        #expect(ImageFormat.detect(Data("GIF87a".utf8)) == .gif)
        #expect(ImageFormat.detect(Data("GIF89a".utf8)) == .gif)
        #expect(ImageFormat.detect(Data("RIFF\0\0\0\0WEBPVP8 ".utf8)) == .webp)
        #expect(ImageFormat.detect(Data("RIFF\0\0\0\0WAVE".utf8)) == .unknown)
        #expect(ImageFormat.detect(Data()) == .unknown)
        #expect(ImageFormat.detect(Data([0xFF, 0xD8])) == .unknown)
        // A slice with a non-zero start index.
        let padded = Data([0, 0, 0xFF, 0xD8, 0xFF, 0xDB])
        #expect(ImageFormat.detect(padded[2...]) == .jpeg)
        for entry in DecodingCorpus.entries {
            #expect(ImageFormat.detect(try DecodingCorpus.data(for: entry)).rawValue == entry.format, "\(entry.name)")
        }
    }

    /// Claims JPEG data and answers with a fixed 1×1 image.
    struct StubJPEGDecoder: ImageDecoding {
        func canDecode(_ data: Data) -> Bool { ImageFormat.detect(data) == .jpeg }
        func decode(_ data: Data, options: ImageDecodingOptions) throws -> Image {
            Image(
                format: .jpeg, width: 1, height: 1,
                frames: [ImageFrame(width: 1, height: 1, bytesPerRow: 4, pixels: [1, 2, 3, 4])])
        }
    }

    @Test("The decoder registered last is asked first, so it can override a built-in format")
    func override() throws {
        let registry = ImageDecoderRegistry()
        let data = try DecodingCorpus.data("astronaut-baseline.jpg")
        #expect(try registry.decode(data).width == 512)
        registry.register(StubJPEGDecoder())
        #expect(registry.orderedDecoders.first is StubJPEGDecoder)
        #expect(try registry.decode(data).width == 1)
        #expect(try registry.decode(try DecodingCorpus.data("coffee-rgb.png")).width == 600)
        // The shared registry is untouched.
        #expect(try ImageDecoderRegistry.shared.decode(data).width == 512)
    }

    @Test("Empty and unknown data are badImageData with a clear message")
    func unknownData() throws {
        let empty = try #require(throws: ImageCodecError.self) { try ImageDecoderRegistry.shared.decode(Data()) }
        #expect(empty.code == .badImageData && empty.message.contains("empty"))
        let html = try #require(throws: ImageCodecError.self) {
            try ImageDecoderRegistry.shared.decode(Data("<html>".utf8))
        }
        #expect(html.code == .badImageData && html.message.contains("format"))
        #expect(ImageDecoderRegistry.shared.makeIncrementalDecoder(for: Data([0xFF])) == nil)
    }

    @Test("Concurrent decodes and registrations are safe")
    func concurrency() async throws {
        let registry = ImageDecoderRegistry()
        let files = ["astronaut-baseline.jpg", "horse-rgba.png", "chelsea-animated.gif", "horse-lossless.webp"]
        let inputs = try files.map { try DecodingCorpus.data($0) }
        let expected = try inputs.map { try registry.decode($0).frames[0].pixels }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<32 {
                group.addTask {
                    if index % 8 == 0 { registry.register(PNGDecoder()) }
                    let input = index % inputs.count
                    return try registry.decode(inputs[input]).frames[0].pixels == expected[input]
                }
            }
            for try await same in group { #expect(same) }
        }
    }

    @Test("EXIF orientation is read from JPEG APP1 and WebP EXIF chunks")
    func exifOrientation() throws {
        #expect(EXIFOrientation.fromJPEG(try DecodingCorpus.data("chelsea-exif-orientation6.jpg")) == 6)
        #expect(EXIFOrientation.fromJPEG(try DecodingCorpus.data("astronaut-baseline.jpg")) == 1)
        let bigEndian = Data([0x4D, 0x4D, 0, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 8, 0, 0])
        #expect(EXIFOrientation.fromTIFF(bigEndian) == 8)
        #expect(EXIFOrientation.fromTIFF(Data("Exif\0\0".utf8) + bigEndian) == 8)
        #expect(EXIFOrientation.fromTIFF(bigEndian.prefix(12)) == 1)
    }
}
