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
            ParquetColumn(name: "punsafe", type: .float, isNullable: true),
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
                indexes.map { .float(Float($0) / 10) },
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
            path: url.path,
            columns: BulkColumns(url: "URL", caption: "TEXT", saved: ["WIDTH", "similarity", "nsfw", "punsafe"]))
        var rows: [BulkRow] = []
        while let row = try reader.next() { rows.append(row) }
        #expect(rows.count == 7)
        #expect(rows.map(\.url) == (0..<7).map { "http://a/\($0).jpg" })
        #expect(rows.map(\.caption) == (0..<7).map { $0 == 1 ? nil : "caption \($0)" })
        #expect(
            rows[4].saved == [
                BulkColumnValue(name: "WIDTH", value: .int(104)), BulkColumnValue(name: "similarity", value: .null),
                BulkColumnValue(name: "nsfw", value: .bool(true)), BulkColumnValue(name: "punsafe", value: .float(0.4)),
            ])
        #expect(rows[6].saved[1] == BulkColumnValue(name: "similarity", value: .double(1.5)))
        // A float stays a float, written in JSON as the shortest decimal that reads back to it.
        #expect(rows[3].saved[3].value == .float(0.3) && rows[3].saved[3].value.text == "0.3")
        let json = try BulkSampleRecord(key: "k", url: "u", status: .success, saved: rows[3].saved).jsonData()
        #expect(
            String(decoding: json, as: UTF8.self).contains(#""punsafe":0.3,"#),
            "\(String(decoding: json, as: UTF8.self))")
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
        func row(_ key: String, image: Data?) -> SampleRow {
            SampleRow(
                key: key, record: BulkSampleRecord(key: key, url: "u", status: .success), json: Data("{}".utf8),
                image: image, fileExtension: "png", caption: Data("cap".utf8))
        }
        let finals: [SampleOutputFormat: String] = [
            .webdataset: "00001.tar", .files: "00001", .parquet: "00001.parquet", .tfrecord: "00001.tfrecord",
        ]
        for format in SampleOutputFormat.allCases {
            let writer = try format.makeWriter(stem: "00001", in: folder)
            try writer.write(row("000010000", image: Data([1, 2, 3])))
            try writer.write(row("000010001", image: nil))
            if format == .webdataset || format == .files {
                #expect(throws: BulkFileError.self) { try writer.write(row("../x", image: Data())) }
            }
            let final = finals[format].map { folder.appendingPathComponent($0) }
            if let final { #expect(!FileManager.default.fileExists(atPath: final.path)) }
            try writer.finish()
            if let final { #expect(FileManager.default.fileExists(atPath: final.path)) }
            if format == .files, let final {
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: final.path).sorted() == [
                        "000010000.json", "000010000.png", "000010000.txt",
                    ])
            }
            let abandoned = try format.makeWriter(stem: "00002", in: folder)
            try abandoned.write(row("000020000", image: Data([4])))
            abandoned.abandon()
        }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [
                "00001", "00001.parquet", "00001.tar", "00001.tfrecord",
            ])
    }

    @Test("The parquet format's images go through a spill file, a page per MiB, and read back byte for byte")
    func parquetImagesSpillAndReadBack() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var generator = SystemRandomNumberGenerator()
        // 600 KB of noise each (Snappy cannot shrink it): five images make three pages of the image column.
        let images: [Data?] = (0..<6).map { index in
            index == 2 ? nil : Data((0..<600_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        let url = folder.appendingPathComponent("00003.parquet")
        let writer = try ParquetSampleWriter(url: url, settings: BulkSettings())
        for (index, image) in images.enumerated() {
            let key = String(format: "00003%04d", index)
            try writer.write(
                SampleRow(
                    key: key, record: BulkSampleRecord(key: key, url: "u\(index)", status: .success),
                    json: Data(), image: image, fileExtension: "jpg", caption: nil))
        }
        // The pages cut so far are in the spill file, not in memory.
        let spill = ShardParquetWriter.spillURL(for: url)
        let spilled = try #require(try FileManager.default.attributesOfItem(atPath: spill.path)[.size] as? Int)
        #expect(spilled > 1_800_000, "\(spilled)")
        try writer.finish()
        #expect(!FileManager.default.fileExists(atPath: spill.path))
        let reader = try ParquetReader(path: url.path)
        let group = try reader.readRowGroup(0)
        #expect(group.columns.last?.name == "jpg" && group.columns.last?.type == .bytes)
        let read = try #require(group.column(named: "jpg"))
        #expect(read == images.map { $0.map { .bytes([UInt8]($0)) } ?? .null })
        #expect(group.column(named: "url") == (0..<6).map { .string("u\($0)") })
    }

    @Test("A shard's Parquet table: the record's fields in order, kept columns typed by their shared type")
    func shardParquetTable() {
        let records = [
            BulkSampleRecord(
                key: "000000000", url: "u", status: .success, width: 4,
                saved: [
                    .init(name: "a", value: .int(1)), .init(name: "b", value: .int(2)),
                    .init(name: "f", value: .float(0.1)),
                    .init(name: "g", value: .float(0.1)), .init(name: "h", value: .float(0.5)),
                ]),
            BulkSampleRecord(
                key: "000000001", url: "v", status: .failedToDownload, errorCode: "timedOut",
                saved: [
                    .init(name: "a", value: .null), .init(name: "b", value: .double(0.5)),
                    .init(name: "f", value: .null),
                    .init(name: "g", value: .double(0.25)), .init(name: "h", value: .int(3)),
                ]),
        ]
        let (schema, columns) = ShardParquetWriter.table(records, savedColumns: ["a", "b", "f", "g", "h"])
        #expect(
            schema.columns.map(\.name) == [
                "key", "url", "status", "error_message", "error_code", "caption", "ms", "attempts", "width", "height",
                "original_width", "original_height", "sha256", "a", "b", "f", "g", "h",
            ])
        #expect(schema.column(named: "a")?.type == .int64 && schema.column(named: "b")?.type == .double)
        #expect(columns[13] == [.int64(1), .null] && columns[14] == [.double(2), .double(0.5)])
        // Floats alone are float; floats with doubles or ints are double, each float as its shortest decimal.
        #expect(schema.column(named: "f")?.type == .float && columns[15] == [.float(0.1), .null])
        #expect(schema.column(named: "g")?.type == .double && columns[16] == [.double(0.1), .double(0.25)])
        #expect(schema.column(named: "h")?.type == .double && columns[17] == [.double(0.5), .double(3)])
        // The sizes are int32, as img2dataset's schema has them.
        #expect(columns[4] == [.null, .string("timedOut")] && columns[8] == [.int32(4), .null])
        #expect(schema.column(named: "width")?.type == .int32 && schema.column(named: "ms")?.type == .int64)
    }

    @Test("A shard's Parquet file, built a record at a time over several pages, holds the table's columns")
    func shardParquetFileIsTheTable() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let count = ShardParquetWriter.rowsPerPage * 2 + 345
        let records = (0..<count).map { index in
            let failed = index % 7 == 3
            return BulkSampleRecord(
                key: String(format: "%09d", index), url: "http://a/\(index).jpg",
                status: failed ? .failedToDownload : .success,
                errorMessage: failed ? "timed out after \(index) ms" : nil, errorCode: failed ? "timedOut" : nil,
                caption: index % 5 == 0 ? nil : "caption \(index)", milliseconds: index * 3, attempts: 1 + index % 3,
                width: failed ? nil : 32, height: failed ? nil : 24 + index % 2,
                originalWidth: failed ? nil : 640 + index, originalHeight: failed ? nil : 480,
                hash: failed ? nil : String(repeating: String(index % 16, radix: 16), count: 64),
                saved: [
                    .init(name: "punsafe", value: index % 11 == 0 ? .null : .float(Float(index) / 8)),
                    .init(name: "mixed", value: index == count - 1 ? .string("last") : .int(Int64(index))),
                    .init(name: "nsfw", value: .bool(index % 2 == 0)),
                ])
        }
        let url = folder.appendingPathComponent("00000.parquet")
        let writer = try ShardParquetWriter(
            url: url, savedColumns: ["punsafe", "mixed", "nsfw"], hashAlgorithm: .sha256)
        for record in records { try writer.append(record) }
        try writer.finish()

        let (schema, columns) = ShardParquetWriter.table(records, savedColumns: ["punsafe", "mixed", "nsfw"])
        let reader = try ParquetReader(path: url.path)
        #expect(reader.schema == schema && reader.rowCount == Int64(count) && reader.rowGroupCount == 1)
        let group = try reader.readRowGroup(0)
        #expect(group.values == columns)
        #expect(schema.column(named: "punsafe")?.type == .float && schema.column(named: "mixed")?.type == .string)
    }

    @Test(
        "A shard's Parquet file has a float column as float for pyarrow, with the same values",
        .enabled(if: ReferenceFiles.available, "make test sets up .venv-test with pyarrow"))
    func shardParquetFloatForPyarrow() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("00000.parquet")
        let values: [Float?] = [0.1, nil, 0.8999999761581421, 3.4028235e38, -0.0]
        let writer = try ShardParquetWriter(url: url, savedColumns: ["punsafe"], hashAlgorithm: nil)
        for (index, value) in values.enumerated() {
            try writer.append(
                BulkSampleRecord(
                    key: "00000000\(index)", url: "u", status: .success,
                    saved: [.init(name: "punsafe", value: value.map { .float($0) } ?? .null)]))
        }
        try writer.finish()
        let (header, rows) = try ReferenceFiles.pyarrowReading(url)
        let names = header["columns"] as? [String] ?? []
        let types = header["types"] as? [String] ?? []
        let column = try #require(names.firstIndex(of: "punsafe"))
        #expect(types.count == names.count && types[column] == "float", "\(types)")
        #expect(rows.map { $0[column] } == values.map { Tagged($0.map { .float($0) } ?? .null) })
    }
}
