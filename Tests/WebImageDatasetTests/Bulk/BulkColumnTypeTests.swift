import Foundation
import TestSupport
import Testing

@testable import WebImageDataset

/// The Python of `.venv-img2dataset` (img2dataset 1.47 with its pandas and pyarrow; `make test-python`).
private let img2datasetPython = Fixtures.packageRoot.appendingPathComponent(".venv-img2dataset/bin/python3").path

/// The kept columns' types (``BulkColumnType``) and values of CSV, TSV, JSON Lines and JSON inputs, against
/// what img2dataset 1.47's own `Reader` hands its downloader for the same files
/// (Tests/Fixtures/img2dataset/reader_column_types.py): the type of each column and every cell.
@Suite(
    "Kept columns typed as img2dataset's reader types them", .timeLimit(.minutes(5)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: img2datasetPython),
        "make test-python sets up .venv-img2dataset"))
struct BulkColumnTypeTests {
    struct Input: Sendable, CustomStringConvertible {
        let name: String
        let text: String
        /// Columns whose type differs on purpose (README): img2dataset's type, and ours.
        var differences: [String: [String]] = [:]
        var description: String { name }
    }

    static let inputs: [Input] = [
        Input(
            name: "list.csv",
            text: """
                url,ints,hex,bools,mixed_bool,doubles,plus,inf,nulls,texts,null_texts,spaced,big,date
                http://127.0.0.1/1,1,0x1F,true,1,1.5,+5,inf,,x,NA, 5 ,9223372036854775807,2020-01-01
                http://127.0.0.1/2,-2,0X10,False,true,2,-0,-Infinity,NA,NA,null,6\t,9223372036854775808,2021-02-03
                http://127.0.0.1/3,,0xFFFFFFFFFFFFFFFF,TRUE,0,1e3,007,INF,n/a,,,7,1,2022-12-31
                http://127.0.0.1/4,007,0,0,FALSE,.5,1.,1,#N/A,"a,b",-nan,8,2,2023-01-01

                """,
            differences: ["date": ["date32[day]", "string"]]),
        Input(
            name: "list.tsv",
            text: "url\tn\tflag\tx\n"
                + "http://127.0.0.1/1\t3\tTrue\t1.25\nhttp://127.0.0.1/2\t4\tfalse\tNaN\nhttp://127.0.0.1/3\tNULL\t1\t-3\n"
        ),
        Input(
            name: "list.jsonl",
            text: """
                {"url": "http://127.0.0.1/1", "n": 1, "x": 1, "b": true, "s": "3", "z": null, "m": 1.0}
                {"url": "http://127.0.0.1/2", "n": 2, "x": 2.5, "b": false, "s": "x", "m": 2.0}
                {"url": "http://127.0.0.1/3", "n": null, "x": 3, "b": null, "s": null, "z": null, "m": 3}

                """),
        Input(
            name: "list.json",
            text: """
                [{"url": "http://127.0.0.1/1", "n": 1, "numeric": "007", "whole": 1.0, "half": 1.5, "b": true,
                  "bn": true, "s": "x", "nn": 1, "z": null, "e": "1e3", "bi": true},
                 {"url": "http://127.0.0.1/2", "n": 2, "numeric": "8", "whole": 2.0, "half": 2, "b": false,
                  "bn": null, "s": "y", "z": null, "e": " 2 ", "bi": 5},
                 {"url": "http://127.0.0.1/3", "n": 3, "numeric": "-9", "whole": 3, "half": 3, "b": true,
                  "bn": false, "s": null, "nn": 2, "z": null, "e": "inf", "bi": 0}]
                """),
    ]

    @Test(arguments: inputs)
    func theTypesAndCellsAreImg2datasetsReaders(_ input: Input) async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent(input.name).path
        try input.text.write(toFile: path, atomically: true, encoding: .utf8)
        let header = try Self.columnNames(input)
        let saved = header.filter { $0 != "url" }
        let format = (input.name as NSString).pathExtension

        let script = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/img2dataset/reader_column_types.py")
        let reference = try await CLIRunner.runProgram(img2datasetPython, [script.path, path, format] + saved)
        #expect(reference.status == 0, "\(reference.stderr)")
        let json = try #require(
            // The last line: img2dataset's reader prints its progress before it.
            try JSONSerialization.jsonObject(
                with: Data((reference.stdout.split(separator: "\n").last ?? "").utf8)) as? [String: Any],
            "\(reference.stdout)")
        let theirTypes = try #require(json["types"] as? [String: String])
        let theirRows = try #require(json["rows"] as? [[[String]]])

        let columns = BulkColumns(saved: saved)
        let plan = try BulkPlan.make(
            input: path, columns: columns, maxLineBytes: 1 << 20, shardSize: 10, format: "webdataset")
        let types = try #require(plan.columnTypes)
        var differences: [String: [String]] = [:]
        for name in saved {
            let theirs = theirTypes[name] ?? "?"
            let ours = types[name]?.rawValue ?? "?"
            if theirs != ours && !(theirs == "large_string" && ours == "string") { differences[name] = [theirs, ours] }
        }
        #expect(differences == input.differences, "\(theirTypes) against \(types)")

        let reader = try BulkInput.open(path: path, columns: columns)
        var rows: [BulkRow] = []
        while let row = try reader.next() { rows.append(plan.typed(row)) }
        #expect(rows.count == theirRows.count)
        for (ours, theirs) in zip(rows, theirRows) {
            for (index, cell) in ours.saved.enumerated() where input.differences[cell.name] == nil {
                let expected = theirs[index]
                let actual = Self.cell(cell.value)
                if expected[0] == "double" && actual[0] == "double" {
                    #expect(Double(expected[1]) == Double(actual[1]), "\(ours.url) \(cell.name)")
                } else {
                    #expect(actual == expected, "\(ours.url) \(cell.name): \(actual) against \(expected)")
                }
            }
        }
    }

    @Test("A plan written before the types were recorded keeps its rerun's kept columns as text")
    func anOlderPlanKeepsText() throws {
        let plan = BulkPlan(input: "list.jsonl", inputBytes: 1, rows: 1, shardSize: 10, shards: 1, format: "webdataset")
        let row = BulkRow(
            url: "u",
            saved: [
                .init(name: "n", value: .int(3)), .init(name: "b", value: .bool(true)), .init(name: "z", value: .null),
            ])
        #expect(plan.typed(row).saved.map(\.value) == [.string("3"), .string("true"), .string("")])
        var typed = plan
        typed.columnTypes = ["n": .double, "b": .bool, "z": .null]
        #expect(typed.typed(row).saved.map(\.value) == [.double(3), .bool(true), .null])
    }

    /// The header's names (the first object's keys, in order, for JSON).
    static func columnNames(_ input: Input) throws -> [String] {
        let first = input.text.split(separator: "\n").first.map(String.init) ?? ""
        if input.name.hasSuffix(".csv") { return first.split(separator: ",").map(String.init) }
        if input.name.hasSuffix(".tsv") { return first.split(separator: "\t").map(String.init) }
        // JSON: the keys in the order they first appear.
        var names: [String] = []
        let pattern = try NSRegularExpression(pattern: #""([a-z_]+)":"#)
        let text = input.text as NSString
        for match in pattern.matches(in: input.text, range: NSRange(location: 0, length: text.length)) {
            let name = text.substring(with: match.range(at: 1))
            if !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// A value as the script prints one: kind and text.
    static func cell(_ value: BulkValue) -> [String] {
        switch value {
        case .null: ["null", ""]
        case .bool(let truth): ["bool", truth ? "true" : "false"]
        case .int(let number): ["int", String(number)]
        case .double(let number): ["double", number.isInfinite ? (number < 0 ? "-inf" : "inf") : String(number)]
        case .float(let number): ["double", String(number)]
        case .string(let text): ["string", text]
        }
    }
}
