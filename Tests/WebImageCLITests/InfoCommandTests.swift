import Foundation
import ServerTestSupport
import TestSupport
import Testing

/// `webimage info` on corpus files.
@Suite("webimage info", .timeLimit(.minutes(5)))
struct InfoCommandTests {
    @Test(
        "prints format, dimensions, frames, alpha, orientation and bytes",
        arguments: [
            ("astronaut-baseline.jpg", "jpeg", "512x512", 1, false, 1),
            ("horse-rgba.png", "png", "400x328", 1, true, 1),
            ("chelsea-animated.webp", "webp", "300x200", 8, false, 1),
            ("chelsea-animated.gif", "gif", "300x200", 8, false, 1),
            ("chelsea-exif-orientation6.jpg", "jpeg", "300x451", 1, false, 6),
        ])
    func fields(file: String, format: String, dimensions: String, frames: Int, alpha: Bool, orientation: Int)
        async throws
    {
        let path = try Fixtures.requireCorpus().appendingPathComponent(file).path
        let output = try await CLIRunner.run("webimage", ["info", path])
        #expect(output.status == 0, "\(output.stderr)")
        let bytes = try Fixtures.corpusFile(file).count
        let lines = output.stdoutLines.map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.contains("format       \(format)"))
        #expect(lines.contains("dimensions   \(dimensions)"))
        #expect(lines.contains { $0.hasPrefix("frames       \(frames)") })
        #expect(lines.contains("alpha        \(alpha ? "yes" : "no")"))
        #expect(lines.contains { $0.hasPrefix("orientation  \(orientation) ") })
        #expect(lines.contains("bytes        \(bytes)"))
    }

    @Test("an undecodable file and a missing file fail with exit status 1 and say why")
    func failures() async throws {
        let corpus = try Fixtures.requireCorpus()
        let output = try await CLIRunner.run(
            "webimage",
            [
                "info", corpus.appendingPathComponent("random-bytes.png").path,
                corpus.appendingPathComponent("nope.png").path,
            ])
        #expect(output.status == 1)
        #expect(output.stderr.contains("badImageData (1001)"))
        #expect(output.stderr.contains("cannot read the file"))
    }

    @Test("a URL is downloaded and described; --json gives one object")
    func url() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let output = try await CLIRunner.run(
            "webimage", ["info", "--json", server.url("/files/horse-lossy-alpha.webp").absoluteString])
        #expect(output.status == 0, "\(output.stderr)")
        let object = try #require(try CLIRunner.jsonObjects(output).first)
        #expect(object["width"] as? Int == 400)
        #expect(object["height"] as? Int == 328)
        #expect(object["hasAlpha"] as? Bool == true)
        #expect(object["bytes"] as? Int == 3764)
    }

    @Test(
        "a damaged JPEG XL or AVIF file prints WebImage's one error line, none of libjxl's or dav1d's own",
        arguments: [
            ("jxl", "JPEG XL undecodable"), ("avif", "AVIF undecodable: Decoding of color planes failed"),
        ])
    func damagedFileIsQuiet(format: String, message: String) async throws {
        let bytes = try format == "jxl" ? PipelineFixtures.damagedJXL() : PipelineFixtures.damagedAVIF()
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("damaged.\(format)")
        try bytes.write(to: file)

        let output = try await CLIRunner.run("webimage", ["info", file.path])
        #expect(output.status == 1, "\(output.stderr)")
        #expect(output.stderr == "\(file.path): badImageData (1001): \(message)\n", "\(output.stderr)")
    }
}
