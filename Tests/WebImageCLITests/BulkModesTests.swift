import Foundation
import LocalImageServer
import Locking
import TestSupport
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

    /// A 120×80 checkerboard of 2-pixel black and white cells: all detail.
    static let checkerboard: [UInt8] = (0..<(120 * 80)).flatMap { index -> [UInt8] in
        let value: UInt8 = ((index % 120) / 2 + (index / 120) / 2) % 2 == 0 ? 240 : 10
        return [value, value, value, 255]
    }

    /// A server with `/img/WxH.png`, a PNG of that size, and `/check.png`, ``checkerboard``.
    static func server() throws -> LocalImageServer {
        let server = LocalImageServer(root: nil)
        try server.start()
        let check = try PNGEncoder().encode(
            ImageFrame(width: 120, height: 80, bytesPerRow: 480, pixels: Self.checkerboard))
        server.route("/check.png") { _ in
            LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/png")], body: .data(check))
        }
        // `/flaky/NAME.png`: a 503 the first time, the checkerboard after.
        let seen = Lock<Set<String>>([])
        server.route("/flaky/") { request in
            guard seen.withLock({ $0.insert(request.path).inserted }) else {
                return LocalImageServer.Response(
                    status: 200, headers: [("Content-Type", "image/png")], body: .data(check))
            }
            return .text("try later", status: 503)
        }
        // `/robots/NAME.png?tag=VALUE`: the checkerboard with `X-Robots-Tag: VALUE`.
        server.route("/robots/") { request in
            LocalImageServer.Response(
                status: 200,
                headers: [("Content-Type", "image/png"), ("X-Robots-Tag", request.queryValue("tag") ?? "")],
                body: .data(check))
        }
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
            // 50×20 → 32: 20 × 0.64 = 12.8, truncated to 12 as albumentations 1.4.24's LongestMaxSize does.
            (["--resize-mode", "keep-ratio-largest"], [[32, 16], [32, 32], [32, 12]]),
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
            #expect(records[path]?["status"] as? String == "failed_to_resize", "\(path)")
            #expect(records[path]?["error_code"] as? String == code, "\(path)")
            #expect(records[path]?["width"] is NSNull && records[path]?["original_width"] as? Int != nil, "\(path)")
            #expect(
                (records[path]?["error_message"] as? String)?.hasPrefix(message) == true,
                "\(path): \(records[path] ?? [:])")
        }
        let stats =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: folder.appendingPathComponent("out/00000_stats.json"))) as? [String: Any]
        #expect(
            stats?["status_dict"] as? [String: Int] == [
                "success": 1, "tooSmall": 1, "areaTooLarge": 1, "aspectRatio": 1,
            ])
        #expect(stats?["failed_to_resize"] as? Int == 3 && stats?["failed_to_download"] as? Int == 0)
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
        for format in ["webp", "png", "avif", "none"] {
            let refused = try await CLIRunner.run(
                "webimage", ["bulk", "list.txt", "--output", "out", "--encode", format, "--optimize-jpeg"])
            #expect(refused.status == 2, "\(format)")
            #expect(refused.stderr.contains("--optimize-jpeg applies to --encode jpeg only"), "\(refused.stderr)")
        }
    }

    @Test("JPEG samples have the standard Huffman tables; --optimize-jpeg makes them for each image, same pixels")
    func jpegHuffmanTables() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        var files: [Bool: [UInt8]] = [:]
        for optimize in [false, true] {
            let folder = try CLIRunner.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let (run, records) = try await Self.run(
                server, ["/img/40x30.png"],
                ["--size", "16", "--format", "files"] + (optimize ? ["--optimize-jpeg"] : []), in: folder)
            #expect(run.status == 0, "\(run.stderr)")
            let key = try #require(records["/img/40x30.png"]?["key"] as? String)
            files[optimize] = [UInt8](try Data(contentsOf: folder.appendingPathComponent("out/00000/\(key).jpg")))
        }
        let standard = try #require(files[false])
        let optimised = try #require(files[true])
        let standardLuminanceDC: [UInt8] = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
        #expect(JPEGMarkers.huffmanTables(standard).first { $0.id == 0x00 }?.counts == standardLuminanceDC)
        #expect(JPEGMarkers.huffmanTables(optimised).first { $0.id == 0x00 }?.counts != standardLuminanceDC)
        #expect(
            try JPEGDecoder().decode(Data(standard), options: .default).frames[0].pixels
                == JPEGDecoder().decode(Data(optimised), options: .default).frames[0].pixels)
    }

    /// The rows of ``duplicatesList(_:in:)``: /gen/N.png serves one of 8 files (N % 8), so rows 0, 8 and 16
    /// are one file, 1 and 9 another, 2 and 10 a third; shards of 3 rows put them in different shards.
    static let duplicateRows = [0, 1, 2, 8, 9, 10, 16]

    /// A list of ``duplicateRows``' URLs on `server` (``BulkCommandTests/server()``).
    static func duplicatesList(_ server: LocalImageServer, in folder: URL) throws -> URL {
        try BulkCommandTests.writeList(duplicateRows.map { server.url("/gen/\($0).png").absoluteString }, to: folder)
    }

    /// Of each file of ``duplicateRows``, one row kept, the others `duplicate`s naming it.
    static func expectOneKeptPerFile(_ rows: [[String: Any]]) {
        #expect(rows.count == duplicateRows.count)
        for (file, group) in Dictionary(grouping: zip(duplicateRows, rows), by: { $0.0 % 8 }) {
            let kept = group.filter { $0.1["status"] as? String == "success" }
            #expect(kept.count == 1, "file \(file): \(group.map(\.1))")
            let key = kept.first?.1["key"] as? String ?? "?"
            for (_, row) in group where row["status"] as? String != "success" {
                #expect(row["status"] as? String == "failed_to_download" && row["error_code"] as? String == "duplicate")
                #expect((row["error_message"] as? String)?.hasPrefix("duplicate of \(key):") == true, "\(row)")
            }
        }
    }

    @Test("--dedup exact keeps one row per identical file, across shards and runs sharing the output")
    func exactDeduplication() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try Self.duplicatesList(server, in: folder)
        let output = folder.appendingPathComponent("out")
        func arguments(_ extra: [String]) -> [String] {
            [
                "bulk", list.path, "--output", output.path, "--shard-size", "3", "--size", "8", "--dedup", "exact",
                "--allow-destination", "127.0.0.0/8",
            ] + extra
        }
        // Two workers of an array job, one after the other, on one output.
        for index in ["0", "1"] {
            let run = try await CLIRunner.run("webimage", arguments(["--shard-index", index, "--shard-count", "2"]))
            #expect(run.status == 0, "\(run.stderr)")
        }
        Self.expectOneKeptPerFile(try BulkInputTests.rows(output))
        // Duplicates are not retried: nothing a retry can change.
        let retry = try await CLIRunner.run("webimage", arguments(["--retry-failed"]))
        #expect(retry.status == 0 && retry.stderr.contains("retried 0 failed row(s)"), "\(retry.stderr)")
        // A rerun of a shard finds its own keys in the index: what it kept stays kept.
        let shard0 = output.appendingPathComponent("00000_stats.json")
        let before = try BulkInputTests.rows(output).filter { ($0["key"] as? String ?? "").hasPrefix("00000") }
        try FileManager.default.removeItem(at: shard0)
        let redo = try await CLIRunner.run("webimage", arguments(["--shards", "0"]))
        #expect(redo.status == 0, "\(redo.stderr)")
        let after = try BulkInputTests.rows(output).filter { ($0["key"] as? String ?? "").hasPrefix("00000") }
        #expect(after.map { $0["status"] as? String } == before.map { $0["status"] as? String })

        // A threshold out of range is refused, naming the option.
        let refused = try await CLIRunner.run(
            "webimage",
            ["bulk", list.path, "--output", output.path, "--dedup", "phash", "--dedup-threshold", "8"])
        #expect(refused.status == 2 && refused.stderr.contains("--dedup-threshold must be 0…7"), "\(refused.stderr)")
    }

    @Test("--dedup exact with an s3:// store that ignores If-None-Match: refused before any shard, exit 2")
    func deduplicationNeedsConditionalWrites() async throws {
        // A stand-in for a store without conditional writes (the seam is the store's answer; moto's real
        // conditional PUT is BulkObjectStorageTests'): every PUT succeeds, every GET is NoSuchKey.
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        let requests = Lock<[String]>([])
        server.route("/") { request in
            requests.withLock { $0.append("\(request.method) \(request.path)") }
            if request.method == "GET" {
                return .text("<Error><Code>NoSuchKey</Code><Message>none</Message></Error>", status: 404)
            }
            return .text("", status: request.method == "DELETE" ? 204 : 200)
        }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try BulkCommandTests.writeList([server.url("/gen/0.png").absoluteString], to: folder)
        let environment = [
            "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "",
            "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:\(server.port)", "AWS_ENDPOINT_URL_S3": "",
            "AWS_PROFILE": "", "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        ]
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output", "s3://bucket/run", "--dedup", "exact", "--allow-destination",
                "127.0.0.0/8",
            ],
            environment: environment)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("needs a store that refuses a conditional PUT (If-None-Match: *)"), "\(run.stderr)")
        let seen = requests.withLock { $0 }
        #expect(seen.filter { $0.hasPrefix("PUT /bucket/run/.dedup/probe-") }.count == 2, "\(seen)")
        #expect(!seen.contains { $0.contains(".tar") || $0.contains("/gen/") }, "\(seen)")
    }

    /// Two pictures in two files each, and one alone: the corpus files ``picturesList(_:in:)`` lists.
    static let pictureNames = [
        "astronaut-baseline.jpg", "coffee-rgb.png", "astronaut-lossy.webp", "camera-gray.png",
        "coffee-progressive.jpg",
    ]

    /// `server` serving ``pictureNames`` from the corpus, and the list of their URLs in `folder`.
    static func picturesList(_ server: LocalImageServer, in folder: URL) throws -> URL {
        let corpus = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/corpus/images")
        for name in pictureNames {
            let bytes = try Data(contentsOf: corpus.appendingPathComponent(name))
            server.route("/\(name)") { _ in LocalImageServer.Response(status: 200, headers: [], body: .data(bytes)) }
        }
        return try BulkCommandTests.writeList(pictureNames.map { server.url("/\($0)").absoluteString }, to: folder)
    }

    /// Of ``pictureNames``' rows, three kept and two `duplicate`s naming a kept row, every row with its phash.
    static func expectOneKeptPerPicture(_ rows: [[String: Any]]) {
        #expect(rows.count == pictureNames.count)
        #expect(rows.allSatisfy { ($0["phash"] as? String)?.count == 16 }, "\(rows)")
        let kept = rows.filter { $0["status"] as? String == "success" }
        let duplicates = rows.filter { $0["error_code"] as? String == "duplicate" }
        #expect(kept.count == 3 && duplicates.count == 2, "\(rows)")
        let keptKeys = Set(kept.compactMap { $0["key"] as? String })
        for row in duplicates {
            let message = row["error_message"] as? String ?? ""
            #expect(keptKeys.contains { message.hasPrefix("duplicate of \($0): the same picture") }, "\(message)")
        }
    }

    @Test("--dedup phash keeps one row per picture: the same photograph in other files is a duplicate")
    func perceptualDeduplication() async throws {
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try Self.picturesList(server, in: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output", output.path, "--shard-size", "2", "--size", "64", "--dedup", "phash",
                "--concurrency", "1", "--allow-destination", "127.0.0.0/8",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        Self.expectOneKeptPerPicture(try BulkInputTests.rows(output))
    }

    @Test("--bbox-col blurs each row's boxes (JSON Lines arrays) and leaves the rest of the image as it was")
    func boxBlur() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = server.url("/check.png").absoluteString
        let lines = [
            "{\"url\": \"\(url)\", \"faces\": [[0.25, 0.25, 0.5, 0.5]]}",
            "{\"url\": \"\(url)?plain\", \"faces\": []}",
        ]
        let list = folder.appendingPathComponent("list.jsonl")
        try lines.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--bbox-col", "faces",
                "--resize-mode", "none", "--encode", "png", "--format", "files",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        func pixels(_ key: String) throws -> [UInt8] {
            let data = try Data(contentsOf: output.appendingPathComponent("00000/\(key).png"))
            return try #require(try PNGDecoder().decode(data, options: ImageDecodingOptions()).frames.first).pixels
        }
        let blurred = try pixels("000000000")
        #expect(try pixels("000000001") == Self.checkerboard)
        // The box is x 30…60, y 20…40 (largest side 30): grown by 3, blurred with 7 taps; nothing changes
        // left of x 21 or right of x 69, above y 11 or below y 49.
        func detail(_ pixels: [UInt8], _ x0: Int, _ x1: Int, _ y0: Int, _ y1: Int) -> Int {
            var total = 0
            for y in y0..<y1 {
                for x in x0..<(x1 - 1) {
                    total += abs(Int(pixels[(y * 120 + x) * 4]) - Int(pixels[(y * 120 + x + 1) * 4]))
                }
            }
            return total
        }
        #expect(detail(blurred, 32, 58, 22, 38) * 10 < detail(Self.checkerboard, 32, 58, 22, 38))
        for y in 0..<80 {
            for x in 0..<120 where !(21..<69).contains(x) || !(11..<49).contains(y) {
                let index = (y * 120 + x) * 4
                if blurred[index..<(index + 4)] != Self.checkerboard[index..<(index + 4)] {
                    Issue.record("pixel (\(x), \(y)) changed outside the box's blur")
                    return
                }
            }
        }
    }

    @Test("--compute-hash names the record's field; --verify-hash fails a row whose file differs or has no hash")
    func hashes() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (first, records) = try await Self.run(
            server, ["/img/10x10.png", "/img/12x10.png"], ["--compute-hash", "md5", "--size", "8"], in: folder)
        #expect(first.status == 0, "\(first.stderr)")
        let md5 = try #require(records["/img/10x10.png"]?["md5"] as? String)
        #expect(md5.count == 32 && records["/img/10x10.png"]?["sha256"] == nil)

        let list = folder.appendingPathComponent("hashes.csv")
        let rows = [
            "url,md5", "\(server.url("/img/10x10.png")),\(md5.uppercased())",
            "\(server.url("/img/12x10.png")),\(md5)", "\(server.url("/img/14x10.png")),",
        ]
        try rows.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
        let output = folder.appendingPathComponent("verified")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--compute-hash",
                "md5", "--verify-hash", "md5", "--size", "8",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let verified = try BulkCommandTests.jsonl(output).sorted {
            ($0["key"] as? String ?? "") < ($1["key"] as? String ?? "")
        }
        #expect(
            verified.map { $0["status"] as? String } == ["success", "failed_to_download", "failed_to_download"])
        #expect(verified.map { $0["error_code"] as? String } == [nil, "hashMismatch", "hashMismatch"])
        #expect((verified[1]["error_message"] as? String)?.hasPrefix("hash mismatch: md5 ") == true)
        #expect(verified[2]["error_message"] as? String == "hash mismatch: the row has no expected md5")
        #expect(verified[0]["md5"] as? String == md5)

        let refused = try await CLIRunner.run(
            "webimage", ["bulk", list.path, "--output", "out", "--compute-hash", "none", "--verify-hash", "md5"])
        #expect(refused.status == 2 && refused.stderr.contains("--verify-hash"), "\(refused.stderr)")
    }

    @Test(
        "X-Robots-Tag: img2dataset's default directives, scoped ones for --user-agent-token, which joins the User-Agent"
    )
    func robotsDirectives() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let paths = [
            "/robots/a.png?tag=noindex", "/robots/b.png?tag=otherbot:%20noai", "/robots/c.png?tag=MyBot:%20noimageai",
            "/robots/d.png?tag=nofollow",
        ]
        func outcome(_ options: [String]) async throws -> [String] {
            let folder = try CLIRunner.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let (run, records) = try await Self.run(server, paths, ["--size", "8"] + options, in: folder)
            #expect(run.status == 0, "\(run.stderr)")
            return paths.map { path in
                let record = records[URL(string: path, relativeTo: server.url("/"))?.path ?? ""]
                return (record?["error_code"] as? String) ?? (record?["status"] as? String ?? "?")
            }
        }
        #expect(try await outcome([]) == ["robotsTag", "success", "success", "success"])
        #expect(
            try await outcome(["--user-agent-token", "MyBot"]) == ["robotsTag", "success", "robotsTag", "success"])
        #expect(
            try await outcome(["--disallowed-header-directives", "nofollow", "--user-agent-token", "otherbot"]) == [
                "success", "success", "success", "robotsTag",
            ])
        #expect(
            try await outcome(["--disallowed-header-directives", ""]) == ["success", "success", "success", "success"])
        let agents = server.requests.compactMap { $0.request.header("User-Agent") }
        #expect(agents.contains { $0.hasSuffix(" (compatible; MyBot)") && $0.hasPrefix("webimage-bulk/") })
    }

    @Test("an option naming a column is refused on a .txt list (exit 2), which has none, instead of ignored")
    func columnOptionsOnATextList() async throws {
        let cases: [([String], String)] = [
            (["--caption-col", "caption"], "--caption-col names a column"),
            (["--save-cols", "a,b", "--bbox-col", "faces"], "--save-cols, --bbox-col name a column"),
            (["--url-col", "link"], "--url-col names a column"),
            (["--verify-hash", "sha256"], "--verify-hash names a column"),
        ]
        for (options, message) in cases {
            for name in ["urls.txt", "urls.txt.gz"] {
                let run = try await CLIRunner.run("webimage", ["bulk", name, "--output", "out"] + options)
                #expect(run.status == 2, "\(options)")
                #expect(run.stderr.contains(message) && run.stderr.contains(".txt input has none"), "\(run.stderr)")
            }
        }
        // The same options on a table reach the input (which does not exist here): a different error.
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let csv = try await CLIRunner.run(
            "webimage",
            [
                "bulk", folder.appendingPathComponent("missing.csv").path, "--output",
                folder.appendingPathComponent("out").path, "--caption-col", "c",
            ])
        #expect(csv.status == 2 && !csv.stderr.contains("names a column"), "\(csv.stderr)")
    }

    @Test("--retry-failed takes the boxes and the expected digest from the input again: the jsonl keeps neither")
    func retryKeepsBoxesAndHashes() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // The checkerboard's digest, from a first run.
        let (first, records) = try await Self.run(server, ["/check.png"], ["--resize-mode", "none"], in: folder)
        #expect(first.status == 0, "\(first.stderr)")
        let sha256 = try #require(records["/check.png"]?["sha256"] as? String)
        let list = folder.appendingPathComponent("faces.csv")
        let rows = [
            "url,sha256,faces", "\(server.url("/flaky/a.png")),\(sha256),\"[[0.25,0.25,0.5,0.5]]\"",
            "\(server.url("/flaky/b.png")),\(String(repeating: "0", count: 64)),[]",
        ]
        try rows.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
        let output = folder.appendingPathComponent("faces")
        let arguments = [
            "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--verify-hash",
            "sha256", "--bbox-col", "faces", "--resize-mode", "none", "--encode", "png", "--format", "files",
        ]
        let run = try await CLIRunner.run("webimage", arguments)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            try BulkCommandTests.jsonl(output).map { $0["error_code"] as? String } == [
                "invalidDownloadStatusCode", "invalidDownloadStatusCode",
            ])
        let retry = try await CLIRunner.run("webimage", arguments + ["--retry-failed"])
        #expect(retry.status == 0, "\(retry.stderr)")
        let retried = try String(contentsOf: output.appendingPathComponent("00000-retry1.jsonl"), encoding: .utf8)
            .split(separator: "\n").compactMap {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            .sorted { ($0["key"] as? String ?? "") < ($1["key"] as? String ?? "") }
        #expect(retried.map { $0["status"] as? String } == ["success", "failed_to_download"])
        #expect(retried.map { $0["error_code"] as? String } == [nil, "hashMismatch"])
        let data = try Data(contentsOf: output.appendingPathComponent("00000-retry1/000000000.png"))
        let pixels = try #require(try PNGDecoder().decode(data, options: ImageDecodingOptions()).frames.first).pixels
        #expect(pixels != Self.checkerboard)
        #expect(pixels[0..<(120 * 4 * 10)] == Self.checkerboard[0..<(120 * 4 * 10)])
    }

    @Test("the end of a run gives ok and failed totals and wall time; a shard's images/s counts its images only")
    func totalsAndWallTime() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let paths = ["/img/10x10.png", "/img/11x10.png", "/img/bad.png", "/img/worse.png", "/img/12x10.png"]
        let (run, _) = try await Self.run(server, paths, ["--shard-size", "2", "--size", "8"], in: folder)
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("shard 00001: 0 of 2 ok, 2 failed") && $0.hasSuffix("(0 images/s)") })
        let last = try #require(lines.last)
        #expect(last.hasPrefix("3 shard(s) written, 0 already done, 3 assigned of 3: 3 ok, 2 failed in "), "\(last)")
        #expect(last.hasSuffix(" s"), "\(last)")

        let stats = try await CLIRunner.run(
            "webimage", ["bulk-stats", "--json", folder.appendingPathComponent("out").path])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
        let wall = try #require(object["wallSeconds"] as? Double)
        #expect(wall > 0 && wall < 600)

        // Two shards that ran side by side for 10 s each, 2 s apart: 12 s of wall time, 20 of shard time.
        let made = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: made) }
        for (shard, start) in [(0, 1_000.0), (1, 1_002.0)] {
            let text =
                "{\"shard\":\(shard),\"count\":2,\"successes\":2,\"failures\":{},\"bytes\":10,\"duration\":10,"
                + "\"started\":\(start),\"finished\":\(start + 10)}"
            try text.write(
                to: made.appendingPathComponent(String(format: "%05d_stats.json", shard)), atomically: true,
                encoding: .utf8)
        }
        let text = try await CLIRunner.run("webimage", ["bulk-stats", made.path])
        #expect(text.stdout.contains("wall time: 12.0 s (first shard start to last shard end)"), "\(text.stdout)")
        #expect(text.stdout.contains("shard time: 20.0 s"), "\(text.stdout)")
        let json = try await CLIRunner.run("webimage", ["bulk-stats", "--json", made.path])
        let totals = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(totals["wallSeconds"] as? Double == 12 && totals["duration"] as? Double == 20)
    }

    @Test(
        "DataComp's recipe through the binary on a pyarrow file: list<list<float>> face boxes, sha256 verified",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: BulkCommandTests.webdatasetPython),
            "make test-python sets up .venv-test with pyarrow"))
    func dataCompRecipeOnPyarrowParquet() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (first, records) = try await Self.run(server, ["/check.png"], ["--resize-mode", "none"], in: folder)
        #expect(first.status == 0, "\(first.stderr)")
        let sha256 = try #require(records["/check.png"]?["sha256"] as? String)
        let input = folder.appendingPathComponent("datacomp.parquet")
        let script = """
            import sys, pyarrow as pa, pyarrow.parquet as pq
            url, digest = sys.argv[2], sys.argv[3]
            boxes = pa.list_(pa.list_(pa.float32()))
            pq.write_table(pa.table({
                "uid": pa.array(["a1", "b2", "c3"]),
                "url": pa.array([url + "?n=0", url + "?n=1", url + "?n=2"]),
                "text": pa.array(["one", None, "three"]),
                "sha256": pa.array([digest, digest, "0" * 64]),
                "face_bboxes": pa.array([[[0.25, 0.25, 0.5, 0.5]], [], None], boxes),
            }), sys.argv[1])
            """
        _ = try await BulkParquetTests.python(script, [input.path, server.url("/check.png").absoluteString, sha256])
        let output = folder.appendingPathComponent("datacomp")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", input.path, "--output", output.path, "--url-col", "url",
                "--caption-col", "text", "--save-cols", "uid", "--resize-mode", "keep-ratio-largest", "--size", "512",
                "--resize-only-if-bigger", "--compute-hash", "sha256", "--verify-hash", "sha256", "--bbox-col",
                "face_bboxes", "--encode", "png", "--format", "files",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try BulkCommandTests.jsonl(output).sorted {
            ($0["key"] as? String ?? "") < ($1["key"] as? String ?? "")
        }
        #expect(rows.map { $0["uid"] as? String } == ["a1", "b2", "c3"])
        #expect(rows.map { $0["error_code"] as? String } == [nil, nil, "hashMismatch"])
        #expect(rows.map { $0["width"] as? Int } == [120, 120, nil])  // 120×80 is not above 512: kept
        func pixels(_ key: String) throws -> [UInt8] {
            let data = try Data(contentsOf: output.appendingPathComponent("00000/\(key).png"))
            return try #require(try PNGDecoder().decode(data, options: ImageDecodingOptions()).frames.first).pixels
        }
        let blurred = try pixels("000000000")
        #expect(try pixels("000000001") == Self.checkerboard)
        #expect(blurred != Self.checkerboard)
        #expect(blurred[0..<(120 * 4 * 10)] == Self.checkerboard[0..<(120 * 4 * 10)])
    }
}
