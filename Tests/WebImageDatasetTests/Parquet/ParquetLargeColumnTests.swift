import Foundation
import Testing

@testable import WebImageDataset

/// Row groups of many rows made of few bytes (RLE runs of dictionary indices, a writer's fallback from a
/// dictionary to PLAIN mid-chunk), written by pyarrow: every row reads back, nulls in their places, and
/// a dictionary column is kept as its dictionary and an index per row.
@Suite(
    .enabled(if: ReferenceFiles.available, "make test-python sets up .venv-test with pyarrow"),
    .timeLimit(.minutes(5)))
struct ParquetLargeColumnTests {
    /// Writes `rows` rows to `path` with pyarrow, in one row group: `url`, a dictionary-encoded string
    /// column of `distinct` repeated URLs, null where `row % 7 == 3`, and `n`, an int64 column `row`.
    /// `fallback` makes the dictionary too small to hold the URLs, so pyarrow goes on in PLAIN pages.
    static func write(_ path: String, rows: Int, distinct: Int, fallback: Bool = false) throws {
        let script = """
            import sys, pyarrow as pa, pyarrow.parquet as pq
            rows, distinct, fallback = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
            urls = pa.array(["https://example.com/images/%d.jpg" % (i % distinct) for i in range(distinct)])
            indices = pa.array([None if i % 7 == 3 else i % distinct for i in range(rows)], pa.int32())
            table = pa.table({"url": urls.take(indices), "n": pa.array(range(rows), pa.int64())})
            pq.write_table(
                table, sys.argv[1], row_group_size=rows, compression="snappy",
                dictionary_pagesize_limit=4096 if fallback else 1 << 20, data_page_size=64 << 10)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ReferenceFiles.python)
        process.arguments = ["-c", script, path, String(rows), String(distinct), fallback ? "1" : "0"]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "pyarrow could not write \(path)")
    }

    static func expectedURL(_ row: Int, distinct: Int) -> String? {
        row % 7 == 3 ? nil : "https://example.com/images/\(row % distinct).jpg"
    }

    @Test("2^18 rows of a repeated URL read back row by row, kept as the dictionary and an index per row")
    func repeatedURLs() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("parquet-large-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("urls.parquet").path
        // 2^18 rows are many RLE runs over several pages; more only keeps a thread of Swift's cooperative pool
        // busy longer in a debug build, which the async tests beside it wait for.
        let rows = 1 << 18
        try Self.write(path, rows: rows, distinct: 3)
        let group = try ParquetReader(path: path).readRowGroup(0, columns: ["url", "n"])
        #expect(group.rowCount == rows)
        var mismatches = 0
        for row in 0..<rows {
            let url = Self.expectedURL(row, distinct: 3).map { ParquetValue.string($0) } ?? .null
            if group.value(row: row, column: 0) != url || group.value(row: row, column: 1) != .int64(Int64(row)) {
                mismatches += 1
            }
        }
        #expect(mismatches == 0)
        #expect(group.row(11) == [.string("https://example.com/images/2.jpg"), .int64(11)])
        #expect(group.row(3) == [.null, .int64(3)])
        #expect(group.values[0].count == rows && group.values[0][17] == group.value(row: 17, column: 0))

        // The planning pass and the rows the engine reads: nulls are empty URLs, in their places.
        let reader = try ParquetRowReader(path: path, columns: BulkColumns(url: "url", saved: ["n"]))
        var count = 0
        mismatches = 0
        while let row = try reader.next() {
            if row.url != Self.expectedURL(count, distinct: 3) ?? "" || row.saved.first?.value != .int(Int64(count)) {
                mismatches += 1
            }
            count += 1
        }
        #expect(count == rows && mismatches == 0)
        let plan = try BulkPlan.make(
            input: path, columns: BulkColumns(url: "url"), maxLineBytes: 1 << 20, shardSize: 10_000,
            format: "webdataset")
        #expect(plan.rows == rows && plan.shards == (rows + 9_999) / 10_000)
    }

    @Test("a dictionary that falls back to PLAIN pages mid-chunk reads back in order")
    func dictionaryFallback() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("parquet-large-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("fallback.parquet").path
        let rows = 200_000
        let distinct = 50_000
        try Self.write(path, rows: rows, distinct: distinct, fallback: true)
        let reader = try ParquetReader(path: path)
        let group = try reader.readRowGroup(0, columns: ["url"])
        var mismatches = 0
        for row in 0..<rows {
            let url = Self.expectedURL(row, distinct: distinct).map { ParquetValue.string($0) } ?? .null
            if group.value(row: row, column: 0) != url { mismatches += 1 }
        }
        #expect(group.rowCount == rows && mismatches == 0)
    }

    @Test("untrimmed URLs lose the spaces and tabs at their ends, as Foundation's trimming has it")
    func trimming() {
        for text in [
            "", " ", "\t a b \t", "\u{3000}https://x/\u{00A0}", "https://x/y", " \u{1F600} ", "a\u{200B}",
            "\u{2028}b\u{85}",
        ] {
            #expect(
                ParquetRowReader.trimmingSpaces(text) == text.trimmingCharacters(in: .whitespaces),
                "\(text.debugDescription)")
        }
    }
}
