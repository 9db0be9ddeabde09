import CLCMS
import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// A CMYK JPEG XL (`Tests/Fixtures/pipeline/cmyk-alpha.jxl`, made by `tools/make-cmyk-jxl.c`): its black
/// extra channel is taken with the CMY colour channels through its CMYK profile, and its alpha is kept.
@Suite(.timeLimit(.minutes(2))) struct JXLCMYKDecodingTests {
    static let width = 64
    static let height = 48

    /// The fixture's inks (C, M, Y, K; 0 = none), as `make-cmyk-jxl.c`'s `inks()` writes them.
    static func inks(x: Int, y: Int) -> [UInt8] {
        [UInt8(x * 4), UInt8(y * 5), UInt8(255 - x * 4), UInt8((x + y) * 2)]
    }

    @Test(arguments: [ImageColorSpace.sRGB, .preserve])
    func blackAndTheColourChannelsGoThroughTheCMYKProfile(colorSpace: ImageColorSpace) throws {
        var raw: [UInt8] = []
        for y in 0..<Self.height {
            for x in 0..<Self.width { raw += Self.inks(x: x, y: y) }
        }
        let profile = try ColorManagementTests.openProfile(try PipelineFixtures.data("cmyk-test.icc"))
        defer { cmsCloseProfile(profile) }
        // libjxl's rendering is the profile's A2B0 table to sRGB without black point compensation: for this
        // version 4 profile (A2B0 only), LittleCMS's relative colorimetric transform.
        let expected = try ColorManagementTests.lcms(
            raw, from: profile, inputFormat: ColorManagementTests.cmyk8, intent: INTENT_RELATIVE_COLORIMETRIC)

        let image = try ColorManagementTests.decode("cmyk-alpha.jxl", colorSpace)
        #expect(image.format == .jxl && image.width == Self.width && image.height == Self.height)
        #expect(image.hasAlpha)
        // RGBA cannot hold CMYK: .preserve converts too, and keeps no profile.
        #expect(image.iccProfile == nil)
        let pixels = image.frames[0].pixels
        let difference = ColorManagementTests.maximumDifference(pixels, expected)
        #expect(difference <= 2, "differs from LittleCMS by \(difference) levels")
        // LittleCMS's perceptual transform (the CMYK JPEG path) compensates the black point: not this.
        let perceptual = try ColorManagementTests.lcms(raw, from: profile, inputFormat: ColorManagementTests.cmyk8)
        #expect(ColorManagementTests.maximumDifference(pixels, perceptual) > 4)
        // Alpha is the file's own (255 - x), straight.
        let alpha = (0..<Self.width * Self.height).map { pixels[$0 * 4 + 3] }
        #expect(alpha == (0..<Self.height).flatMap { _ in (0..<Self.width).map { UInt8(255 - $0) } })
    }

    @Test func aCMYKFileThatEndsEarlyIsPartialOrRefused() throws {
        let data = try PipelineFixtures.data("cmyk-alpha.jxl")
        for length in [16, 1000, data.count / 2, data.count - 8] {
            do {
                let image = try JXLDecoder().decode(data.prefix(length), options: .default)
                #expect(image.isPartial, "\(length) bytes")
                #expect(image.width == Self.width && image.height == Self.height)
            } catch let error as ImageCodecError {
                #expect(error.code == .badImageData, "\(length) bytes: \(error)")
            }
        }
    }

    @Test func withoutBlackTheColoursWouldBeFarOff() throws {
        // The same conversion with no black ink: the decode must differ from it where black is heavy, so
        // the test above could not pass with the black channel ignored.
        let profile = try ColorManagementTests.openProfile(try PipelineFixtures.data("cmyk-test.icc"))
        defer { cmsCloseProfile(profile) }
        let x = Self.width - 1
        let y = Self.height - 1
        var noBlack = Self.inks(x: x, y: y)
        noBlack[3] = 0
        let unblackened = try ColorManagementTests.lcms(noBlack, from: profile, inputFormat: ColorManagementTests.cmyk8)
        let image = try ColorManagementTests.decode("cmyk-alpha.jxl", .sRGB)
        let offset = (y * Self.width + x) * 4
        let decoded = Array(image.frames[0].pixels[offset..<offset + 3])
        #expect(zip(decoded, unblackened.prefix(3)).contains { abs(Int($0) - Int($1)) > 64 })
    }

    /// A CMYK profile whose A2B0 is a 2x2x2x2 table from inks to CIELAB: white paper (L* 100) with no ink,
    /// L* 25 wherever there is some. `version` 2 writes the table as `mft2`, in version 2's 16-bit CIELAB
    /// words (L* 100 = 0xFF00, a* and b* 0 = 0x8000), version 4 as `mAB `.
    static func twoByTwoProfile(version: Double) throws -> Data {
        let profile = try #require(cmsCreateProfilePlaceholder(nil))
        defer { cmsCloseProfile(profile) }
        cmsSetProfileVersion(profile, version)
        cmsSetDeviceClass(profile, cmsSigOutputClass)
        cmsSetColorSpace(profile, cmsSigCmykData)
        cmsSetPCS(profile, cmsSigLabData)
        // LittleCMS's own 16-bit CIELAB for version 4 (L* 100 = 0xFFFF); version 2's words for mft2.
        let paper: [UInt16] = version < 4 ? [0xFF00, 0x8000, 0x8000] : [0xFFFF, 0x8080, 0x8080]
        let ink: [UInt16] = version < 4 ? [0x4000, 0x8000, 0x8000] : [0x4040, 0x8080, 0x8080]
        let table = paper + (1..<16).flatMap { _ in ink }
        let lut = try #require(cmsPipelineAlloc(nil, 4, 3))
        defer { cmsPipelineFree(lut) }
        if version >= 4 {
            // A-curves, CLUT, B-curves: the shortest stage list a v4 lutAtoBType takes.
            cmsPipelineInsertStage(lut, cmsAT_END, cmsStageAllocToneCurves(nil, 4, nil))
        }
        let clut = try #require(table.withUnsafeBufferPointer { cmsStageAllocCLut16bit(nil, 2, 4, 3, $0.baseAddress) })
        cmsPipelineInsertStage(lut, cmsAT_END, clut)
        if version >= 4 { cmsPipelineInsertStage(lut, cmsAT_END, cmsStageAllocToneCurves(nil, 3, nil)) }
        #expect(cmsWriteTag(profile, cmsSigAToB0Tag, UnsafeRawPointer(lut)) != 0)
        var size: UInt32 = 0
        #expect(cmsSaveProfileToMem(profile, nil, &size) != 0)
        var bytes = [UInt8](repeating: 0, count: Int(size))
        #expect(cmsSaveProfileToMem(profile, &bytes, &size) != 0)
        return Data(bytes)
    }

    @Test func aVersion2TablesCIELABIsReadAsLibjxlReadsIt() throws {
        // libjxl renders the paper of U.S. Web Coated (SWOP) v2, whose table holds L* 100 in version 2's
        // words, as (253, 254, 255) (jxl/cmyk_layers' ref.png); LittleCMS, reading the words as version 2
        // defines them, as (255, 255, 255).
        let legacy = try Self.twoByTwoProfile(version: 2.1)
        var asLibjxl: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 255]  // no ink; full black
        var asLittleCMS = asLibjxl
        #expect(ColorManagement.convertCMYKAsLibjxl(&asLibjxl, profileData: legacy))
        #expect(ColorManagement.convertCMYK(&asLittleCMS, profileData: legacy))
        #expect(Array(asLibjxl[0..<4]) == [253, 254, 255, 255], "\(asLibjxl)")
        #expect(Array(asLittleCMS[0..<4]) == [255, 255, 255, 255], "\(asLittleCMS)")
        // Ink: L* 25.1 (0x4000 in version 2's words) read as L* 25.0 with a* and b* -0.5: sRGB (58.2, 59.6,
        // 60.0) rather than LittleCMS's neutral 59.5.
        #expect(ColorManagementTests.maximumDifference(Array(asLibjxl[4..<8]), [58, 60, 60, 255]) <= 1, "\(asLibjxl)")
        #expect(asLibjxl[4] < asLibjxl[6])

        // A version 4 table has one encoding: both read it alike.
        let current = try Self.twoByTwoProfile(version: 4.3)
        var paper: [UInt8] = [0, 0, 0, 0]
        #expect(ColorManagement.convertCMYKAsLibjxl(&paper, profileData: current))
        #expect(paper == [255, 255, 255, 255])
    }
}
