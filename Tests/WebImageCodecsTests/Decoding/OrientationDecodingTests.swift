import CZlib
import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// Orientation applied by every decoder: files of `Tests/Fixtures/orientation` (made by its
/// `make_orientation.py` with Pillow and avifenc) store a 48×32 gray picture with a red 16×16 marker in the
/// stored top-left corner; upright, the marker is where the file's orientation sends that corner.
@Suite("Decoders turn oriented images upright", .timeLimit(.minutes(5)))
struct OrientationDecodingTests {
    enum Corner: Equatable { case topLeft, topRight, bottomLeft, bottomRight }

    /// Where the stored top-left corner shows for EXIF orientation 1…8.
    static let markerCorner: [Int: Corner] = [
        1: .topLeft, 2: .topRight, 3: .bottomRight, 4: .bottomLeft,
        5: .topLeft, 6: .topRight, 7: .bottomRight, 8: .bottomLeft,
    ]

    static func data(_ name: String) throws -> Data {
        try Data(contentsOf: Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/orientation/\(name)"))
    }

    /// The corner whose pixel, 4 pixels in from both edges (inside an 8×8 marker at 1/2 scale), is red.
    static func redCorners(_ image: Image) -> [Corner] {
        let frame = image.frames[0]
        func isRed(_ x: Int, _ y: Int) -> Bool {
            let index = y * frame.bytesPerRow + x * 4
            return frame.pixels[index] > 200 && frame.pixels[index + 1] < 60 && frame.pixels[index + 2] < 60
        }
        let inset = max(1, min(frame.width, frame.height) / 8)
        let (right, bottom) = (frame.width - 1 - inset, frame.height - 1 - inset)
        let probes: [(Corner, Int, Int)] = [
            (.topLeft, inset, inset), (.topRight, right, inset), (.bottomLeft, inset, bottom),
            (.bottomRight, right, bottom),
        ]
        return probes.filter { isRed($0.1, $0.2) }.map(\.0)
    }

    @Test(
        "The decoded image is upright, its sizes too, and the file's orientation is kept",
        arguments: [
            ("jpeg-exif-1.jpg", 1), ("jpeg-exif-2.jpg", 2), ("jpeg-exif-3.jpg", 3), ("jpeg-exif-4.jpg", 4),
            ("jpeg-exif-5.jpg", 5), ("jpeg-exif-6.jpg", 6), ("jpeg-exif-7.jpg", 7), ("jpeg-exif-8.jpg", 8),
            ("jpeg-xmp-8.jpg", 8), ("jpeg-exif-6-xmp-3.jpg", 6), ("webp-exif-6.webp", 6), ("webp-xmp-7.webp", 7),
            ("png-exif-5.png", 5), ("png-xmp-6.png", 6), ("avif-irot1.avif", 8), ("avif-irot1-imir1.avif", 7),
        ])
    func upright(_ name: String, _ orientation: Int) throws {
        let data = try Self.data(name)
        let image = try ImageDecoderRegistry.shared.decode(data)
        let turned = orientation >= 5
        #expect(image.width == (turned ? 32 : 48) && image.height == (turned ? 48 : 32))
        #expect(image.originalWidth == image.width && image.originalHeight == image.height)
        #expect(image.frames[0].width == image.width && image.frames[0].height == image.height)
        #expect(image.exifOrientation == 1)
        #expect(image.fileOrientation == orientation)
        #expect(Self.redCorners(image) == [Self.markerCorner[orientation]])

        var preserve = ImageDecodingOptions()
        preserve.preserveOrientation = true
        let stored = try ImageDecoderRegistry.shared.decode(data, options: preserve)
        #expect(stored.width == 48 && stored.height == 32)
        #expect(stored.exifOrientation == orientation && stored.fileOrientation == orientation)
        #expect(Self.redCorners(stored) == [.topLeft])
        // The transformer turns a preserved image the same way the decoder does.
        let later = try ImageTransformer.applyOrientation.transform(stored)
        #expect(later.width == image.width && later.height == image.height)
        #expect(Self.redCorners(later) == Self.redCorners(image))
    }

    @Test(
        "A thumbnail box describes the upright image",
        arguments: ["jpeg-exif-6.jpg", "png-exif-5.png", "webp-exif-6.webp", "avif-irot1.avif"])
    func thumbnailUpright(_ name: String) throws {
        // Upright the picture is 32×48; inside 16×24 it is exactly 16×24 (stored-size fitting would give 11×16).
        let options = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 16, height: 24))
        let image = try ImageDecoderRegistry.shared.decode(try Self.data(name), options: options)
        #expect(image.width == 16 && image.height == 24)
        #expect(image.originalWidth == 32 && image.originalHeight == 48)
        #expect(Self.redCorners(image).count == 1)
        let scaled = ImageDecodingOptions(scaleDownLargeImages: true, scaleDownLimitBytes: 16 * 24 * 4)
        let small = try ImageDecoderRegistry.shared.decode(try Self.data(name), options: scaled)
        #expect(small.width * small.height <= 16 * 24 && small.height > small.width)
    }

    @Test("Progressive PNG and WebP decoders end with the same upright image as a one-shot decode")
    func incrementalUpright() throws {
        for name in ["png-exif-5.png", "png-xmp-6.png", "webp-exif-6.webp"] {
            let data = try Self.data(name)
            let oneShot = try ImageDecoderRegistry.shared.decode(data)
            let decoder = try #require(ImageDecoderRegistry.shared.decoder(for: data))
            let incremental = decoder.makeIncrementalDecoder(options: .default)
            _ = incremental.decodePartial(data.prefix(data.count / 2))
            let final = try incremental.decodeFinal(data)
            #expect(final.width == oneShot.width && final.height == oneShot.height, "\(name)")
            #expect(final.frames[0].pixels == oneShot.frames[0].pixels, "\(name)")
            #expect(final.exifOrientation == 1 && final.fileOrientation == oneShot.fileOrientation, "\(name)")
        }
    }

    @Test("XMP counts only when EXIF has no orientation, as an attribute or an element")
    func xmpParsing() {
        #expect(EXIFOrientation.fromXMP(Data(#"<x tiff:Orientation="3"/>"#.utf8)) == 3)
        #expect(EXIFOrientation.fromXMP(Data("<tiff:Orientation>8</tiff:Orientation>".utf8)) == 8)
        #expect(EXIFOrientation.fromXMP(Data(#"<x tiff:Orientation="9"/>"#.utf8)) == nil)
        #expect(EXIFOrientation.fromXMP(Data("no orientation".utf8)) == nil)
        #expect(EXIFOrientation.fromXMP(Data("tiff:Orientation".utf8)) == nil)
    }

    /// `png` with an `iTXt` XMP chunk of `packet` compressed with zlib (compression flag 1, method 0, as
    /// exiftool and Pillow's `add_itxt(…, zip=True)` write it) in place of its own `iTXt` chunks, before `IDAT`.
    static func withCompressedXMP(_ png: Data, packet: Data) throws -> Data {
        var compressed = [UInt8](repeating: 0, count: Int(compressBound(uLong(packet.count))))
        var length = uLongf(compressed.count)
        let status = packet.withUnsafeBytes { source in
            compress2(
                &compressed, &length, source.baseAddress?.assumingMemoryBound(to: Bytef.self), uLong(packet.count), 9)
        }
        try #require(status == Z_OK)
        compressed.removeSubrange(Int(length)...)
        func bigEndian(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        // Keyword, NUL, compression flag 1, method 0, empty language tag and translated keyword, the stream.
        let body = Array("iTXt".utf8) + Array("XML:com.adobe.xmp".utf8) + [0, 1, 0, 0, 0] + compressed
        let crc = body.withUnsafeBufferPointer { crc32(0, $0.baseAddress, uInt($0.count)) }
        let chunk = bigEndian(body.count - 4) + body + bigEndian(Int(crc))
        let bytes = [UInt8](png)
        var output = Array(bytes[0..<8])
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            if type == "IDAT", !output.contains(chunk) { output += chunk }
            if type != "iTXt" { output += bytes[offset..<(offset + 12 + length)] }
            offset += 12 + length
        }
        return Data(output)
    }

    static func xmp(_ orientation: Int, padding: Int = 0) -> Data {
        Data(
            (#"<x:xmpmeta xmlns:x="adobe:ns:meta/">"# + String(repeating: " ", count: padding)
                + #"<rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="\#(orientation)"/>"#
                + "</x:xmpmeta>").utf8)
    }

    @Test("A PNG's zlib-compressed XMP packet gives the orientation; a bad or oversized one is ignored")
    func compressedPNGXMP() throws {
        let png = try Self.data("png-xmp-6.png")
        let three = try Self.withCompressedXMP(png, packet: Self.xmp(3))
        #expect(EXIFOrientation.fromPNG(png) == 6)
        #expect(EXIFOrientation.fromPNG(three) == 3)
        let image = try ImageDecoderRegistry.shared.decode(three)
        #expect(image.width == 48 && image.height == 32 && image.fileOrientation == 3)
        #expect(Self.redCorners(image) == [.bottomRight])
        let seven = try ImageDecoderRegistry.shared.decode(try Self.withCompressedXMP(png, packet: Self.xmp(7)))
        #expect(seven.width == 32 && seven.height == 48 && Self.redCorners(seven) == [.bottomRight])

        // A stream cut short, and one that inflates past the 4 MiB an XMP packet may take: no orientation,
        // the image still decodes.
        var cut = [UInt8](three)
        let at = try #require(cut.indices.firstIndex { cut[$0...].starts(with: Array("iTXt".utf8)) })
        cut[at + 4 + 17 + 5 + 6] ^= 0xFF  // a byte of the deflate data
        let broken = try ImageDecoderRegistry.shared.decode(Data(cut))
        #expect(broken.fileOrientation == 1 && broken.width == 48)
        let big = try Self.withCompressedXMP(png, packet: Self.xmp(6, padding: 5 << 20))
        #expect(big.count < png.count + 10_000)
        #expect(EXIFOrientation.fromPNG(big) == 1)
        #expect(try ImageDecoderRegistry.shared.decode(big).fileOrientation == 1)
    }
}
