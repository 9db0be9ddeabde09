import Foundation
import TestSupport
import Testing

@testable import WebImage
@testable import WebImageCodecs

/// ICC profiles in and out: oversized ones are ignored, the profile caches are bounded by bytes, PNG keeps
/// a preserved profile, JPEG refuses one that needs more than 255 APP2 markers, and commands that decode
/// local files do so under the downloads' memory budget.
@Suite(.timeLimit(.minutes(3))) struct ColorProfileLimitTests {
    /// Display P3 (a real RGB profile LittleCMS converts from) grown to `size` bytes with zeros after its
    /// tags, its header's size field saying so; `marker` changes the last byte so two sizes can differ.
    static func paddedP3(size: Int, marker: UInt8 = 0) throws -> Data {
        var bytes = [UInt8](try PipelineFixtures.data("display-p3.icc"))
        bytes += [UInt8](repeating: 0, count: size - bytes.count)
        bytes[size - 1] = marker
        for index in 0..<4 { bytes[index] = UInt8(size >> (24 - 8 * index) & 0xFF) }
        return Data(bytes)
    }

    /// 8×8 of orange, teal and violet stripes: colours inside both gamuts, which a P3 → sRGB conversion
    /// visibly changes (saturated primaries would clip to themselves).
    static let stripes: ImageFrame = {
        var pixels: [UInt8] = []
        for index in 0..<64 { pixels += [[200, 100, 50, 255], [40, 160, 150, 255], [120, 60, 190, 255]][index % 3] }
        return ImageFrame(width: 8, height: 8, bytesPerRow: 32, pixels: pixels)
    }()

    static func image(profile: Data?) -> Image {
        Image(format: .png, width: 8, height: 8, frames: [stripes], iccProfile: profile)
    }

    @Test("A profile over maximumColorProfileBytes is ignored: the pixels stay as stored")
    func oversizedProfileIgnored() throws {
        let profile = try Self.paddedP3(size: 5 << 20)
        let png = try PNGEncoder().encode(Self.image(profile: profile))
        let stored = try PNGDecoder().decode(png, options: .default)
        #expect(stored.frames[0].pixels.elementsEqual(Self.stripes.pixels), "the 5 MiB profile was applied")
        var preserve = ImageDecodingOptions()
        preserve.colorSpace = .preserve
        #expect(try PNGDecoder().decode(png, options: preserve).iccProfile == nil)
        // The same profile within a raised limit is used: the limit is what kept it out.
        var raised = ImageDecodingOptions()
        raised.maximumColorProfileBytes = 8 << 20
        #expect(
            try PNGDecoder().decode(png, options: raised).frames[0].pixels.elementsEqual(Self.stripes.pixels) == false)
        #expect(ImageDownloaderConfig().maximumColorProfileBytes == 4 << 20)
    }

    @Test("The profile caches hold at most 8 MiB of profiles, however many large ones pass through")
    func profileCachesBoundedByBytes() throws {
        for marker in 0..<12 {
            var image = Self.image(profile: nil)
            ColorManagement.apply(
                .icc(try Self.paddedP3(size: 3 << 20, marker: UInt8(marker))), to: &image, options: .default)
            #expect(image.frames[0].pixels.elementsEqual(Self.stripes.pixels) == false, "profile \(marker) not applied")
            let held = ColorManagement.caches.withLock { $0.bytes }
            #expect(held <= ColorManagement.ProfileCache.byteLimit, "\(held) bytes held after profile \(marker)")
        }
        // The accounting itself: entries over the limit are dropped, one larger than it is never kept.
        var cache = ColorManagement.ProfileCache()
        for marker in 0..<5 { cache.rememberSRGB([UInt8](repeating: UInt8(marker), count: 3 << 20)) }
        #expect(cache.bytes <= ColorManagement.ProfileCache.byteLimit && cache.bytes >= 3 << 20)
        #expect(cache.srgb.count == cache.bytes / (3 << 20))
        cache.rememberSRGB([UInt8](repeating: 9, count: 9 << 20))
        #expect(!cache.knownSRGB([UInt8](repeating: 9, count: 9 << 20)))
    }

    @Test("PNG keeps a preserved profile in iCCP; webimage convert --keep-profile to PNG writes it")
    func pngWritesICCP() async throws {
        let p3 = try PipelineFixtures.data("display-p3.icc")
        var preserve = ImageDecodingOptions()
        preserve.colorSpace = .preserve
        let source = try ImageDecoderRegistry.shared.decode(
            try PipelineFixtures.data("coffee-p3.jpg"), options: preserve)
        #expect(source.iccProfile == p3)
        let png = try PNGEncoder().encode(source)
        let again = try PNGDecoder().decode(png, options: preserve)
        #expect(again.iccProfile == p3)
        #expect(again.frames[0].pixels == source.frames[0].pixels)
        #expect(
            try PNGDecoder().decode(try PNGEncoder(embedsICCProfile: false).encode(source), options: preserve)
                .iccProfile == nil)

        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("kept.png")
        let input = PipelineFixtures.directory.appendingPathComponent("coffee-p3.jpg").path
        let run = try await CLIRunner.run("webimage", ["convert", input, output.path, "--keep-profile"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try PNGDecoder().decode(try Data(contentsOf: output), options: preserve).iccProfile == p3)
    }

    @Test("JPEG refuses a profile that needs more than 255 APP2 markers instead of writing an unreadable file")
    func jpegRefusesProfileOverAPP2Limit() throws {
        let fits = try Self.paddedP3(size: JPEGEncoder.maximumICCProfileBytes)
        let jpeg = try JPEGEncoder().encode(Self.image(profile: fits))
        var preserve = ImageDecodingOptions()
        preserve.colorSpace = .preserve
        preserve.maximumColorProfileBytes = 32 << 20
        #expect(try JPEGDecoder().decode(jpeg, options: preserve).iccProfile == fits)

        let tooLarge = try Self.paddedP3(size: JPEGEncoder.maximumICCProfileBytes + 1)
        let error = #expect(throws: ImageCodecError.self) { try JPEGEncoder().encode(Self.image(profile: tooLarge)) }
        #expect(error?.message.contains("255 APP2 markers") == true, "\(String(describing: error))")
        #expect(try JPEGEncoder(embedsICCProfile: false).encode(Self.image(profile: tooLarge)).count > 0)
    }

    @Test("webimage info decodes a local file under the downloads' budget: a 5.7 KB JPEG XL of 12000² is refused")
    func infoHasABudget() async throws {
        let file = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/hostile/declares-12000x12000.jxl")
        #expect(try Data(contentsOf: file).count < 6_000)
        let run = try await CLIRunner.run("webimage", ["info", file.path])
        #expect(!run.signalled)
        #expect(run.status == 1)
        #expect(run.stderr.contains("badImageData") && run.stderr.contains("maximumDecodeMemory"), "\(run.stderr)")
        print("info on a 12000² JPEG XL: peak RSS \(run.peakRSSKiB / 1024) MB")
    }
}
