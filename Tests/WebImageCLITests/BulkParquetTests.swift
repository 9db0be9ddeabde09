import Foundation
import TestSupport
import Testing

/// `webimage bulk` with a Parquet URL list in, and the Parquet file each shard writes, checked with pyarrow.
@Suite(
    "webimage bulk with Parquet", .timeLimit(.minutes(10)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: BulkCommandTests.webdatasetPython),
        "make test-python sets up .venv-test with pyarrow"))
struct BulkParquetTests {
    /// Runs `script` with the test Python (pyarrow), `arguments` after it; its stdout lines.
    static func python(_ script: String, _ arguments: [String]) async throws -> [String] {
        let run = try await CLIRunner.runProgram(BulkCommandTests.webdatasetPython, ["-c", script] + arguments)
        #expect(run.status == 0, "\(run.stderr)")
        return run.stdoutLines
    }

    /// Writes a LAION-shaped file: URL, TEXT (a null caption among them), WIDTH, HEIGHT (int64) and
    /// similarity (double, one null), in row groups of 4 rows.
    static let writeLAION = """
        import sys, pyarrow as pa, pyarrow.parquet as pq
        urls = sys.argv[2:]
        n = len(urls)
        table = pa.table({
            "URL": pa.array(urls, pa.string()),
            "TEXT": pa.array([None if i == 2 else "caption %d" % i for i in range(n)], pa.string()),
            "WIDTH": pa.array([24 + i for i in range(n)], pa.int64()),
            "HEIGHT": pa.array([16] * n, pa.int64()),
            "similarity": pa.array([None if i == 5 else 0.25 + i / 100 for i in range(n)], pa.float64()),
            "punsafe": pa.array([0.5] * n, pa.float32()),
        })
        pq.write_table(table, sys.argv[1], row_group_size=4)
        """

    @Test("a LAION-shaped Parquet list runs like a CSV one; kept columns keep their types")
    func laionShapedParquetIn() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = (0..<14).map { server.url("/gen/\($0).png").absoluteString }
        let input = folder.appendingPathComponent("laion.parquet")
        _ = try await Self.python(Self.writeLAION, [input.path] + urls)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", input.path, "--output", output.path, "--url-col", "URL",
                "--caption-col", "TEXT", "--save-cols", "WIDTH,similarity", "--shard-size", "5", "--size", "16",
                "--encode", "png",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try BulkCommandTests.jsonl(output).sorted {
            ($0["key"] as? String ?? "") < ($1["key"] as? String ?? "")
        }
        #expect(rows.compactMap { $0["url"] as? String } == urls)
        let captions: [String?] = (0..<14).map { $0 == 2 ? nil : "caption \($0)" }
        #expect(rows.map { $0["caption"] as? String } == captions)
        let widths: [Int?] = (0..<14).map { 24 + $0 }
        #expect(rows.map { $0["WIDTH"] as? Int } == widths)
        let similarities: [Double?] = (0..<14).map { $0 == 5 ? nil : 0.25 + Double($0) / 100 }
        // Compared within 1e-12: swift-corelibs-foundation's JSONSerialization parses 0.33999999999999997 as
        // 0.33999999999999986 (the file has the exact digits; the Parquet test compares with Python's json).
        let read = rows.map { $0["similarity"] as? Double }
        #expect(read.map { $0 == nil } == similarities.map { $0 == nil })
        #expect(zip(read, similarities).allSatisfy { abs(($0 ?? 0) - ($1 ?? 0)) < 1e-12 }, "\(read)")
        let statuses = rows.map { $0["status"] as? String ?? "" }
        let codes = rows.map { $0["error_code"] as? String ?? "" }
        #expect(statuses.contains("success"))
        #expect(codes.contains("invalidDownloadStatusCode"))
        // Rows 10…13 are shard 2's: shards of 5 rows keep one digit of row (shard × 10 + row, 6 digits).
        #expect(rows.last?["key"] as? String == "000023")
    }

    @Test("each shard's Parquet file holds its jsonl's rows and columns, PLAIN and SNAPPY, as pyarrow reads it")
    func parquetOutMatchesJSONL() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = folder.appendingPathComponent("list.csv")
        let lines =
            ["url,caption,license"] + (0..<23).map { "\(server.url("/gen/\($0).png").absoluteString),c\($0),cc" }
        try lines.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--caption-col",
                "caption", "--save-cols", "license", "--shard-size", "10", "--size", "16",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let script = """
            import glob, json, os, sys, pyarrow.parquet as pq
            shards = sorted(glob.glob(os.path.join(sys.argv[1], "?????.jsonl")))
            assert len(shards) == 3, shards
            for jsonl in shards:
                path = jsonl[:-len(".jsonl")] + ".parquet"
                expected = [json.loads(line) for line in open(jsonl)]
                table = pq.read_table(path)
                assert sorted(table.column_names) == sorted(expected[0].keys()), (table.column_names, expected[0])
                assert table.to_pylist() == expected, (table.to_pylist(), expected)
                meta = pq.ParquetFile(path).metadata
                for g in range(meta.num_row_groups):
                    for c in range(meta.num_columns):
                        column = meta.row_group(g).column(c)
                        assert column.compression == "SNAPPY", column
                        assert "PLAIN" in column.encodings, column
                print(os.path.basename(path), table.num_rows)
            """
        let printed = try await Self.python(script, [output.path])
        #expect(printed == ["00000.parquet 10", "00001.parquet 10", "00002.parquet 3"])
    }

    @Test("a Parquet file it cannot read ends with exit 2, naming the column and the feature")
    func unreadableParquetFails() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = """
            import sys, pyarrow as pa, pyarrow.parquet as pq
            pq.write_table(pa.table({"url": pa.array([["http://a/1.jpg"]], pa.list_(pa.string()))}), sys.argv[1] + "/list.parquet")
            pq.write_table(pa.table({"url": pa.array(["http://a/1.jpg"], pa.string())}), sys.argv[1] + "/brotli.parquet", compression="brotli")
            """
        _ = try await Self.python(script, [folder.path])
        let cases: [(String, [String], [String])] = [
            ("list.parquet", [], ["'url'", "list<string"]),
            ("brotli.parquet", [], ["url", "BROTLI"]),
            ("brotli.parquet", ["--caption-col", "TEXT"], ["no caption column 'TEXT'"]),
        ]
        for (name, extra, expected) in cases {
            let run = try await CLIRunner.run(
                "webimage",
                [
                    "bulk", "--allow-destination", "127.0.0.0/8", folder.appendingPathComponent(name).path,
                    "--output", folder.appendingPathComponent("out-\(name)-\(extra.count)").path,
                ] + extra)
            #expect(run.status == 2, "\(name): \(run.stderr)")
            for text in expected { #expect(run.stderr.contains(text), "\(name): \(run.stderr)") }
        }
    }
}
