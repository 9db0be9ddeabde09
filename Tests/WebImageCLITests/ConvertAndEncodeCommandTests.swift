import Foundation
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// `webimage convert` and `get -o --thumbnail --fit --format --quality`, run as built.
@Suite("webimage convert and get --format", .timeLimit(.minutes(5)))
struct ConvertAndEncodeCommandTests {
    @Test func getWritesResizedEncodedFiles() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = try await CLIRunner.run(
            "webimage",
            [
                "get", "-o", folder.path, "--thumbnail", "64x64", "--fit", "fill", "--format", "jpeg", "--quality",
                "85", server.url("/files/horse-rgba.png").absoluteString,
                server.url("/files/astronaut-36mp.jpg").absoluteString,
            ])
        #expect(output.status == 0, "\(output.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(files == ["astronaut-36mp.jpg", "horse-rgba.jpg"])
        for file in files {
            let data = try Data(contentsOf: folder.appendingPathComponent(file))
            #expect(ImageFormat.detect(data) == .jpeg)
            let image = try JPEGDecoder().decode(data, options: .default)
            #expect(image.width == 64 && image.height == 64, "\(file)")
        }
    }

    @Test func convertPicksTheFormatFromTheNameAndResizes() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = PipelineFixtures.directory.appendingPathComponent("coffee.avif").path
        let webp = folder.appendingPathComponent("coffee.webp").path
        let first = try await CLIRunner.run("webimage", ["convert", source, webp, "--thumbnail", "150x150"])
        #expect(first.status == 0, "\(first.stderr)")
        let image = try WebPDecoder().decode(try Data(contentsOf: URL(fileURLWithPath: webp)), options: .default)
        #expect(image.width == 150 && image.height == 100)

        let again = try await CLIRunner.run("webimage", ["convert", source, webp])
        #expect(again.status == 1)
        #expect(again.stderr.contains("exists"))
        let forced = try await CLIRunner.run("webimage", ["convert", source, webp, "--force", "--quality", "50"])
        #expect(forced.status == 0, "\(forced.stderr)")

        let jpeg = folder.appendingPathComponent("p3.jpg").path
        let p3 = PipelineFixtures.directory.appendingPathComponent("coffee-p3.png").path
        #expect(try await CLIRunner.run("webimage", ["convert", p3, jpeg, "--keep-profile"]).status == 0)
        var options = ImageDecodingOptions()
        options.colorSpace = .preserve
        let kept = try JPEGDecoder().decode(try Data(contentsOf: URL(fileURLWithPath: jpeg)), options: options)
        #expect(kept.iccProfile == (try PipelineFixtures.data("display-p3.icc")))
    }

    @Test(
        "--thumbnail sizes from the file's own size, as serve does: 640×427 in 300×300 is 300×200 for each fit",
        arguments: [("fit", 300, 200), ("longest", 300, 200), ("fill", 300, 300), ("pad", 300, 300)])
    func thumbnailRoundsAsImgproxy(fit: String, width: Int, height: Int) async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Decoded shrunk on load (libjpeg's 1/2 scale, 320×214), it was fitted as 300×201 from that size.
        let source = Fixtures.corpusImages.appendingPathComponent("rocket-cmyk.jpg").path
        let output = folder.appendingPathComponent("thumb.png").path
        let run = try await CLIRunner.run(
            "webimage", ["convert", source, output, "--thumbnail", "300x300", "--fit", fit])
        #expect(run.status == 0, "\(run.stderr)")
        let image = try PNGDecoder().decode(try Data(contentsOf: URL(fileURLWithPath: output)), options: .default)
        #expect(image.width == width && image.height == height, "--fit \(fit): \(image.width)×\(image.height)")
        #expect(run.stdout.contains("640x427"), "\(run.stdout)")
        if fit == "pad" {
            // The fitted 300×200 sits on the 300×300 canvas: transparent rows above and below it, none inside.
            let rows = (0..<300).filter { row in
                image.frames[0].pixels[row * image.frames[0].bytesPerRow + 600 + 3] == 255
            }
            #expect(rows.count == 200, "\(rows.count) opaque rows")
        }
    }

    @Test(
        "refuses what it cannot do",
        arguments: [
            (["convert", "a.png", "b.tiff"], "cannot tell the output format"),
            (["convert", "a.png", "b.jpg", "--quality", "0"], "--quality must be between 1 and 100"),
            (["convert", "a.png", "b.png", "--quality", "50"], "--quality needs --format jpeg, webp or avif"),
            (["convert", "a.png", "b.jpg", "--fit", "fill"], "--fit needs --thumbnail WxH"),
            (["get", "--format", "jpeg", "http://127.0.0.1:1/a.png"], "--format needs -o DIR"),
        ])
    func refuses(arguments: [String], message: String) async throws {
        let output = try await CLIRunner.run("webimage", arguments)
        #expect(output.status == 64)
        #expect(output.stderr.contains(message), "\(output.stderr)")
    }
}

extension ConvertAndEncodeCommandTests {
    @Test func convertKeepsAnAnimationAsAPNG() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = try Fixtures.requireCorpus().appendingPathComponent("chelsea-animated.gif").path
        let target = folder.appendingPathComponent("small.png").path
        let run = try await CLIRunner.run(
            "webimage", ["convert", source, target, "--format", "apng", "--thumbnail", "100x100"])
        #expect(run.status == 0, "\(run.stderr)")
        let image = try PNGDecoder().decode(try Data(contentsOf: URL(fileURLWithPath: target)), options: .default)
        #expect(image.format == .png && image.width == 100 && image.height == 67)
        #expect(image.frameCount == 8 && image.frames.count == 8)
    }
}
