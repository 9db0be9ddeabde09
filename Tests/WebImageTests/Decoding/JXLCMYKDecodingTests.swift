import CLCMS
import Foundation
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
        let expected = try ColorManagementTests.lcms(raw, from: profile, inputFormat: ColorManagementTests.cmyk8)

        let image = try ColorManagementTests.decode("cmyk-alpha.jxl", colorSpace)
        #expect(image.format == .jxl && image.width == Self.width && image.height == Self.height)
        #expect(image.hasAlpha)
        // RGBA cannot hold CMYK: .preserve converts too, and keeps no profile.
        #expect(image.iccProfile == nil)
        let pixels = image.frames[0].pixels
        let difference = ColorManagementTests.maximumDifference(pixels, expected)
        #expect(difference <= 2, "differs from LittleCMS by \(difference) levels")
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
}
