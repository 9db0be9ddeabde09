import Foundation
import TestSupport

@testable import WebImageDataset

/// A table of every type the writer writes, with nulls, empty lists, null elements and nested lists.
enum SampleTable {
    static let schema = ParquetSchema(columns: [
        ParquetColumn(name: "url", type: .string, isNullable: false),
        ParquetColumn(name: "caption", type: .string, isNullable: true),
        ParquetColumn(name: "width", type: .int64, isNullable: true),
        ParquetColumn(name: "height", type: .int32, isNullable: true),
        ParquetColumn(name: "similarity", type: .double, isNullable: true),
        ParquetColumn(name: "punsafe", type: .float, isNullable: true),
        ParquetColumn(name: "ok", type: .bool, isNullable: true),
        ParquetColumn(name: "raw", type: .bytes, isNullable: true),
        ParquetColumn(name: "scores", type: .list(element: .double, elementNullable: true), isNullable: true),
        ParquetColumn(
            name: "bbox", type: .list(element: .list(element: .double, elementNullable: false), elementNullable: true),
            isNullable: true),
        ParquetColumn(name: "tags", type: .list(element: .string, elementNullable: false), isNullable: false),
    ])

    /// `rows` rows, column by column; the same for the same `seed`.
    static func columns(rows: Int, seed: UInt64) -> [[ParquetValue]] {
        var random = SeededGenerator(seed: seed)
        func maybe(_ value: ParquetValue) -> ParquetValue { random.next() % 7 == 0 ? .null : value }
        func double() -> Double {
            switch random.next() % 6 {
            case 0: -0.0
            case 1: .infinity
            case 2: Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF)
            default: Double(Int64(bitPattern: random.next()) % 1_000_000) / 1000
            }
        }
        let words = ["cat", "", "猫の写真", "emoji 🐕‍🦺", "quote \" \\", "line\nbreak"]
        var columns = [[ParquetValue]](repeating: [], count: schema.columns.count)
        for row in 0..<rows {
            let word = words[Int(random.next() % UInt64(words.count))]
            let values: [ParquetValue] = [
                .string("https://example.com/\(row).jpg"),
                maybe(.string(word)),
                maybe(.int64(Int64(bitPattern: random.next()))),
                maybe(.int32(Int32(truncatingIfNeeded: random.next()))),
                maybe(.double(double())),
                maybe(.float(Float(double()))),
                maybe(.bool(random.next() % 2 == 0)),
                maybe(.bytes((0..<Int(random.next() % 6)).map { _ in UInt8(truncatingIfNeeded: random.next()) })),
                maybe(.list((0..<Int(random.next() % 4)).map { _ in maybe(.double(double())) })),
                maybe(
                    .list(
                        (0..<Int(random.next() % 3)).map { _ in
                            maybe(.list((0..<Int(random.next() % 5)).map { _ in .double(double()) }))
                        })),
                .list((0..<Int(random.next() % 3)).map { _ in .string(words[Int(random.next() % 6)]) }),
            ]
            for (column, value) in values.enumerated() { columns[column].append(value) }
        }
        return columns
    }

    /// A temporary file path that the caller removes.
    static func temporaryFile(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("webimage-\(UUID().uuidString)-\(name)")
    }
}
