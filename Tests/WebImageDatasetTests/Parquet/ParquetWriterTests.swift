import Foundation
import Testing

@testable import WebImageDataset

@Suite struct ParquetWriterTests {
    /// Writes two row groups of the sample table (pages of 300 rows) and returns the file and its rows.
    static func writeSample() throws -> (URL, [[ParquetValue]]) {
        let url = SampleTable.temporaryFile("sample.parquet")
        let first = SampleTable.columns(rows: 1000, seed: 7)
        let second = SampleTable.columns(rows: 234, seed: 8)
        let writer = try ParquetWriter(path: url.path, schema: SampleTable.schema, rowsPerPage: 300)
        try writer.writeRowGroup(first)
        try writer.writeRowGroup(second)
        try writer.close()
        return (url, zip(first, second).map { $0 + $1 })
    }

    @Test("what the writer writes reads back the same, every type with nulls and nested lists")
    func roundTrip() throws {
        let (url, columns) = try Self.writeSample()
        defer { try? FileManager.default.removeItem(at: url) }
        let reader = try ParquetReader(path: url.path)
        #expect(reader.schema == SampleTable.schema)
        #expect(reader.rowGroupCount == 2)
        #expect(reader.rowCount == 1234)
        let first = try reader.readRowGroup(0)
        let second = try reader.readRowGroup(1)
        for (index, column) in SampleTable.schema.columns.enumerated() {
            let read = (first.column(named: column.name) ?? []) + (second.column(named: column.name) ?? [])
            #expect(read.map(Tagged.init) == columns[index].map(Tagged.init), "\(column.name)")
        }
    }

    @Test(
        "pyarrow reads what the writer writes as the writer was given it",
        .enabled(if: ReferenceFiles.available, "make test sets up .venv-test with pyarrow"))
    func pyarrowReadsIt() throws {
        let (url, columns) = try Self.writeSample()
        defer {
            try? FileManager.default.removeItem(at: url)
            try? FileManager.default.removeItem(at: url.deletingPathExtension().appendingPathExtension("jsonl"))
        }
        let (header, rows) = try ReferenceFiles.pyarrowReading(url)
        #expect(header["columns"] as? [String] == SampleTable.schema.columns.map(\.name))
        #expect(header["row_groups"] as? Int == 2)
        // A float column is float (float32) for pyarrow, not double.
        let types = header["types"] as? [String] ?? []
        #expect(
            zip(SampleTable.schema.columns.map(\.name), types).filter { ["punsafe", "similarity"].contains($0.0) }
                .map { "\($0.0):\($0.1)" } == ["similarity:double", "punsafe:float"])
        #expect(rows.count == 1234)
        var differences = 0
        for (row, cells) in rows.enumerated() where differences < 5 {
            for (column, cell) in cells.enumerated() where cell != Tagged(columns[column][row]) {
                Issue.record(
                    "row \(row) column \(column): pyarrow read \(cell), written \(Tagged(columns[column][row]))")
                differences += 1
            }
        }
    }

    @Test("a value that does not fit its column is refused naming the column, and nothing is half written")
    func refusesMismatchedValues() throws {
        let url = SampleTable.temporaryFile("bad.parquet")
        defer { try? FileManager.default.removeItem(at: url) }
        let schema = ParquetSchema(columns: [
            ParquetColumn(name: "id", type: .int64, isNullable: false),
            ParquetColumn(name: "scores", type: .list(element: .double, elementNullable: false), isNullable: true),
        ])
        let writer = try ParquetWriter(path: url.path, schema: schema)
        let wrongType = #expect(throws: ParquetError.self) {
            try writer.writeRowGroup([[.int32(1)], [.null]])
        }
        #expect(wrongType?.column == "id")
        let nullInRequired = #expect(throws: ParquetError.self) {
            try writer.writeRowGroup([[.null], [.null]])
        }
        #expect(nullInRequired?.description == "column `id`: null in a required field")
        let nullElement = #expect(throws: ParquetError.self) {
            try writer.writeRowGroup([[.int64(1)], [.list([.double(1), .null])]])
        }
        #expect(nullElement?.column == "scores")
        #expect(throws: ParquetError.self) { try writer.writeRowGroup([[.int64(1)]]) }
        // The refused row groups left nothing behind: the file holds the one written after them.
        try writer.writeRowGroup([[.int64(5), .int64(6)], [.list([.double(0.5)]), .null]])
        try writer.close()
        let reader = try ParquetReader(path: url.path)
        #expect(reader.rowGroupCount == 1)
        let group = try reader.readRowGroup(0)
        #expect(group.column(named: "id") == [.int64(5), .int64(6)])
        #expect(group.column(named: "scores") == [.list([.double(0.5)]), .null])
        #expect(throws: ParquetError.self) {
            _ = try ParquetWriter(
                path: url.path,
                schema: ParquetSchema(columns: [
                    ParquetColumn(name: "x", type: .unsupported(reason: "struct"), isNullable: true)
                ]))
        }
    }
}
