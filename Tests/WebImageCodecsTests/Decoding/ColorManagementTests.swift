import CJPEG
import CLCMS
import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// Colour management against LittleCMS driven directly from the test: the pixels a file stores (decoded
/// with `.preserve`, or read raw for CMYK) go through a transform the test builds itself, and the
/// decoder's `.sRGB` output must agree within 2 levels.
@Suite(.timeLimit(.minutes(2))) struct ColorManagementTests {
    static let p3Files = ["coffee-p3.jpg", "coffee-p3.png", "coffee-p3.webp", "coffee-p3.avif", "coffee-p3.jxl"]

    /// TYPE_RGBA_8, TYPE_CMYK_8 (LittleCMS's macros, which Swift does not import).
    static let rgba8 = UInt32(PT_RGB) << 16 | 1 << 7 | 3 << 3 | 1
    static let cmyk8 = UInt32(PT_CMYK) << 16 | 4 << 3 | 1

    /// Runs `pixels` (4 bytes a pixel) through a LittleCMS transform from `profile` to sRGB (perceptual
    /// unless `intent` says otherwise).
    static func lcms(
        _ pixels: [UInt8], from profile: cmsHPROFILE, inputFormat: UInt32, intent: Int32 = INTENT_PERCEPTUAL
    ) throws -> [UInt8] {
        let srgb = cmsCreate_sRGBProfile()
        defer { cmsCloseProfile(srgb) }
        let transform = try #require(
            cmsCreateTransform(profile, inputFormat, srgb, rgba8, UInt32(intent), UInt32(cmsFLAGS_NOCACHE)))
        defer { cmsDeleteTransform(transform) }
        var output = [UInt8](repeating: 255, count: pixels.count)
        pixels.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                cmsDoTransform(transform, input.baseAddress, out.baseAddress, UInt32(pixels.count / 4))
            }
        }
        return output
    }

    static func openProfile(_ data: Data) throws -> cmsHPROFILE {
        try #require(data.withUnsafeBytes { cmsOpenProfileFromMem($0.baseAddress, UInt32($0.count)) })
    }

    /// The largest difference between two RGBA bitmaps over the colour channels.
    static func maximumDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var worst = 0
        for index in a.indices where index % 4 != 3 { worst = max(worst, abs(Int(a[index]) - Int(b[index]))) }
        return worst
    }

    /// Checks that `converted` is `stored` run through `profile` by LittleCMS (within 2 levels), and that
    /// the conversion moved some colour by more than 8 levels (it did something).
    static func expectConverted(
        _ converted: Image, from stored: Image, through profile: cmsHPROFILE, _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let expected = try lcms(stored.frames[0].pixels, from: profile, inputFormat: rgba8)
        let difference = maximumDifference(converted.frames[0].pixels, expected)
        #expect(
            difference <= 2, "\(label): differs from LittleCMS by \(difference) levels", sourceLocation: sourceLocation)
        #expect(
            maximumDifference(converted.frames[0].pixels, stored.frames[0].pixels) > 8, "\(label): nothing moved",
            sourceLocation: sourceLocation)
    }

    static func decode(_ file: String, _ colorSpace: ImageColorSpace) throws -> Image {
        var options = ImageDecodingOptions()
        options.colorSpace = colorSpace
        return try ImageDecoderRegistry.shared.decode(PipelineFixtures.data(file), options: options)
    }

    @Test(arguments: p3Files)
    func aDisplayP3ProfileIsConvertedToSRGB(file: String) throws {
        let profileData = try PipelineFixtures.data("display-p3.icc")
        let stored = try Self.decode(file, .preserve)
        let converted = try Self.decode(file, .sRGB)
        #expect(stored.iccProfile != nil)
        #expect(converted.iccProfile == nil)
        // The profile kept is the file's (JPEG XL hands back libjxl's description of the same space).
        if !file.hasSuffix(".jxl") { #expect(stored.iccProfile == profileData) }

        let kept = try #require(stored.iccProfile)
        let profile = try Self.openProfile(kept)
        defer { cmsCloseProfile(profile) }
        try Self.expectConverted(converted, from: stored, through: profile, file)
    }

    @Test func anAVIFDescribedByCICPIsConverted() throws {
        // The P3 pixels of coffee-p3.png, labelled with nclx 12/13 (Display P3, sRGB curve) instead of a profile.
        let stored = try Self.decode("coffee-p3-nclx.avif", .preserve)
        let converted = try Self.decode("coffee-p3-nclx.avif", .sRGB)
        #expect(converted.iccProfile == nil)
        let synthesized = try #require(stored.iccProfile)  // LittleCMS's description of the CICP space
        #expect(ColorManagement.Profile(synthesized).map { !$0.isSRGB } == true)
        let profile = try Self.openProfile(try PipelineFixtures.data("display-p3.icc"))
        defer { cmsCloseProfile(profile) }
        try Self.expectConverted(converted, from: stored, through: profile, "nclx")
        // Plain sRGB CICP (the other AVIF fixtures) is left alone.
        #expect(try Self.decode("coffee.avif", .preserve).iccProfile == nil)
    }

    @Test(arguments: ["cmyk-plain.jpg", "cmyk-adobe.jpg"])
    func aCMYKJPEGGoesThroughItsProfile(file: String) throws {
        let data = try PipelineFixtures.data(file)
        let raw = try Self.rawCMYK(data)
        let profile = try Self.openProfile(try PipelineFixtures.data("cmyk-test.icc"))
        defer { cmsCloseProfile(profile) }
        let expected = try Self.lcms(raw, from: profile, inputFormat: Self.cmyk8)

        let image = try Self.decode(file, .sRGB)
        #expect(image.width == 256 && image.height == 192)
        let difference = Self.maximumDifference(image.frames[0].pixels, expected)
        #expect(difference <= 2, "\(file): differs from LittleCMS by \(difference) levels")
        #expect(image.frames[0].pixels.enumerated().allSatisfy { $0.offset % 4 != 3 || $0.element == 255 })
        // RGBA cannot hold CMYK: .preserve converts too, and keeps no profile.
        let preserved = try Self.decode(file, .preserve)
        #expect(preserved.iccProfile == nil)
        #expect(preserved.frames[0].pixels == image.frames[0].pixels)
    }

    @Test func plainAndAdobeCMYKGiveTheSameColours() throws {
        let plain = try Self.decode("cmyk-plain.jpg", .sRGB)
        let adobe = try Self.decode("cmyk-adobe.jpg", .sRGB)
        #expect(Self.maximumDifference(plain.frames[0].pixels, adobe.frames[0].pixels) <= 2)
    }

    @Test func gammaAndChromaticitiesWithoutAProfileAreHonoured() throws {
        let stored = try Self.decode("coffee-gamma18-p3chrm.png", .preserve)
        let converted = try Self.decode("coffee-gamma18-p3chrm.png", .sRGB)
        // The stored samples are the source photo's, untouched.
        let source = try DecodingCorpus.data("coffee-rgb.png")
        #expect(stored.frames[0].pixels == (try PNGDecoder().decode(source, options: .default)).frames[0].pixels)
        #expect(stored.iccProfile == nil)

        // The test's own profile for gAMA 1/1.8 and cHRM (the P3 primaries, D65).
        var white = cmsCIExyY(x: 0.3127, y: 0.3290, Y: 1)
        var primaries = cmsCIExyYTRIPLE(
            Red: cmsCIExyY(x: 0.680, y: 0.320, Y: 1), Green: cmsCIExyY(x: 0.265, y: 0.690, Y: 1),
            Blue: cmsCIExyY(x: 0.150, y: 0.060, Y: 1))
        let curve = try #require(cmsBuildGamma(nil, 1.8))
        defer { cmsFreeToneCurve(curve) }
        var curves: [OpaquePointer?] = [curve, curve, curve]
        let profile = try #require(cmsCreateRGBProfile(&white, &primaries, &curves))
        defer { cmsCloseProfile(profile) }
        try Self.expectConverted(converted, from: stored, through: profile, "gAMA/cHRM")
    }

    @Test func anSRGBProfileUnderAnotherNameChangesNothing() throws {
        let converted = try Self.decode("coffee-srgb-profile.png", .sRGB)
        let preserved = try Self.decode("coffee-srgb-profile.png", .preserve)
        #expect(converted.frames[0].pixels == preserved.frames[0].pixels)
        #expect(preserved.iccProfile != nil)
        let kept = try #require(preserved.iccProfile)
        let profile = try #require(ColorManagement.Profile(kept))
        #expect(profile.isSRGB)
        let p3 = try #require(ColorManagement.Profile(try PipelineFixtures.data("display-p3.icc")))
        #expect(!p3.isSRGB)
    }

    @Test("a PNG's cICP chunk is converted as its ICC twin, comes before the other colour chunks, is for RGB only")
    func aPNGCICPChunk() throws {
        func largestDifference(_ a: Image, _ b: Image) -> Int {
            zip(a.frames[0].pixels, b.frames[0].pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
        }
        let png = [UInt8](try PipelineFixtures.data("coffee-p3.png"))
        let iccp = try #require(Self.chunk("iCCP", in: png))
        let viaProfile = try Self.decode("coffee-p3.png", .sRGB)
        let stored = try Self.decode("coffee-p3.png", .preserve)
        // Display P3 (primaries 12) with sRGB's curve (transfer 13) in the profile's place.
        let p3 = Data(Self.replaceChunk(png, at: iccp, type: "cICP", payload: [12, 13, 0, 1]))
        #expect(PNGDecoder.cicp(in: p3).map { "\($0)" } == "cicp(primaries: 12, transfer: 13)")
        let viaCICP = try ImageDecoderRegistry.shared.decode(p3)
        #expect(largestDifference(viaCICP, viaProfile) <= 2)
        #expect(largestDifference(viaCICP, stored) > 4)
        var preserve = ImageDecodingOptions()
        preserve.colorSpace = .preserve
        let described = try ImageDecoderRegistry.shared.decode(p3, options: preserve)
        #expect(described.cicp == CICPDescription(colorPrimaries: 12, transferCharacteristics: 13))
        #expect(described.frames[0].pixels == stored.frames[0].pixels)
        // A cICP saying sRGB (primaries 1) ahead of the P3 profile wins: nothing is converted.
        let before = Chunk(start: iccp.start, data: iccp.start..<iccp.start, end: iccp.start)
        let srgbFirst = Data(Self.replaceChunk(png, at: before, type: "cICP", payload: [1, 13, 0, 1]))
        #expect(try ImageDecoderRegistry.shared.decode(srgbFirst).frames[0].pixels == stored.frames[0].pixels)
        // One for YCbCr (matrix coefficients 1) or narrow range is not for a PNG's RGB: the profile counts.
        for payload: [UInt8] in [[1, 13, 1, 1], [1, 13, 0, 0]] {
            let ignored = Data(Self.replaceChunk(png, at: before, type: "cICP", payload: payload))
            #expect(PNGDecoder.cicp(in: ignored) == nil)
            #expect(try ImageDecoderRegistry.shared.decode(ignored).frames[0].pixels == viaProfile.frames[0].pixels)
        }
    }

    @Test func aDamagedProfileLeavesThePixelsAsStored() throws {
        // The P3 PNG's iCCP replaced by garbage of the same length: libpng still reads it (the CRC is
        // recomputed), LittleCMS refuses it, the pixels stay as stored.
        var png = [UInt8](try PipelineFixtures.data("coffee-p3.png"))
        let iccp = try #require(Self.chunk("iCCP", in: png))
        let nameEnd = try #require(png[iccp.data].firstIndex(of: 0))
        // Keep the name, the compression byte, and a valid zlib stream of garbage.
        let garbage = Data(repeating: 0x41, count: 700)
        let compressed = try #require(Self.zlibStore(garbage))
        let payload = Array(png[iccp.data.lowerBound...nameEnd]) + [0] + compressed
        png = Self.replaceChunk(png, at: iccp, type: "iCCP", payload: payload)
        let converted = try ImageDecoderRegistry.shared.decode(Data(png))
        let stored = try Self.decode("coffee-p3.png", .preserve)
        #expect(converted.frames[0].pixels == stored.frames[0].pixels)
    }

    // MARK: Helpers

    /// The CMYK samples of a JPEG as ink amounts, read through the library's libjpeg shim.
    static func rawCMYK(_ data: Data) throws -> [UInt8] {
        try data.withUnsafeBytes { raw in
            let base = try #require(raw.baseAddress?.assumingMemoryBound(to: UInt8.self))
            let decoder = try #require(wi_jpeg_create(base, raw.count))
            defer { wi_jpeg_destroy(decoder) }
            var header = wi_jpeg_header()
            try #require(wi_jpeg_read_header(decoder, &header) == 0)
            wi_jpeg_set_raw_cmyk(decoder, 1)
            var pixels = [UInt8](repeating: 0, count: Int(header.width * header.height * 4))
            var rows: Int32 = 0
            let status = pixels.withUnsafeMutableBytes {
                wi_jpeg_decode(
                    decoder, 1, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int(header.width * 4),
                    header.width, header.height, &rows)
            }
            try #require(status == 0)
            return pixels
        }
    }

    struct Chunk {
        let start: Int
        let data: Range<Int>
        let end: Int
    }

    static func chunk(_ type: String, in png: [UInt8]) -> Chunk? {
        var offset = 8
        while offset + 12 <= png.count {
            let length = png[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let name = String(decoding: png[offset + 4..<offset + 8], as: UTF8.self)
            if name == type {
                return Chunk(start: offset, data: offset + 8..<offset + 8 + length, end: offset + 12 + length)
            }
            offset += 12 + length
        }
        return nil
    }

    static func replaceChunk(_ png: [UInt8], at chunk: Chunk, type: String, payload: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + payload
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in body {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        crc ^= 0xFFFF_FFFF
        func be(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        return Array(png[..<chunk.start]) + be(UInt32(payload.count)) + body + be(crc) + Array(png[chunk.end...])
    }

    /// `data` as a zlib stream of stored (uncompressed) blocks.
    static func zlibStore(_ data: Data) -> [UInt8]? {
        guard data.count < 65535 else { return nil }
        var out: [UInt8] = [0x78, 0x01, 0x01]
        let length = UInt16(data.count)
        out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)]
        out += data
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        let adler = b << 16 | a
        out += (0..<4).map { UInt8(truncatingIfNeeded: adler >> (24 - 8 * $0)) }
        return out
    }
}
