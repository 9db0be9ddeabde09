import Foundation
import LocalImageServer
import Testing

@testable import WebImage

/// `webimage bulk`'s img2dataset modes run as built: resize modes, never enlarging, the size filters,
/// the encoders.
@Suite("webimage bulk modes", .timeLimit(.minutes(10)))
struct BulkModesTests {
    /// The pixels of a `width`×`height` test image: a ramp in red and green, blue 90, opaque.
    static func pixels(_ width: Int, _ height: Int) -> [UInt8] {
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width { pixels += [UInt8((x * 9) % 256), UInt8((y * 5) % 256), 90, 255] }
        }
        return pixels
    }

    /// A server with `/img/WxH.png`: a PNG of that size.
    static func server() throws -> LocalImageServer {
        let server = LocalImageServer(root: nil)
        try server.start()
        server.route("/img/") { request in
            let name = request.path.split(separator: "/").last.map(String.init) ?? ""
            let sides = (name.split(separator: ".").first ?? "").split(separator: "x").compactMap { Int($0) }
            guard sides.count == 2,
                let png = try? PNGEncoder().encode(
                    ImageFrame(
                        width: sides[0], height: sides[1], bytesPerRow: sides[0] * 4,
                        pixels: Self.pixels(sides[0], sides[1])))
            else { return .text("bad size", status: 400) }
            return LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/png")], body: .data(png))
        }
        return server
    }

    /// Runs `bulk` on a .txt list of `paths` on `server` with `options`; the jsonl records by URL path.
    static func run(
        _ server: LocalImageServer, _ paths: [String], _ options: [String], in folder: URL
    ) async throws -> (CLIRunner.Output, [String: [String: Any]]) {
        let list = folder.appendingPathComponent("list.txt")
        try paths.map { server.url($0).absoluteString }.joined(separator: "\n").write(
            to: list, atomically: true, encoding: .utf8)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage", ["bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path] + options)
        guard run.status == 0 else { return (run, [:]) }
        var records: [String: [String: Any]] = [:]
        for record in try BulkCommandTests.jsonl(output) {
            let path = URL(string: record["url"] as? String ?? "")?.path ?? ""
            records[path] = record
        }
        return (run, records)
    }

    static func size(_ record: [String: Any]?) -> [Int] {
        [record?["width"] as? Int ?? -1, record?["height"] as? Int ?? -1]
    }

    @Test("keep-ratio, center-crop and border as img2dataset sizes them; --resize-only-if-bigger never enlarges")
    func resizeModes() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let paths = ["/img/120x60.png", "/img/20x20.png", "/img/50x20.png"]
        let cases: [([String], [[Int]])] = [
            (["--resize-mode", "keep-ratio"], [[64, 32], [32, 32], [80, 32]]),
            (["--resize-mode", "keep-ratio", "--resize-only-if-bigger"], [[64, 32], [20, 20], [50, 20]]),
            (["--resize-mode", "center-crop", "--resize-only-if-bigger"], [[32, 32], [20, 20], [50, 20]]),
            (["--resize-mode", "fill"], [[32, 32], [32, 32], [32, 32]]),
            (["--resize-mode", "border", "--resize-only-if-bigger"], [[32, 32], [20, 20], [32, 32]]),
            (["--resize-mode", "keep-ratio-largest"], [[32, 16], [32, 32], [32, 13]]),
        ]
        for (options, sizes) in cases {
            let folder = try CLIRunner.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let (run, records) = try await Self.run(
                server, paths, ["--size", "32", "--encode", "png"] + options, in: folder)
            #expect(run.status == 0, "\(options): \(run.stderr)")
            #expect(paths.map { Self.size(records[$0]) } == sizes, "\(options)")
            #expect(paths.allSatisfy { records[$0]?["original_width"] as? Int != nil }, "\(options)")
        }
    }

    @Test("--min-image-size, --max-image-area, --max-aspect-ratio fail rows with img2dataset's words, counted")
    func sizeFilters() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let paths = ["/img/40x40.png", "/img/10x40.png", "/img/100x90.png", "/img/90x30.png"]
        let (run, records) = try await Self.run(
            server, paths,
            ["--min-image-size", "20", "--max-image-area", "5000", "--max-aspect-ratio", "2.5", "--size", "16"],
            in: folder)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(records[paths[0]]?["status"] as? String == "success")
        let expected: [(String, String, String)] = [
            (paths[1], "tooSmall", "image too small: 10×40"),
            (paths[2], "areaTooLarge", "image area too large: 100×90"),
            (paths[3], "aspectRatio", "aspect ratio too large: 90×30"),
        ]
        for (path, code, message) in expected {
            #expect(records[path]?["status"] as? String == "failed", "\(path)")
            #expect(records[path]?["error_code"] as? String == code, "\(path)")
            #expect(
                (records[path]?["error"] as? String)?.hasPrefix(message) == true, "\(path): \(records[path] ?? [:])")
        }
        let stats =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: folder.appendingPathComponent("out/00000_stats.json"))) as? [String: Any]
        #expect(stats?["failures"] as? [String: Int] == ["tooSmall": 1, "areaTooLarge": 1, "aspectRatio": 1])
        #expect(stats?["successes"] as? Int == 1)
    }

    @Test("--encode avif writes AVIF files; --lossless WebP keeps every pixel; --lossless elsewhere is refused")
    func encoders() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let avifFolder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: avifFolder) }
        let (avif, avifRecords) = try await Self.run(
            server, ["/img/40x30.png"], ["--size", "16", "--encode", "avif", "--format", "files"], in: avifFolder)
        #expect(avif.status == 0, "\(avif.stderr)")
        let key = try #require(avifRecords["/img/40x30.png"]?["key"] as? String)
        let avifData = try Data(contentsOf: avifFolder.appendingPathComponent("out/00000/\(key).avif"))
        #expect(ImageFormat.detect(avifData) == .avif)
        #expect(Self.size(avifRecords["/img/40x30.png"]) == [16, 16])

        let webpFolder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: webpFolder) }
        let (webp, webpRecords) = try await Self.run(
            server, ["/img/40x30.png"],
            ["--resize-mode", "none", "--encode", "webp", "--lossless", "--format", "files"],
            in: webpFolder)
        #expect(webp.status == 0, "\(webp.stderr)")
        let webpKey = try #require(webpRecords["/img/40x30.png"]?["key"] as? String)
        let webpData = try Data(contentsOf: webpFolder.appendingPathComponent("out/00000/\(webpKey).webp"))
        let decoded = try WebPDecoder().decode(webpData, options: ImageDecodingOptions())
        #expect(decoded.frames.first?.pixels == Self.pixels(40, 30))

        for format in ["jpeg", "png", "avif"] {
            let refused = try await CLIRunner.run(
                "webimage", ["bulk", "list.txt", "--output", "out", "--encode", format, "--lossless"])
            #expect(refused.status == 2, "\(format)")
            #expect(refused.stderr.contains("--lossless applies to --encode webp only"), "\(refused.stderr)")
        }
    }
}
