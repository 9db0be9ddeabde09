import Foundation
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
        #expect(image.exifOrientation == 1)
        let corner = Self.pixel(image, 35, 4)
        #expect(corner[0] > 200 && corner[1] < 60 && corner[2] < 60, "top-right: \(corner)")
        let other = Self.pixel(image, 4, 4)
        #expect(other[0] > 200 && other[1] > 200 && other[2] > 200, "top-left: \(other)")
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
