import Foundation
import Testing

@testable import WebImageDataset

/// ``BulkKeyFormat``: shard names and sample keys as img2dataset 1.47 writes them, and plans written
/// before the format was recorded.
@Suite("BulkKeyFormat")
struct BulkKeyFormatTests {
    /// (rows per shard, shard digits, shard, row, key): the keys img2dataset 1.47's
    /// `downloader.compute_key(row, shard, ceil(log10(rows)), digits)` returns for these arguments (run
    /// with Python 3 on the function from its wheel).
    static let img2datasetKeys: [(Int, Int, Int, Int, String)] = [
        (10_000, 5, 3, 42, "000030042"), (1_000, 5, 3, 42, "00003042"), (3, 5, 1, 2, "000012"),
        (1, 5, 7, 0, "00007"), (5, 5, 2, 3, "000023"), (25, 5, 2, 10, "0000210"),
        (30_000, 5, 1, 29_999, "0000129999"), (100, 5, 0, 99, "0000099"), (101, 5, 4, 100, "00004100"),
        (10, 2, 123, 9, "1239"), (10_000, 5, 123_456, 7, "1234560007"), (1_000_000, 3, 12, 999_999, "012999999"),
    ]

    @Test("keys are img2dataset's, and each names its row back")
    func keysMatchImg2dataset() {
        for (rows, digits, shard, row, expected) in Self.img2datasetKeys {
            let format = BulkKeyFormat(shardSize: rows, shardDigits: digits)
            #expect(format.key(shard: shard, index: row) == expected, "\(rows) \(digits) \(shard) \(row)")
            #expect(format.index(ofKey: expected, shard: shard) == row, "\(expected)")
            // The same digits as another shard's key, or as this shard's key with other padding, are not
            // this shard's.
            #expect(format.index(ofKey: expected, shard: shard + 1) == nil, "\(expected)")
            #expect(format.index(ofKey: "0" + expected, shard: shard) == nil, "\(expected)")
        }
        let format = BulkKeyFormat(shardSize: 3)
        for key in ["", "00001a", "../../x", "00001", "0000010", "-00010", "+00010", String(repeating: "9", count: 40)]
        {
            #expect(format.index(ofKey: key, shard: 1) == nil, "\(key)")
        }
    }

    @Test("shard files are named with at least the shard digits, and read back only in that naming")
    func shardFileNames() {
        let five = BulkKeyFormat(shardSize: 10_000)
        #expect(five.stem(shard: 3) == "00003" && five.stem(shard: 123_456) == "123456")
        #expect(BulkKeyFormat(shardSize: 10, shardDigits: 2).stem(shard: 3) == "03")
        #expect(five.shard(ofFileName: "00003_stats.json") == 3)
        #expect(five.shard(ofFileName: "00003-retry2.jsonl") == 3)
        #expect(five.shard(ofFileName: "123456.tar") == 123_456)
        for name in ["0003_stats.json", "000003_stats.json", "plan.json", "_stats.json", "x00003.jsonl"] {
            #expect(five.shard(ofFileName: name) == nil, "\(name)")
        }
    }

    @Test("a plan records its key format; one written before keeps the fixed widths it was run with")
    func plansWithoutAKeyFormat() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("list.txt")
        try (0..<7).map { "http://127.0.0.1:9/\($0).png" }.joined(separator: "\n").write(
            to: input, atomically: true, encoding: .utf8)
        let made = try BulkPlan.make(
            input: input.path, columns: BulkColumns(), maxLineBytes: 1000, shardSize: 3, format: "webdataset")
        #expect(made.keyFormat == BulkKeyFormat(sampleDigits: 1, shardDigits: 5))
        let fresh = folder.appendingPathComponent("fresh")
        try FileManager.default.createDirectory(at: fresh, withIntermediateDirectories: true)
        #expect(try BulkPlan.settle(made, in: fresh).keys.key(shard: 2, index: 1) == "000021")
        let written = try String(contentsOf: fresh.appendingPathComponent("plan.json"), encoding: .utf8)
        #expect(written.contains("\"sampleDigits\" : 1") && written.contains("\"shardDigits\" : 5"), "\(written)")

        // The plan.json of an earlier version: the same fields but the key format.
        let old = folder.appendingPathComponent("old")
        try FileManager.default.createDirectory(at: old, withIntermediateDirectories: true)
        let earlier = """
            {"format": "webdataset", "input": "list.txt", "inputBytes": \(made.inputBytes), "rows": 7, \
            "shardSize": 3, "shards": 3}
            """
        try Data(earlier.utf8).write(to: old.appendingPathComponent("plan.json"))
        let settled = try BulkPlan.settle(made, in: old)
        #expect(settled.keyFormat == nil && settled.keys.key(shard: 2, index: 1) == "000020001")
        // Asking that output for other shard digits is refused, not ignored.
        let wider = try BulkPlan.make(
            input: input.path, columns: BulkColumns(), maxLineBytes: 1000, shardSize: 3, format: "webdataset",
            shardDigits: 6)
        #expect(throws: BulkInputError.self) { try BulkPlan.settle(wider, in: old) }
        #expect(throws: BulkInputError.self) { try BulkPlan.settle(wider, in: fresh) }
    }
}
