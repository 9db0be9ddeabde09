import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `strip_metadata` (`sm`) and `keep_copyright` (`kcr`) through `webimage serve` run as a child process on
/// 127.0.0.1, from a JPEG whose EXIF names a camera, an artist and a copyright and says orientation 6.
@Suite("webimage serve: strip_metadata and keep_copyright", .timeLimit(.minutes(5)))
struct ServeMetadataTests {
    /// A 80×40 JPEG (stored sideways: orientation 6 shows it 40×80), left half red, right half blue, with
    /// `EXIFBlocks.camera()` in its APP1.
    static func source() throws -> Data {
        let pixels = (0..<(80 * 40)).flatMap { index -> [UInt8] in
            index % 80 < 40 ? [220, 20, 20, 255] : [20, 20, 220, 255]
        }
        let image = Image(
            format: .jpeg, width: 80, height: 40,
            frames: [ImageFrame(width: 80, height: 40, bytesPerRow: 320, pixels: pixels)])
        return try JPEGEncoder(quality: 95, exif: Data("Exif\0\0".utf8) + EXIFBlocks.camera()).encode(image)
    }

    static func contains(_ data: Data, _ text: String) -> Bool { data.range(of: Data(text.utf8)) != nil }

    @Test("sm:0 keeps the EXIF upright, the default keeps artist and copyright only, kcr:0 keeps nothing")
    func metadata() async throws {
        let origin = try Fixtures.server()
        origin.setFile(name: "camera.jpg", data: try Self.source())
        let serve = try await ServeProcess.start(["--allow-unsigned", "--allow-destination", "127.0.0.0/8"])
        func get(_ options: String, _ ext: String) async throws -> Data {
            let reply = try await serve.get(
                "/insecure/\(options)/plain/\(origin.url("/files/camera.jpg").absoluteString)@\(ext)")
            #expect(reply.status == 200, "\(options)@\(ext)")
            return reply.body
        }
        for ext in ["jpg", "png", "webp"] {
            let format: ImageFormat = ext == "jpg" ? .jpeg : ext == "png" ? .png : .webp
            let kept = try await get("rs:fit:50:50/sm:0", ext)
            let exif = try #require(EXIFMetadata.block(in: kept, format: format), "\(ext)")
            #expect(Self.contains(exif, "Camera") && Self.contains(exif, "(c) 2026 Studio"), "\(ext)")
            // Upright pixels, so orientation 1: turned from 80×40 to 40×80, fitted to 25×50, red on top.
            let image = try ImageDecoderRegistry.shared.decode(kept, options: .default)
            #expect(image.width == 25 && image.height == 50 && image.fileOrientation == 1, "\(ext)")
            let top = Array(image.frames[0].pixels[(2 * image.width + 12) * 4..<(2 * image.width + 12) * 4 + 3])
            let bottom = Array(image.frames[0].pixels[(47 * image.width + 12) * 4..<(47 * image.width + 12) * 4 + 3])
            #expect(top[0] > 150 && top[2] < 100 && bottom[2] > 150 && bottom[0] < 100, "\(ext): \(top) \(bottom)")

            let stripped = try await get("rs:fit:50:50", ext)
            let copyright = try #require(EXIFMetadata.block(in: stripped, format: format), "\(ext)")
            #expect(Self.contains(copyright, "(c) 2026 Studio") && Self.contains(copyright, "Ann Artist"))
            #expect(!Self.contains(stripped, "Camera"), "\(ext)")
            let none = try await get("rs:fit:50:50/kcr:0", ext)
            #expect(EXIFMetadata.block(in: none, format: format) == nil, "\(ext)")
            #expect(!Self.contains(none, "Ann Artist") && !Self.contains(none, "Camera"), "\(ext)")
        }
        // AVIF results carry no EXIF (README says so).
        #expect(!Self.contains(try await get("rs:fit:50:50/sm:0", "avif"), "Camera"))
        #expect(await serve.stop() == 0)
        origin.shutdown()
    }
}
