import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

@Suite(.timeLimit(.minutes(2))) struct AVIFAndJXLDecodingTests {
    @Test func theFixturesArePresent() {
        #expect(PipelineFixtures.entries(format: "avif").count == 8)
        #expect(PipelineFixtures.entries(format: "jxl").count == 7)
    }

    @Test(arguments: PipelineFixtures.entries(format: "avif") + PipelineFixtures.entries(format: "jxl"))
    func decodesLikeTheReferenceDecoder(entry: PipelineFixtures.Entry) throws {
        let data = try PipelineFixtures.data(entry.file)
        #expect(ImageFormat.detect(data).rawValue == entry.format)
        let image = try ImageDecoderRegistry.shared.decode(data)
        #expect(image.format.rawValue == entry.format)
        #expect(image.width == entry.width && image.height == entry.height)
        #expect(image.hasAlpha == entry.alpha)
        #expect(image.frames.count == entry.frames)
        #expect(image.frameCount == entry.frames)
        #expect(!image.isPartial)
        if let durations = entry.durationsMs {
            let decoded = image.frames.map { Int(($0.duration * 1000).rounded()) }
            #expect(decoded == durations)
        }
        if let reference = entry.reference {
            let expected = try PNGDecoder().decode(PipelineFixtures.data(reference), options: .default)
            let difference = PipelineFixtures.maximumDifference(
                DecodingCorpus.grid4(image.frames[0]), DecodingCorpus.grid4(expected.frames[0]))
            #expect(difference <= 3, "block means differ by \(difference) levels")
        }
    }

    @Test func detectionReadsTheBrandsAndSignatures() {
        func ftyp(_ major: String, _ compatible: [String]) -> Data {
            var box =
                Data([0, 0, 0, UInt8(16 + 4 * compatible.count)]) + Data("ftyp\(major)".utf8) + Data([0, 0, 0, 0])
            for brand in compatible { box += Data(brand.utf8) }
            return box + Data(count: 8)
        }
        #expect(ImageFormat.detect(ftyp("avif", ["mif1", "miaf"])) == .avif)
        #expect(ImageFormat.detect(ftyp("avis", ["msf1"])) == .avif)
        #expect(ImageFormat.detect(ftyp("mif1", ["miaf", "avif"])) == .avif)
        #expect(ImageFormat.detect(ftyp("heic", ["mif1", "heic"])) == .heic)
        #expect(ImageFormat.detect(Data([0xFF, 0x0A, 0xFA, 0x7F])) == .jxl)
        #expect(ImageFormat.detect(Data([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A])) == .jxl)
        #expect(ImageFormat.detect(Data([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87])) == .unknown)
    }

    @Test("An AVIF without a pixi property decodes, as Chrome and Pillow show it; the other strict checks stay")
    func avifWithoutPixi() throws {
        let original = try PipelineFixtures.data("small-horse.avif")
        // Every `pixi` box renamed to a type nobody knows: same sizes and property indexes, no pixi.
        var bytes = [UInt8](original)
        var renamed = 0
        for index in 4..<(bytes.count - 4) where bytes[index..<(index + 4)].elementsEqual("pixi".utf8) {
            bytes[index] = UInt8(ascii: "x")
            renamed += 1
        }
        #expect(renamed >= 1)
        let expected = try AVIFDecoder().decode(original, options: .default)
        let image = try AVIFDecoder().decode(Data(bytes), options: .default)
        #expect(image.width == expected.width && image.height == expected.height)
        #expect(image.frames[0].pixels == expected.frames[0].pixels)
    }

    @Test(arguments: ["coffee.avif", "coffee.jxl"])
    func thumbnailsAndTheLimitsApply(file: String) throws {
        let data = try PipelineFixtures.data(file)
        var options = ImageDecodingOptions()
        options.thumbnailPixelSize = PixelSize(width: 150, height: 150)
        let thumbnail = try ImageDecoderRegistry.shared.decode(data, options: options)
        #expect(thumbnail.width == 150 && thumbnail.height == 100)
        #expect(thumbnail.originalWidth == 600 && thumbnail.originalHeight == 400)

        var scaled = ImageDecodingOptions()
        scaled.scaleDownLargeImages = true
        scaled.scaleDownLimitBytes = 60_000 * 4
        let small = try ImageDecoderRegistry.shared.decode(data, options: scaled)
        #expect(small.width * small.height <= 60_000)
        #expect(small.width > 250)

        var limited = ImageDecodingOptions()
        limited.maximumImagePixels = 100_000
        let error = #expect(throws: ImageCodecError.self) {
            try ImageDecoderRegistry.shared.decode(data, options: limited)
        }
        #expect(error?.code == .badImageData)
        #expect(error?.message.contains("maximumImagePixels") == true)

        // A decode memory budget smaller than the bitmap refuses it before libavif / libjxl decode.
        var budgeted = ImageDecodingOptions()
        budgeted.memoryBudget = DecodeMemoryBudget(limit: 500_000)
        let refused = #expect(throws: ImageCodecError.self) {
            try ImageDecoderRegistry.shared.decode(data, options: budgeted)
        }
        #expect(refused?.code == .badImageData)
        #expect(budgeted.memoryBudget?.peakBytesInUse == 0)
    }

    @Test func aSequenceDecodesOnlyItsFirstFrameWhenAsked() throws {
        for file in ["chelsea-animated.avif", "chelsea-animated.jxl"] {
            var options = ImageDecodingOptions()
            options.decodeFirstFrameOnly = true
            let image = try ImageDecoderRegistry.shared.decode(PipelineFixtures.data(file), options: options)
            #expect(image.frames.count == 1, "\(file)")
            #expect(image.frameCount == 8, "\(file)")
        }
    }

    @Test(arguments: ["coffee.avif", "horse-alpha.avif", "chelsea-animated.avif", "coffee.jxl"])
    func cutDataFailsOrGivesAPartialImageNeverACrash(file: String) throws {
        let data = try PipelineFixtures.data(file)
        for fraction in [0.02, 0.3, 0.6, 0.95] {
            let cut = data.prefix(Int(Double(data.count) * fraction))
            do {
                let image = try ImageDecoderRegistry.shared.decode(cut)
                #expect(image.isPartial || image.frames.count < image.frameCount, "\(file) at \(fraction)")
            } catch let error as ImageCodecError {
                #expect(error.code == .badImageData)
            }
        }
    }

    @Test func aProgressiveJXLShowsTheWholeImageFromItsFirstPasses() throws {
        let data = try PipelineFixtures.data("coffee-progressive.jxl")
        let final = try ImageDecoderRegistry.shared.decode(data)
        let partial = try ImageDecoderRegistry.shared.decode(data.prefix(data.count * 4 / 10))
        #expect(partial.isPartial)
        #expect(partial.width == 600 && partial.height == 400)
        // A pass over the whole image, not just the top rows: every block is near the final one.
        let difference = PipelineFixtures.maximumDifference(
            DecodingCorpus.grid4(partial.frames[0]), DecodingCorpus.grid4(final.frames[0]))
        #expect(difference <= 12, "block means differ by \(difference) levels")

        // The incremental decoder the downloader uses for .progressiveLoad yields it too.
        let incremental = JXLDecoder().makeIncrementalDecoder(options: .default)
        #expect(incremental.decodePartial(data.prefix(data.count * 4 / 10))?.isPartial == true)
        #expect(try incremental.decodeFinal(data).isPartial == false)
    }
}
