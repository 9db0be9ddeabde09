import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// HEIC through libheif, on the files of Tests/Fixtures/heif (written by pillow-heif's libheif and x265;
/// see its make-fixtures.py). SDWebImage's own HEIC and HEIF files are compared with Pillow's decode by the
/// conformance checker.
@Suite("HEIC and HEIF decoding", .timeLimit(.minutes(3)))
struct HEIFDecodingTests {
    static let folder = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/heif")

    static func data(_ name: String) throws -> Data {
        try Data(contentsOf: folder.appendingPathComponent(name))
    }

    /// The RGBA of pixel (`x`, `y`) of the first frame.
    static func pixel(_ image: Image, _ x: Int, _ y: Int) -> [Int] {
        let frame = image.frames[0]
        let start = y * frame.bytesPerRow + x * 4
        return frame.pixels[start..<start + 4].map(Int.init)
    }

    @Test("HEIF brands are .heic, AVIF's stay .avif, and the registry picks the HEIF decoder")
    func detection() throws {
        for name in ["alpha.heic", "orientation6.heic", "thumbnail.heic", "grid.heic"] {
            #expect(ImageFormat.detect(try Self.data(name)) == .heic, "\(name)")
        }
        // An ftyp box with a HEIF brand only among the compatible ones (major brand `mif1`, then `heic`).
        let ftyp: [UInt8] = [0, 0, 0, 0x18] + Array("ftypmif1".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)
        #expect(ImageFormat.detect(Data(ftyp)) == .heic)
        // AVIF files list `mif1` too: `avif` wins.
        let avif: [UInt8] = [0, 0, 0, 0x18] + Array("ftypavif".utf8) + [0, 0, 0, 0] + Array("mif1avif".utf8)
        #expect(ImageFormat.detect(Data(avif)) == .avif)
        let mp4: [UInt8] = [0, 0, 0, 0x18] + Array("ftypisom".utf8) + [0, 0, 0, 0] + Array("isomavc1".utf8)
        #expect(ImageFormat.detect(Data(mp4)) == .unknown)
        #expect(HEIFDecoder().canDecode(try Self.data("alpha.heic")))
    }

    @Test("alpha comes back straight, with the colours beneath it")
    func alpha() throws {
        let image = try ImageDecoderRegistry.shared.decode(try Self.data("alpha.heic"))
        #expect(image.format == .heic && image.width == 64 && image.height == 48 && image.hasAlpha)
        #expect(image.frames.count == 1 && image.frameCount == 1)
        // Rows 0–23 were written with alpha 80, rows 24–47 opaque; red = 4x, green = 5y, blue = 128.
        for (x, y, alpha) in [(10, 5, 80), (50, 20, 80), (10, 30, 255), (50, 45, 255)] {
            let rgba = Self.pixel(image, x, y)
            #expect(abs(rgba[3] - alpha) <= 2, "alpha at \(x),\(y): \(rgba)")
            #expect(abs(rgba[0] - 4 * x) <= 12 && abs(rgba[1] - 5 * y) <= 12 && abs(rgba[2] - 128) <= 12, "\(rgba)")
        }
    }

    @Test("irot and imir are applied: the image is upright and says orientation 1")
    func orientation() throws {
        // Stored as 60×40 with a red block at its top-left, under EXIF orientation 6 (turn 90° clockwise to
        // show), which pillow-heif wrote as irot/imir: shown 40×60 with the block at the top-right.
        let image = try ImageDecoderRegistry.shared.decode(try Self.data("orientation6.heic"))
        #expect(image.width == 40 && image.height == 60)
        #expect(image.originalWidth == 40 && image.originalHeight == 60)
        #expect(image.exifOrientation == 1 && image.fileOrientation == 6)
        let corner = Self.pixel(image, 35, 4)
        #expect(corner[0] > 200 && corner[1] < 60 && corner[2] < 60, "top-right: \(corner)")
        let other = Self.pixel(image, 4, 4)
        #expect(other[0] > 200 && other[1] > 200 && other[2] > 200, "top-left: \(other)")
    }

    @Test("preserveOrientation gives the stored 60×40 pixels with orientation 6, which applyOrientation turns")
    func preservedOrientation() throws {
        let data = try Self.data("orientation6.heic")
        var options = ImageDecodingOptions()
        options.preserveOrientation = true
        let stored = try ImageDecoderRegistry.shared.decode(data, options: options)
        #expect(stored.width == 60 && stored.height == 40)
        #expect(stored.originalWidth == 60 && stored.originalHeight == 40)
        #expect(stored.exifOrientation == 6 && stored.fileOrientation == 6)
        // The red block is at the stored top-left.
        let corner = Self.pixel(stored, 4, 4)
        #expect(corner[0] > 200 && corner[1] < 60 && corner[2] < 60, "stored top-left: \(corner)")
        let opposite = Self.pixel(stored, 55, 35)
        #expect(opposite[0] > 200 && opposite[1] > 200 && opposite[2] > 200, "\(opposite)")
        // Turned later, it equals the default (upright) decode pixel for pixel.
        let turned = try ImageTransformer.applyOrientation.transform(stored)
        let upright = try ImageDecoderRegistry.shared.decode(data)
        #expect(turned.width == 40 && turned.height == 60 && turned.exifOrientation == 1)
        #expect(turned.frames[0].pixels == upright.frames[0].pixels)
        // A thumbnail box describes the image as delivered: the stored layout here.
        options.thumbnailPixelSize = PixelSize(width: 30, height: 30)
        let small = try ImageDecoderRegistry.shared.decode(data, options: options)
        #expect(small.width == 30 && small.height == 20 && small.exifOrientation == 6)
        let smallCorner = Self.pixel(small, 2, 2)
        #expect(smallCorner[0] > 200 && smallCorner[1] < 60, "\(smallCorner)")
    }

    @Test("irot and imir are read from the primary item's properties, and bad boxes give orientation 1")
    func itemProperties() throws {
        // ipco holds [hvcC stand-in, irot angle 3 (270° anti-clockwise), imir axis 1]; ipma (version 1,
        // 16-bit indexes) gives item 1 properties 1 and 2 and item 2 property 3.
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
            let size = UInt32(8 + payload.count)
            return withUnsafeBytes(of: size.bigEndian) { Array($0) } + Array(type.utf8) + payload
        }
        let ipco = box("ipco", box("hvcC", [1, 2, 3]) + box("irot", [3]) + box("imir", [1]))
        let ipma = box("ipma", [1, 0, 0, 1, 0, 0, 0, 2] + [0, 0, 0, 1, 2, 0x80, 1, 0, 2] + [0, 0, 0, 2, 1, 0, 3])
        func file(primary: UInt16) -> Data {
            let pitm = box("pitm", [0, 0, 0, 0, UInt8(primary >> 8), UInt8(primary & 0xFF)])
            let meta = box(
                "meta",
                [0, 0, 0, 0] + box("hdlr", Array(repeating: 0, count: 20)) + pitm
                    + box("iprp", ipco + ipma))
            return Data(box("ftyp", Array("heic".utf8) + [0, 0, 0, 0]) + meta + box("mdat", [0, 0]))
        }
        // Item 1: irot 3 → orientation 6. Item 2: imir 1 alone → orientation 2.
        #expect(HEIFItemProperties.primaryOrientation(file(primary: 1)) == 6)
        #expect(HEIFItemProperties.primaryOrientation(file(primary: 2)) == 2)
        #expect(HEIFItemProperties.primaryOrientation(file(primary: 3)) == 1)
        // Every truncation, and a box whose size runs past the file, reads as 1 without trapping.
        let whole = file(primary: 1)
        for cut in 0..<whole.count {
            let orientation = HEIFItemProperties.primaryOrientation(whole.prefix(cut))
            #expect(orientation == 1 || orientation == 6, "cut at \(cut)")
        }
        var lying = [UInt8](whole)
        lying[3] = 0xFF
        #expect(HEIFItemProperties.primaryOrientation(Data(lying)) == 1)
        // The real fixture says 6 (pillow-heif wrote EXIF orientation 6 as irot/imir).
        #expect(HEIFItemProperties.primaryOrientation(try Self.data("orientation6.heic")) == 6)
        #expect(HEIFItemProperties.primaryOrientation(try Self.data("grid.heic")) == 1)
    }

    @Test("a grid of 64-pixel tiles is assembled into one picture")
    func grid() throws {
        let image = try ImageDecoderRegistry.shared.decode(try Self.data("grid.heic"))
        #expect(image.width == 200 && image.height == 150 && !image.hasAlpha)
        // red = 255x/199, green = 255y/149, blue = 60, across tile borders (x 63|64, y 63|64, 127|128).
        for (x, y) in [(0, 0), (63, 63), (64, 64), (128, 127), (199, 149), (100, 140)] {
            let rgba = Self.pixel(image, x, y)
            let expected = [255 * x / 199, 255 * y / 149, 60, 255]
            #expect(zip(rgba, expected).allSatisfy { abs($0 - $1) <= 10 }, "\(x),\(y): \(rgba) vs \(expected)")
        }
    }

    @Test("a thumbnail request decodes the embedded 160-pixel thumbnail when it covers the box")
    func embeddedThumbnail() throws {
        let data = try Self.data("thumbnail.heic")
        // Room for the thumbnail's buffers, not for the full 1200×800 image's: only the embedded
        // thumbnail can be decoded under this budget.
        let small = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 150, height: 150))
        var budgeted = small
        budgeted.memoryBudget = DecodeMemoryBudget(limit: 1_000_000, waitTimeout: 0)
        let image = try ImageDecoderRegistry.shared.decode(data, options: budgeted)
        #expect(image.width == 150 && image.height == 100)
        #expect(image.originalWidth == 1200 && image.originalHeight == 800)
        // The same picture as the full decode averaged down (the thumbnail is the image, smaller).
        let full = try ImageDecoderRegistry.shared.decode(data, options: small)
        for (x, y) in [(10, 10), (75, 50), (140, 90)] {
            let a = Self.pixel(image, x, y)
            let b = Self.pixel(full, x, y)
            #expect(zip(a, b).allSatisfy { abs($0 - $1) <= 12 }, "\(x),\(y): \(a) vs \(b)")
        }
        // A box larger than the thumbnail needs the full image, which does not fit that budget.
        var large = budgeted
        large.thumbnailPixelSize = PixelSize(width: 600, height: 600)
        #expect(throws: ImageCodecError.self) { try ImageDecoderRegistry.shared.decode(data, options: large) }
        large.memoryBudget = nil
        let bigger = try ImageDecoderRegistry.shared.decode(data, options: large)
        #expect(bigger.width == 600 && bigger.height == 400)
    }

    @Test("prefersEmbeddedThumbnail decodes the embedded thumbnail as the image; a file without one decodes whole")
    func preferredEmbeddedThumbnail() throws {
        var options = ImageDecodingOptions()
        options.prefersEmbeddedThumbnail = true
        // Room for the thumbnail's buffers only: the 1200×800 image cannot be what was decoded.
        options.memoryBudget = DecodeMemoryBudget(limit: 1_000_000, waitTimeout: 0)
        let data = try Self.data("thumbnail.heic")
        let image = try ImageDecoderRegistry.shared.decode(data, options: options)
        // pillow-heif made it 160×106 (800 × 160/1200, rounded down).
        #expect(image.width == 160 && image.height == 106, "\(image.width)×\(image.height)")
        #expect(image.originalWidth == 160 && image.originalHeight == 106)
        // The same picture as the full image averaged down to that size.
        let full = try ImageDecoderRegistry.shared.decode(
            data, options: .init(thumbnailPixelSize: PixelSize(width: 160, height: 106), maximumImagePixels: .max))
        for (x, y) in [(10, 10), (80, 53), (150, 100)] {
            let a = Self.pixel(image, x, y)
            let b = Self.pixel(full, x, y)
            #expect(zip(a, b).allSatisfy { abs($0 - $1) <= 12 }, "\(x),\(y): \(a) vs \(b)")
        }
        // Shrink-on-load still applies, to the thumbnail.
        options.thumbnailPixelSize = PixelSize(width: 80, height: 80)
        let smaller = try ImageDecoderRegistry.shared.decode(data, options: options)
        #expect(smaller.width == 80 && smaller.originalWidth == 160)
        // A file without an embedded thumbnail decodes its image.
        var plain = ImageDecodingOptions()
        plain.prefersEmbeddedThumbnail = true
        let grid = try ImageDecoderRegistry.shared.decode(try Self.data("grid.heic"), options: plain)
        let reference = try ImageDecoderRegistry.shared.decode(try Self.data("grid.heic"), options: .init())
        #expect(grid.width == reference.width && grid.height == reference.height)
    }

    @Test("the declared size is refused above maximumImagePixels before decoding")
    func sizeLimit() throws {
        let options = ImageDecodingOptions(maximumImagePixels: 1200 * 800 - 1)
        let error = try #require(throws: ImageCodecError.self) {
            try ImageDecoderRegistry.shared.decode(try Self.data("thumbnail.heic"), options: options)
        }
        #expect(error.code == .badImageData)
        #expect("\(error)".contains("maximumImagePixels") || "\(error)".contains("HEIF"), "\(error)")
    }

    @Test("a file cut short, or with its image data scrambled, fails with badImageData")
    func damagedFiles() throws {
        let data = try Self.data("grid.heic")
        for cut in [16, 200, data.count / 2, data.count - 10] {
            let error = try #require(throws: ImageCodecError.self, "cut at \(cut)") {
                try HEIFDecoder().decode(data.prefix(cut), options: .default)
            }
            #expect(error.code == .badImageData)
        }
        #expect(throws: ImageCodecError.self) { try HEIFDecoder().decode(Data(), options: .default) }
    }
}
