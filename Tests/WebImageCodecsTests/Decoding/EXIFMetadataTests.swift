import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// `EXIFMetadata` and `ImageDecodingOptions.keepsEXIF`: a file's EXIF block found in JPEG, PNG and WebP,
/// written back by those encoders, set upright, and cut down to the artist and copyright.
@Suite struct EXIFMetadataTests {
    static func image(exif: Data? = nil) -> Image {
        let pixels = (0..<(8 * 6)).flatMap { index -> [UInt8] in [UInt8(index * 5 % 256), 90, 200, 255] }
        var image = Image(
            format: .png, width: 8, height: 6,
            frames: [ImageFrame(width: 8, height: 6, bytesPerRow: 32, pixels: pixels)])
        image.exif = exif
        return image
    }

    static var keeping: ImageDecodingOptions {
        var options = ImageDecodingOptions.default
        options.keepsEXIF = true
        return options
    }

    @Test("the block the JPEG, PNG and WebP encoders write from Image.exif is found again, byte for byte")
    func roundTrip() throws {
        for bigEndian in [true, false] {
            let exif = EXIFBlocks.camera(bigEndian: bigEndian)
            let encoded: [(ImageFormat, Data)] = [
                (.jpeg, try JPEGEncoder().encode(Self.image(exif: exif))),
                (.png, try PNGEncoder().encode(Self.image(exif: exif))),
                (.webp, try WebPEncoder().encode(Self.image(exif: exif))),
            ]
            for (format, data) in encoded {
                #expect(EXIFMetadata.block(in: data, format: format) == exif, "\(format)")
                let decoded = try ImageDecoderRegistry.shared.decode(data, options: Self.keeping)
                #expect(decoded.exif == exif, "\(format)")
                #expect(try ImageDecoderRegistry.shared.decode(data, options: .default).exif == nil, "\(format)")
                // Without a block, none is written.
                #expect(EXIFMetadata.block(in: try Self.encode(Self.image(), as: format), format: format) == nil)
            }
        }
    }

    static func encode(_ image: Image, as format: ImageFormat) throws -> Data {
        switch format {
        case .jpeg: try JPEGEncoder().encode(image)
        case .webp: try WebPEncoder().encode(image)
        default: try PNGEncoder().encode(image)
        }
    }

    @Test("upright sets the orientation to 1 and changes nothing else; a block without one is left alone")
    func upright() {
        for bigEndian in [true, false] {
            let exif = EXIFBlocks.camera(orientation: 6, bigEndian: bigEndian)
            let upright = EXIFMetadata.upright(exif)
            #expect(EXIFOrientation.tiffOrientation(exif) == 6)
            #expect(EXIFOrientation.tiffOrientation(upright) == 1)
            #expect(zip(exif, upright).filter { $0 != $1 }.count == 1)
            #expect(upright.count == exif.count)
            let none = EXIFBlocks.block([(0x010F, .text("Camera"))], bigEndian: bigEndian)
            #expect(EXIFMetadata.upright(none) == none)
        }
    }

    @Test("copyright keeps only the artist and the copyright, in a new block; nil when the source has neither")
    func copyright() throws {
        for bigEndian in [true, false] {
            let kept = try #require(EXIFMetadata.copyright(EXIFBlocks.camera(bigEndian: bigEndian)))
            let expected = EXIFBlocks.block(
                [(0x013B, .text("Ann Artist")), (0x8298, .text("(c) 2026 Studio"))], bigEndian: false)
            #expect(kept == expected)
            #expect(EXIFOrientation.tiffOrientation(kept) == nil)
            #expect(kept.range(of: Data("Camera".utf8)) == nil)
        }
        // Short values sit in the entry itself.
        let short = try #require(
            EXIFMetadata.copyright(EXIFBlocks.block([(0x8298, .text("(c)"))], bigEndian: true)))
        #expect(short == EXIFBlocks.block([(0x8298, .text("(c)"))], bigEndian: false))
        #expect(EXIFMetadata.copyright(EXIFBlocks.block([(0x010F, .text("Camera"))], bigEndian: true)) == nil)
    }

    @Test("a damaged block is not kept or gives nothing, never a read past its end")
    func damaged() {
        let exif = EXIFBlocks.camera()
        for length in [0, 4, 9, 20, exif.count - 1] {
            let cut = exif.prefix(length)
            #expect(EXIFMetadata.upright(Data(cut)).count == length)
            _ = EXIFMetadata.copyright(Data(cut))
        }
        // An IFD offset and a value offset far past the end; a count past the end.
        var wild = exif
        wild[wild.startIndex + 4] = 0x7F
        #expect(EXIFMetadata.copyright(wild) == nil)
        #expect(EXIFMetadata.upright(wild) == wild)
        var bigCount = EXIFBlocks.block([(0x8298, .text("(c) 2026 somebody"))], bigEndian: true)
        bigCount[bigCount.startIndex + 14] = 0x7F
        #expect(EXIFMetadata.copyright(bigCount) == nil)
        // Not TIFF: not kept.
        var jpeg = Data([0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x10]) + Data("Exif\0\0".utf8) + Data("XXXXXXXX".utf8)
        jpeg += Data([0xFF, 0xD9])
        #expect(EXIFMetadata.block(in: jpeg, format: .jpeg) == nil)
    }
}
