import Foundation
import LocalImageServer
import Testing
import WebImage

@testable import WebImageDataset

/// A DataComp-shaped run driven from Swift against the loopback server: a Parquet list with a sha256
/// column and a list-of-lists face box column, keep-ratio-largest at 150 only if bigger, every image
/// checked against its digest and its faces blurred.
@Suite("Bulk DataComp-style recipe", .timeLimit(.minutes(5)))
struct BulkDataCompRecipeTests {
    @Test("verified digests, blurred faces, keep-ratio-largest only if bigger, from a generated Parquet file")
    func dataCompStyleRun() async throws {
        let side = (width: 300, height: 200)
        let board = BulkBlurTests.checkerboard(300, cell: 2)
        let frame = ImageFrame(
            width: side.width, height: side.height, bytesPerRow: side.width * 4,
            pixels: Array(board.pixels[0..<(side.width * side.height * 4)]))
        let png = try PNGEncoder().encode(frame)
        let small = try PNGEncoder().encode(
            ImageFrame(width: 60, height: 40, bytesPerRow: 240, pixels: [UInt8](repeating: 128, count: 60 * 40 * 4)))
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        server.route("/img/") { request in
            LocalImageServer.Response(
                status: 200, headers: [("Content-Type", "image/png")],
                body: .data(request.path.hasSuffix("small.png") ? small : png))
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("datacomp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        let digest = BulkHashAlgorithm.sha256.hex(png)
        let input = folder.appendingPathComponent("datacomp.parquet")
        let writer = try ParquetWriter(
            path: input.path,
            schema: ParquetSchema(columns: [
                ParquetColumn(name: "url", type: .string, isNullable: false),
                ParquetColumn(name: "sha256", type: .string, isNullable: true),
                ParquetColumn(
                    name: "face_bboxes",
                    type: .list(element: .list(element: .double, elementNullable: false), elementNullable: false),
                    isNullable: true),
            ]))
        let face: ParquetValue = .list([.list([.double(0.1), .double(0.2), .double(0.4), .double(0.6)])])
        try writer.writeRowGroup([
            ["/img/a.png", "/img/b.png", "/img/c.png", "/img/small.png"].map { .string(server.url($0).absoluteString) },
            [
                .string(digest), .string(digest), .string(String(repeating: "f", count: 64)),
                .string(BulkHashAlgorithm.sha256.hex(small)),
            ],
            [face, .list([]), face, .null],
        ])
        try writer.close()

        let columns = BulkColumns(boxes: "face_bboxes", verifyHash: "sha256")
        let directory = folder.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let plan = try BulkPlan.settle(
            try BulkPlan.make(
                input: input.path, columns: columns, maxLineBytes: 1 << 20, shardSize: 10, format: "files"),
            in: directory)
        var config = ImageDownloaderConfig()
        config.destinationPolicy = DestinationPolicy.publicOnly.allowing(["127.0.0.0/8"])
        var settings = BulkSettings()
        settings.outputFormat = .files
        settings.concurrency = 4
        settings.encoder = PNGEncoder()
        settings.resize = BulkResize(mode: .keepRatioLargest, size: 150, onlyIfBigger: true)
        settings.verifiesHash = true
        let engine = BulkEngine(
            input: input.path, plan: plan, assigned: [0], directory: directory,
            downloader: ImageDownloader(config: config), settings: settings, columns: columns)
        let summary = try await engine.run()
        #expect(summary.succeeded == 3 && summary.failed == 1)

        let text = try String(contentsOf: directory.appendingPathComponent("00000.jsonl"), encoding: .utf8)
        let records = try text.split(separator: "\n").map {
            try JSONDecoder().decode(BulkSampleRecord.self, from: Data($0.utf8))
        }.sorted { $0.key < $1.key }
        #expect(records.map(\.status) == [.success, .success, .failedToDownload, .success])
        #expect(records[2].errorCode == "hashMismatch")
        #expect(records.map(\.hash) == [digest, digest, nil, BulkHashAlgorithm.sha256.hex(small)])
        #expect(records.map { [$0.width ?? -1, $0.height ?? -1] } == [[150, 100], [150, 100], [-1, -1], [60, 40]])

        func pixels(_ key: String) throws -> ImageFrame {
            let data = try Data(contentsOf: directory.appendingPathComponent("00000/\(key).png"))
            return try #require(try PNGDecoder().decode(data, options: ImageDecodingOptions()).frames.first)
        }
        let blurred = try pixels("000000")
        let plain = try pixels("000001")
        // The face is x 15…60, y 20…60 of the 150×100 image (largest side 45): its detail goes, and the
        // right half of the image, far from it, is the same in both samples.
        #expect(
            BulkBlurTests.detail(blurred, 20, 25, 55, 55) * 10 < BulkBlurTests.detail(plain, 20, 25, 55, 55))
        for y in 0..<100 {
            let start = (y * 150 + 90) * 4
            #expect(blurred.pixels[start..<(start + 60 * 4)] == plain.pixels[start..<(start + 60 * 4)], "row \(y)")
        }
    }
}
