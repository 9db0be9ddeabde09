import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// The encoders round-trip through the C libraries' own decoders (libjpeg-turbo, libwebp, libpng,
/// libavif behind the built-in decoders, and libwebp's `dwebp` tool).
@Suite(.timeLimit(.minutes(3))) struct EncoderTests {
    static func source(_ name: String) throws -> Image {
        try ImageDecoderRegistry.shared.decode(DecodingCorpus.data(name))
    }

    /// PSNR in dB over RGB (opaque images).
    static func psnr(_ a: ImageFrame, _ b: ImageFrame) -> Double {
        var squared = 0.0
        for y in 0..<a.height {
            for x in 0..<a.width {
                for channel in 0..<3 {
                    let d =
                        Double(a.pixels[y * a.bytesPerRow + x * 4 + channel])
                        - Double(b.pixels[y * b.bytesPerRow + x * 4 + channel])
                    squared += d * d
                }
            }
        }
        let mse = squared / Double(a.width * a.height * 3)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// Whether libwebp's command-line decoder reads `data` (skipped when `dwebp` is not installed).
    static func dwebpReads(_ data: Data) throws -> Bool? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dwebp") else { return nil }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("enc-\(UUID().uuidString).webp")
        try data.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dwebp")
        process.arguments = [file.path, "-o", "/dev/null"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test(arguments: ["astronaut-16bit.png", "chelsea-palette.png"])
    func jpegAtQuality90KeepsTheImage(file: String) throws {
        let image = try Self.source(file)
        let data = try JPEGEncoder(quality: 90).encode(image)
        #expect(ImageFormat.detect(data) == .jpeg)
        let decoded = try JPEGDecoder().decode(data, options: .default)
        #expect(decoded.width == image.width && decoded.height == image.height)
        let quality = Self.psnr(decoded.frames[0], image.frames[0])
        #expect(quality >= 38, "PSNR \(quality) dB")
    }

    @Test func jpegOptionsReachTheFile() throws {
        let image = try Self.source("coffee-rgb.png")
        let baseline = [UInt8](try JPEGEncoder(quality: 80).encode(image))
        let progressive = [UInt8](try JPEGEncoder(quality: 80, progressive: true).encode(image))
        let full = [UInt8](try JPEGEncoder(quality: 80, chromaSubsampling: .yuv444).encode(image))
        let automatic = [UInt8](try JPEGEncoder(quality: 92).encode(image))
        func marker(_ bytes: [UInt8], _ code: UInt8) -> Int? {
            (0..<bytes.count - 1).first { bytes[$0] == 0xFF && bytes[$0 + 1] == code }
        }
        #expect(marker(progressive, 0xC2) != nil && marker(baseline, 0xC2) == nil)
        // The first component's sampling factors in SOF: 0x22 for 4:2:0, 0x11 for 4:4:4.
        let sof420 = try #require(marker(baseline, 0xC0))
        let sof444 = try #require(marker(full, 0xC0))
        #expect(baseline[sof420 + 11] == 0x22)
        #expect(full[sof444 + 11] == 0x11)
        #expect(automatic[try #require(marker(automatic, 0xC0)) + 11] == 0x11)  // 4:4:4 from quality 90 up
        #expect(try JPEGDecoder().decode(Data(progressive), options: .default).width == 600)

        // EXIF on request, ICC from the image.
        var exif = Data("Exif\0\0".utf8)
        exif += Data([0x4D, 0x4D, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0])
        let withExif = try JPEGEncoder(exif: exif).encode(image)
        #expect(EXIFOrientation.fromJPEG(withExif) == 6)
        var options = ImageDecodingOptions()
        options.colorSpace = .preserve
        let p3 = try ImageDecoderRegistry.shared.decode(PipelineFixtures.data("coffee-p3.png"), options: options)
        let p3JPEG = try JPEGEncoder().encode(p3)
        #expect(try JPEGDecoder().decode(p3JPEG, options: options).iccProfile == p3.iccProfile)
        #expect(
            try JPEGDecoder().decode(try JPEGEncoder(embedsICCProfile: false).encode(p3), options: options).iccProfile
                == nil)
    }

    @Test func jpegWithStandardHuffmanTablesHasTheSamePixels() throws {
        let image = try Self.source("coffee-rgb.png")
        let optimised = [UInt8](try JPEGEncoder(quality: 95).encode(image))
        let standard = [UInt8](try JPEGEncoder(quality: 95, optimizesHuffmanTables: false).encode(image))
        // The entropy coding is lossless: the same coefficients, so the same pixels, in more bytes.
        #expect(standard != optimised)
        #expect(standard.count > optimised.count)
        let decodedStandard = try JPEGDecoder().decode(Data(standard), options: .default)
        let decodedOptimised = try JPEGDecoder().decode(Data(optimised), options: .default)
        #expect(decodedStandard.frames[0].pixels == decodedOptimised.frames[0].pixels)
        // The standard luminance DC table (ITU-T T.81 table K.3) against one made for this image.
        let standardLuminanceDC: [UInt8] = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
        #expect(JPEGMarkers.huffmanTables(standard).first { $0.id == 0x00 }?.counts == standardLuminanceDC)
        #expect(JPEGMarkers.huffmanTables(optimised).first { $0.id == 0x00 }?.counts != standardLuminanceDC)
        #expect(JPEGMarkers.huffmanTables(standard).count == 4)
        // Progressive scans always carry their own tables.
        let progressive = try JPEGEncoder(quality: 95, progressive: true, optimizesHuffmanTables: false).encode(image)
        #expect(progressive == (try JPEGEncoder(quality: 95, progressive: true).encode(image)))
        #expect(JPEGEncoder(optimizesHuffmanTables: false).key.hasSuffix(";huffman=standard"))
        #expect(!JPEGEncoder().key.contains("huffman"))
    }

    /// The coffee photo with its top-left 64×64 pixels fully transparent (and black, as stored colours
    /// under alpha 0 often are); `offset` points into the middle of that patch.
    static func withTransparentCorner() throws -> (image: Image, offset: Int) {
        var image = try source("coffee-rgb.png")
        for y in 0..<64 {
            for x in 0..<64 {
                let index = y * image.frames[0].bytesPerRow + x * 4
                image.frames[0].pixels.replaceSubrange(index..<index + 4, with: [0, 0, 0, 0])
            }
        }
        image.hasAlpha = true
        return (image, 32 * image.frames[0].bytesPerRow + 32 * 4)
    }

    @Test func jpegPutsTransparencyOnTheBackground() throws {
        let (image, offset) = try Self.withTransparentCorner()
        let decoded = try JPEGDecoder().decode(try JPEGEncoder(quality: 95).encode(image), options: .default)
        #expect(decoded.frames[0].pixels[offset..<offset + 3].allSatisfy { $0 >= 250 })
        let black = try JPEGDecoder().decode(try JPEGEncoder(background: .black).encode(image), options: .default)
        #expect(black.frames[0].pixels[offset..<offset + 3].allSatisfy { $0 <= 5 })
    }

    @Test func losslessWebPAndPNGAreExact() throws {
        for image in [
            try Self.source("horse-rgba.png"), try Self.source("coffee-rgb.png"),
            try Self.withTransparentCorner().image,
        ] {
            let webp = try WebPEncoder(lossless: true).encode(image)
            #expect(ImageFormat.detect(webp) == .webp)
            #expect(try WebPDecoder().decode(webp, options: .default).frames[0].pixels == image.frames[0].pixels)
            let png = try PNGEncoder().encode(image)
            #expect(try PNGDecoder().decode(png, options: .default).frames[0].pixels == image.frames[0].pixels)
            if let readable = try Self.dwebpReads(webp) { #expect(readable) }
        }
    }

    @Test func lossyWebPKeepsAlphaAndTheICCProfile() throws {
        let (image, offset) = try Self.withTransparentCorner()
        let webp = try WebPEncoder(quality: 85).encode(image)
        let decoded = try WebPDecoder().decode(webp, options: .default)
        #expect(decoded.hasAlpha)
        #expect(decoded.frames[0].pixels[offset + 3] == 0)
        #expect(decoded.frames[0].pixels[offset + 64 * 4 + 3] == 255)
        if let readable = try Self.dwebpReads(webp) { #expect(readable) }

        var options = ImageDecodingOptions()
        options.colorSpace = .preserve
        let p3 = try ImageDecoderRegistry.shared.decode(PipelineFixtures.data("coffee-p3.png"), options: options)
        let p3WebP = try WebPEncoder(quality: 90).encode(p3)
        #expect(try WebPDecoder().decode(p3WebP, options: options).iccProfile == p3.iccProfile)
        if let readable = try Self.dwebpReads(p3WebP) { #expect(readable) }
    }

    @Test func anAnimationBecomesAnAnimatedWebP() throws {
        let gif = try Self.source("chelsea-animated.gif")
        #expect(gif.frames.count > 1)
        let webp = try WebPEncoder(quality: 75).encode(gif)
        let decoded = try WebPDecoder().decode(webp, options: .default)
        #expect(decoded.frames.count == gif.frames.count)
        #expect(decoded.frames.map(\.duration) == gif.frames.map(\.duration))
        #expect(decoded.loopCount == gif.loopCount)
    }

    @Test func avifRoundTripsWhenLibavifCanEncode() throws {
        try #require(AVIFEncoder.isAvailable, "Debian's libavif is built with aom")
        let image = try Self.source("coffee-rgb.png")
        let data = try AVIFEncoder(quality: 80, speed: 8).encode(image)
        #expect(ImageFormat.detect(data) == .avif)
        let decoded = try AVIFDecoder().decode(data, options: .default)
        #expect(decoded.width == 600 && decoded.height == 400)
        let quality = Self.psnr(decoded.frames[0], image.frames[0])
        #expect(quality >= 32, "PSNR \(quality) dB")

        let (source, offset) = try Self.withTransparentCorner()
        let cornered = try AVIFDecoder().decode(
            try AVIFEncoder(quality: 70, speed: 8).encode(source), options: .default)
        #expect(cornered.hasAlpha)
        #expect(cornered.frames[0].pixels[offset + 3] <= 2)
        #expect(cornered.frames[0].pixels[offset + 64 * 4 + 3] >= 253)
    }

    @Test func encodedAsPicksTheFormatsEncoder() throws {
        let image = try Self.source("horse-rgba.png")
        #expect(ImageFormat.detect(try image.encoded(as: .jpeg, quality: 70)) == .jpeg)
        #expect(ImageFormat.detect(try image.encoded(as: .png)) == .png)
        #expect(ImageFormat.detect(try image.encoded(as: .webp)) == .webp)
        #expect(ImageFormat.detect(try image.encoded(as: .avif, quality: 50)) == .avif)
        #expect(ImageFormat.detect(try image.encoded(as: .gif)) == .gif)
        #expect(ImageFormat.detect(try image.encoded(as: .jxl, quality: 50)) == .jxl)
        for format in [ImageFormat.heic, .unknown] {
            #expect(throws: ImageCodecError.self) { try image.encoded(as: format) }
        }
        let empty = Image(format: .png, width: 0, height: 0, frames: [])
        #expect(throws: ImageCodecError.self) { try empty.encoded(as: .jpeg) }
    }
}
