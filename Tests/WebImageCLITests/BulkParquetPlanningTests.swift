import Foundation
import TestSupport
import Testing

/// `webimage bulk`'s planning pass over a Parquet file of many rows in few bytes: one column of a
/// repeated URL, dictionary-encoded, so millions of rows are RLE runs of a few kilobytes.
@Suite(
    "webimage bulk planning a Parquet file of many RLE rows", .timeLimit(.minutes(10)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: BulkCommandTests.webdatasetPython),
        "make test-python sets up .venv-test with pyarrow"))
struct BulkParquetPlanningTests {
    @Test("2^22 rows of one repeated URL are planned in memory linear in an index per row")
    func manyRepeatedRows() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("repeated.parquet")
        let rows = 1 << 22
        _ = try await BulkParquetTests.python(
            """
            import sys, pyarrow as pa, pyarrow.parquet as pq
            rows = int(sys.argv[2])
            url = pa.array(["https://example.com/a/long/path/to/the/one/image/everyone/links.jpg"])
            table = pa.table({"url": url.take(pa.array([0] * rows, pa.int32()))})
            pq.write_table(table, sys.argv[1], row_group_size=rows)
            """, [input.path, String(rows)])
        let fileSize = try #require(try FileManager.default.attributesOfItem(atPath: input.path)[.size] as? Int)
        let run = try await CLIRunner.run(
            "webimage", ["bulk", input.path, "--output", folder.appendingPathComponent("out").path, "--plan-only"])
        #expect(run.status == 0, "\(run.stderr)")
        let plan = try #require(try CLIRunner.jsonObjects(run).first)
        #expect(plan["rows"] as? Int == rows)
        #expect(plan["shards"] as? Int == rows / 10_000 + 1)
        print("planning \(rows) rows (\(fileSize) bytes of Parquet): peak RSS \(run.peakRSSKiB / 1024) MB")
        // A ParquetValue per row, as the reader once kept (twice, with the row group before it), is over
        // 200 MB here; the dictionary and a 4-byte index per row are 16 MB. A sanitizer's shadow memory
        // and quarantine make the figure its own: measured then, not asserted.
        guard !Sanitizers.shadowMemorySanitizerIsOn else { return }
        #expect(run.peakRSSKiB > 0 && run.peakRSSKiB < 150 * 1024, "peak RSS \(run.peakRSSKiB) KiB")
    }
}
