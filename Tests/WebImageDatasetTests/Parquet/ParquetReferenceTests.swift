import Foundation
import Testing

@testable import WebImageDataset

/// The reader against pyarrow: every file generate.py writes reads, row by row and column by column, as
/// pyarrow reads it.
@Suite(.enabled(if: ReferenceFiles.available, "make test sets up .venv-test with pyarrow and fastparquet"))
struct ParquetReferenceTests {
    /// Compares every row group of `name` with pyarrow's reading; records at most a few differences.
    static func compare(_ name: String) throws {
        let (header, expectedRows) = try ReferenceFiles.expected(name)
        let reader = try ParquetReader(path: try ReferenceFiles.url(name).path)
        #expect(reader.schema.columns.map(\.name) == header["columns"] as? [String], "\(name)")
        #expect(reader.rowGroupCount == header["row_groups"] as? Int, "\(name)")
        #expect(reader.rowCount == Int64(expectedRows.count), "\(name)")
        var row = 0
        var differences = 0
        for group in 0..<reader.rowGroupCount {
            let values = try reader.readRowGroup(group)
            #expect(values.rowCount == reader.rowCount(ofRowGroup: group))
            for index in 0..<values.rowCount {
                guard row < expectedRows.count else {
                    Issue.record("\(name): more rows than pyarrow read")
                    return
                }
                let actual = values.row(index).map(Tagged.init)
                if actual != expectedRows[row] {
                    for column in actual.indices where actual[column] != expectedRows[row][column] {
                        Issue.record(
                            "\(name) row \(row) column \(values.columns[column].name): \(actual[column]) != pyarrow's \(expectedRows[row][column])"
                        )
                    }
                    differences += 1
                    if differences >= 5 { return }
                }
                row += 1
            }
        }
        #expect(row == expectedRows.count, "\(name): \(row) rows, pyarrow read \(expectedRows.count)")
    }

    @Test(
        "pyarrow files (each codec, dictionary on and off, data page v1 and v2) and fastparquet files read as pyarrow reads them"
    )
    func everyFileReadsAsPyarrowReadsIt() throws {
        let names = try ReferenceFiles.manifest().files.filter { $0 != "laion" }
        #expect(names.count == 21)
        for name in names {
            do {
                try Self.compare(name)
            } catch {
                Issue.record("\(name): \(error)")
            }
        }
    }

    @Test("the all-types files have the expected column types")
    func allTypesSchema() throws {
        let reader = try ParquetReader(path: try ReferenceFiles.url("types-snappy-dict-v1").path)
        let types = Dictionary(uniqueKeysWithValues: reader.schema.columns.map { ($0.name, $0.type) })
        #expect(types["s"] == .string)
        #expect(types["b"] == .bytes)
        #expect(types["fixed"] == .bytes)
        #expect(types["i32"] == .int32)
        #expect(types["i64"] == .int64)
        #expect(types["f32"] == .float)
        #expect(types["f64"] == .double)
        #expect(types["flag"] == .bool)
        #expect(types["tags"] == .list(element: .string, elementNullable: true))
        #expect(types["bbox"] == .list(element: .list(element: .double, elementNullable: true), elementNullable: true))
        #expect(types["ints"] == .list(element: .int32, elementNullable: false))
        #expect(reader.schema.column(named: "req")?.isNullable == false)
        #expect(reader.schema.column(named: "ints")?.isNullable == false)
        #expect(reader.schema.column(named: "bbox")?.isNullable == true)
    }

    @Test("a 100,000-row LAION-shaped file reads as pyarrow reads it, one row group and some columns at a time")
    func laion() throws {
        try Self.compare("laion")
        let reader = try ParquetReader(path: try ReferenceFiles.url("laion").path)
        #expect(reader.rowCount == 100_000)
        #expect(reader.rowGroupCount == 4)
        #expect(reader.schema.column(named: "width")?.type == .int64)
        #expect(reader.schema.column(named: "height")?.type == .int32)
        #expect(reader.schema.column(named: "punsafe")?.type == .float)
        #expect(reader.schema.column(named: "similarity")?.type == .double)
        let all = try reader.readRowGroup(2)
        let some = try reader.readRowGroup(2, columns: ["NSFW", "caption", "width"])
        #expect(some.columns.map(\.name) == ["NSFW", "caption", "width"])
        #expect(some.column(named: "caption") == all.column(named: "caption"))
        #expect(some.column(named: "width") == all.column(named: "width"))
        #expect(some.column(named: "NSFW") == all.column(named: "NSFW"))
        #expect(some.column(named: "url") == nil)
    }

    @Test("one reader serves row groups to several threads at once, each as read alone")
    func concurrentRowGroups() async throws {
        let reader = try ParquetReader(path: try ReferenceFiles.url("laion").path)
        let alone = try (0..<reader.rowGroupCount).map { try reader.readRowGroup($0).values }
        let together = try await withThrowingTaskGroup(of: (Int, [[ParquetValue]]).self) { group in
            for index in 0..<reader.rowGroupCount {
                group.addTask { (index, try reader.readRowGroup(index).values) }
            }
            return try await group.reduce(into: [Int: [[ParquetValue]]]()) { $0[$1.0] = $1.1 }
        }
        for index in alone.indices {
            #expect(together[index] == alone[index], "row group \(index)")
        }
    }

    @Test("corrupted GZIP, ZSTD and dictionary pages end in a ParquetError or a read, never a crash")
    func corruptedCompressedPages() throws {
        for name in ["types-gzip-plain-v1", "types-zstd-dict-v2", "fastparquet-zstd"] {
            let original = [UInt8](try Data(contentsOf: try ReferenceFiles.url(name)))
            let footerStart = original.count - 8 - Int(PlainDecoder.littleEndian(original, original.count - 8, 4))
            for position in stride(from: 4, to: footerStart, by: footerStart / 40) {
                var bytes = original
                bytes[position] ^= 0x5A
                do {
                    try CraftedFile.read(bytes)
                } catch is ParquetError {
                } catch {
                    Issue.record("\(name) byte \(position): \(error) is not a ParquetError")
                }
            }
        }
    }

    @Test("unsupported encodings, codecs and types throw an error naming the column and the feature")
    func unsupportedFeatures() throws {
        let refusals = try ReferenceFiles.manifest().errors
        #expect(refusals.count == 8)
        for refusal in refusals {
            let reader = try ParquetReader(path: try ReferenceFiles.url(refusal.name).path)
            let error = #expect(throws: ParquetError.self, "\(refusal.name)") {
                try reader.readRowGroup(0, columns: [refusal.column])
            }
            #expect(error?.kind == .unsupported, "\(refusal.name): \(String(describing: error))")
            let text = error?.description ?? ""
            #expect(text.hasPrefix("column `\(refusal.column)"), "\(refusal.name): \(text)")
            #expect(text.contains(refusal.feature), "\(refusal.name): \(text)")
            // Reading every column fails the same way rather than leaving the column out.
            #expect(throws: ParquetError.self) { try reader.readRowGroup(0) }
        }
        // The readable column of a file with unsupported ones still reads.
        let nested = try ParquetReader(path: try ReferenceFiles.url("nested").path)
        #expect(try nested.readRowGroup(0, columns: ["id"]).column(named: "id") == [.int64(1), .int64(2), .null])
    }
}
