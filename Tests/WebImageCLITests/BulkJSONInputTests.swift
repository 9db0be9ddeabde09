import Foundation
import TestSupport
import Testing

/// `webimage bulk` with a `.json` input (an array of objects, as img2dataset reads with pandas) and the
/// errors of damaged `.json` and `.jsonl` inputs, run as built. Every URL is `http://127.0.0.1:9/…`
/// (``BulkInputTests/bulk(_:output:_:)``).
@Suite("webimage bulk JSON input", .timeLimit(.minutes(10)))
struct BulkJSONInputTests {
    @Test(
        "a .json and .json.gz array of records reads the rows pandas' read_json reads, with --input_format json",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: BulkCommandTests.webdatasetPython),
            "make test-python sets up .venv-test with pandas"))
    func recordsReadAsPandasReadsThem() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = folder.appendingPathComponent("list.json")
        // pandas writes the file (records orientation, one value of each JSON type, pretty-printed so that
        // objects span lines) and reads it back as img2dataset does: the rows webimage must read.
        let script = """
            import gzip, json, shutil, sys, pandas as pd
            rows = [{"url": "http://127.0.0.1:9/%d.png" % i, "caption": "a {[\\"quoted\\"]}, \\u00e9 %d" % i,
                     "n": i, "tags": ["x", i] if i % 2 else None} for i in range(7)]
            text = json.dumps(rows, indent=2, ensure_ascii=False)
            open(sys.argv[1], "w", encoding="utf-8").write(text)
            with open(sys.argv[1], "rb") as src, gzip.open(sys.argv[1] + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            frame = pd.read_json(sys.argv[1])
            print(json.dumps([[row["url"], row["caption"], int(row["n"])] for _, row in frame.iterrows()]))
            """
        let python = try await CLIRunner.runProgram(BulkCommandTests.webdatasetPython, ["-c", script, list.path])
        #expect(python.status == 0, "\(python.stderr)")
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(python.stdout.utf8)) as? [[Any]])
        #expect(expected.count == 7)
        for (input, format) in [(list, "json"), (folder.appendingPathComponent("list.json.gz"), "json.gz")] {
            let output = folder.appendingPathComponent("out-" + format)
            let run = try await BulkInputTests.bulk(
                input, output: output,
                ["--input_format", format, "--caption_col", "caption", "--save_additional_columns", "[n,tags]"])
            #expect(run.status == 0, "\(format): \(run.stderr)")
            let rows = try BulkInputTests.rows(output)
            #expect(rows.map { $0["url"] as? String } == expected.map { $0[0] as? String }, "\(format)")
            #expect(rows.map { $0["caption"] as? String } == expected.map { $0[1] as? String }, "\(format)")
            // pandas reads `n` as int64: a JSON number in bulk's records too. A list stays its JSON text, and
            // a null is null.
            #expect(rows.map { $0["n"] as? Int } == expected.map { $0[2] as? Int }, "\(format)")
            #expect(rows.map { $0["tags"] as? String } == (0..<7).map { $0 % 2 == 1 ? "[\"x\",\($0)]" : nil })
        }
    }

    @Test("a damaged .json input is an error naming its line and the rows before it, and nothing is downloaded")
    func damagedJSONIsAnErrorNamingTheLine() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let good = #"{"url": "http://127.0.0.1:9/0.png"}"#
        let cases: [(String, String)] = [
            ("[\n\(good),\n\(good),\n{\"url\": }\n]", "line 4 (after row 2): not valid JSON"),
            ("[\n\(good),\n\"http://127.0.0.1:9/1.png\"\n]", "line 3 (after row 1): the element is not an object"),
            ("[\n\(good)\n\(good)\n]", "line 3 (after row 1): expected ',' or ']'"),
            ("[\n\(good),\n{\"url\": \"x\"\n", "line 3 (after row 1): the object that starts here is not closed"),
            ("[\n\(good),\n", "(after row 1): the array is not closed"),
            ("[\(good)]\n[\(good)]", "(after row 1): text follows the array's closing ']'"),
            (#"{"url": {"0": "http://127.0.0.1:9/0.png"}}"#, "line 1 is a JSON object (pandas' columns orientation)"),
            ("", "is empty: a .json input is an array of objects"),
        ]
        for (index, (text, message)) in cases.enumerated() {
            let list = try BulkInputTests.write(text, to: folder, name: "list\(index).json")
            let output = folder.appendingPathComponent("out\(index)")
            let run = try await BulkInputTests.bulk(list, output: output)
            #expect(run.status == 2, "\(text): \(run.stderr)")
            #expect(run.stderr.contains(message), "\(text): \(run.stderr)")
            #expect(((try? BulkCommandTests.jsonl(output)) ?? []).isEmpty, "\(text)")
        }
    }

    @Test("a .jsonl line that is not a JSON object is an error naming it, not a row without a URL")
    func malformedJSONLLineIsAnError() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let good = #"{"url": "http://127.0.0.1:9/0.png"}"#
        for (text, message) in [
            ("\(good)\n\(good)\n{\"url\": \"http://127.0.0.1:9/1.png\"\n", "line 3 (after row 2): not valid JSON"),
            ("\(good)\n\n[\"http://127.0.0.1:9/1.png\"]\n", "line 3 (after row 1): a JSON array, not an object"),
        ] {
            let list = try BulkInputTests.write(text, to: folder, name: "list.jsonl")
            let output = folder.appendingPathComponent("out-\(UUID().uuidString)")
            let run = try await BulkInputTests.bulk(list, output: output)
            #expect(run.status == 2, "\(text): \(run.stderr)")
            #expect(run.stderr.contains(message), "\(text): \(run.stderr)")
        }
    }
}
