import Foundation
import Testing

@testable import WebImageDataset

/// The Parquet row reader and the sample writers on their own.
@Suite("Bulk readers and writers")
struct BulkReadersAndWritersTests {
    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-rw-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// A LAION-shaped file of `rows` rows in row groups of 3, written by ``ParquetWriter``.
    static func laion(_ url: URL, rows: Int) throws {
        let schema = ParquetSchema(columns: [
            ParquetColumn(name: "URL", type: .string, isNullable: false),
            ParquetColumn(name: "TEXT", type: .string, isNullable: true),
            ParquetColumn(name: "WIDTH", type: .int32, isNullable: true),
            ParquetColumn(name: "similarity", type: .double, isNullable: true),
            ParquetColumn(name: "nsfw", type: .bool, isNullable: false),
            ParquetColumn(name: "tags", type: .list(element: .string, elementNullable: true), isNullable: true),
        ])
        let writer = try ParquetWriter(path: url.path, schema: schema)
        for start in stride(from: 0, to: rows, by: 3) {
            let indexes = Array(start..<min(rows, start + 3))
            try writer.writeRowGroup([
                indexes.map { .string(" http://a/\($0).jpg") },
                indexes.map { $0 == 1 ? .null : .string("caption \($0)") },
                indexes.map { .int32(Int32(100 + $0)) },
                indexes.map { $0 == 4 ? .null : .double(Double($0) / 4) },
                indexes.map { .bool($0 % 2 == 0) },
                indexes.map { _ in .list([.string("x")]) },
            ])
        }
        try writer.close()
    }

    @Test("ParquetRowReader reads every row group's URL, caption and kept columns with their types")
    func parquetRowsKeepTheirTypes() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("laion.parquet")
        try Self.laion(url, rows: 7)
        let reader = try BulkInput.open(
            path: url.path, columns: BulkColumns(url: "URL", caption: "TEXT", saved: ["WIDTH", "similarity", "nsfw"]))
        var rows: [BulkRow] = []
        while let row = try reader.next() { rows.append(row) }
        #expect(rows.count == 7)
        #expect(rows.map(\.url) == (0..<7).map { "http://a/\($0).jpg" })
        #expect(rows.map(\.caption) == (0..<7).map { $0 == 1 ? nil : "caption \($0)" })
        #expect(
            rows[4].saved == [
                BulkColumnValue(name: "WIDTH", value: .int(104)), BulkColumnValue(name: "similarity", value: .null),
                BulkColumnValue(name: "nsfw", value: .bool(true)),
            ])
        #expect(rows[6].saved[1] == BulkColumnValue(name: "similarity", value: .double(1.5)))
        // The plan counts the rows the same way.
        let plan = try BulkPlan.make(
            input: url.path, columns: BulkColumns(url: "URL"), maxLineBytes: 100, shardSize: 5, format: "webdataset")
        #expect(plan.rows == 7 && plan.shards == 2)
    }

    @Test("ParquetRowReader refuses a missing column and a list column, naming them")
    func parquetRowReaderRefusals() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("laion.parquet")
        try Self.laion(url, rows: 2)
        #expect {
            _ = try BulkInput.open(path: url.path, columns: BulkColumns(url: "url"))
        } throws: { error in
            "\(error)".contains("no column 'url'") && "\(error)".contains("URL, TEXT")
        }
        #expect {
            _ = try BulkInput.open(path: url.path, columns: BulkColumns(url: "tags"))
        } throws: { error in
            "\(error)".contains("column 'tags'") && "\(error)".contains("list<string")
        }
        #expect(BulkInputFormat(fileName: "a.parquet.gz") == nil)
        #expect(BulkInputFormat(fileName: "A.PARQUET") == .parquet)
    }

    @Test("Sample writers: nothing under the final name until finish; abandon leaves nothing")
    func sampleWritersCommitOrAbandon() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        for format in SampleOutputFormat.allCases {
            let writer = try format.makeWriter(stem: "00001", in: folder)
            try writer.write(
                key: "000010000", image: Data([1, 2, 3]), fileExtension: "png", json: Data("{}".utf8),
                caption: Data("cap".utf8))
            #expect(throws: BulkFileError.self) {
                try writer.write(key: "../x", image: Data(), fileExtension: "png", json: Data(), caption: nil)
            }
            let final = folder.appendingPathComponent(format == .webdataset ? "00001.tar" : "00001")
            #expect(!FileManager.default.fileExists(atPath: final.path))
            try writer.finish()
            #expect(FileManager.default.fileExists(atPath: final.path))
            if format == .files {
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: final.path).sorted() == [
                        "000010000.json", "000010000.png", "000010000.txt",
                    ])
            }
            let abandoned = try format.makeWriter(stem: "00002", in: folder)
            abandoned.abandon()
        }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["00001", "00001.tar"])
    }

    @Test("A shard's Parquet table: the record's fields in order, kept columns typed by their shared type")
    func shardParquetTable() {
        let records = [
            BulkSampleRecord(
                key: "000000000", url: "u", status: .success, width: 4,
                saved: [.init(name: "a", value: .int(1)), .init(name: "b", value: .int(2))]),
            BulkSampleRecord(
                key: "000000001", url: "v", status: .failed, errorCode: "timedOut",
                saved: [.init(name: "a", value: .null), .init(name: "b", value: .double(0.5))]),
        ]
        let (schema, columns) = ShardParquetWriter.table(records, savedColumns: ["a", "b"])
        #expect(
            schema.columns.map(\.name) == [
                "key", "url", "status", "error", "error_code", "caption", "ms", "attempts", "width", "height",
                "original_width", "original_height", "sha256", "a", "b",
            ])
        #expect(schema.column(named: "a")?.type == .int64 && schema.column(named: "b")?.type == .double)
        #expect(columns[13] == [.int64(1), .null] && columns[14] == [.double(2), .double(0.5)])
        #expect(columns[4] == [.null, .string("timedOut")] && columns[8] == [.int64(4), .null])
    }
}
