import Foundation
import TestSupport
import Testing

/// `webimage bulk`'s input reader, run as built. Every URL here is `http://127.0.0.1:9/…`: nothing
/// listens on the discard port, so a download (when a test gets that far) fails at once on loopback.
@Suite("webimage bulk input", .timeLimit(.minutes(10)))
struct BulkInputTests {
    /// Runs `webimage bulk INPUT --output DIR` with `extra` arguments. The child's proxy is a closed
    /// loopback port: libcurl honours `ALL_PROXY` (the transport sets no proxy of its own), so even a
    /// garbled host name would go to 127.0.0.1:9 and not be looked up.
    static func bulk(_ input: URL, output: URL, _ extra: [String] = []) async throws -> CLIRunner.Output {
        try await CLIRunner.run(
            "webimage",
            ["bulk", "--allow-destination", "127.0.0.0/8", input.path, "--output", output.path, "--size", "16"] + extra,
            environment: ["ALL_PROXY": "http://127.0.0.1:9", "NO_PROXY": "", "no_proxy": ""])
    }

    static func write(_ text: String, to folder: URL, name: String) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url
    }

    /// The jsonl rows of `output` in key order (that is, input order).
    static func rows(_ output: URL) throws -> [[String: Any]] {
        try BulkCommandTests.jsonl(output).sorted { ($0["key"] as? String ?? "") < ($1["key"] as? String ?? "") }
    }

    @Test("CSV reads as Python's csv module reads it: a quote opens a quoted field only at its start")
    func csvQuotesAsPythonReadsThem() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var lines = ["url,caption,n"]
        for n in 0..<10 {
            let caption = [
                #"a 5" screen"#, #""quoted, with ""doubled"" quotes""#, #""closed"then text"#, #"x""y"#,
                "\"two\nlines\"", "",
            ][n % 6]
            lines.append("http://127.0.0.1:9/\(n).png,\(caption),\(n)")
        }
        let list = try Self.write(lines.joined(separator: "\r\n") + "\r\n", to: folder, name: "list.csv")
        let script = """
            import csv, json, sys
            with open(sys.argv[1], newline="") as f:
                print(json.dumps([[row["url"], row["caption"], row["n"]] for row in csv.DictReader(f)]))
            """
        let python = try await CLIRunner.runProgram("/usr/bin/env", ["python3", "-c", script, list.path])
        #expect(python.status == 0, "\(python.stderr)")
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(python.stdout.utf8)) as? [[String]])
        #expect(expected.count == 10)

        let output = folder.appendingPathComponent("out")
        let run = try await Self.bulk(list, output: output, ["--caption-col", "caption", "--save-cols", "n"])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try Self.rows(output).map {
            // `n` is whole numbers: int64, as img2dataset's pyarrow reads it.
            [$0["url"] as? String ?? "?", $0["caption"] as? String ?? "?", ($0["n"] as? Int).map(String.init) ?? "?"]
        }
        #expect(rows == expected)
    }

    @Test("an unclosed quote is an error naming its line, never one giant row")
    func unclosedQuoteNamesItsLine() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var lines = ["url,caption"]
        for n in 0..<40 { lines.append("http://127.0.0.1:9/\(n).png,\(n == 4 ? "\"never closed" : "fine")") }
        let list = try Self.write(lines.joined(separator: "\n") + "\n", to: folder, name: "list.csv")
        // At the end of the file.
        let atEnd = try await Self.bulk(list, output: folder.appendingPathComponent("a"), ["--plan-only"])
        #expect(atEnd.status == 2, "\(atEnd.stdout)")
        #expect(atEnd.stderr.contains("line 6") && atEnd.stderr.contains("never closed"), "\(atEnd.stderr)")
        // Or sooner, when the record it opens grows past the line limit.
        let tooLong = try await Self.bulk(
            list, output: folder.appendingPathComponent("b"), ["--plan-only", "--max-line-bytes", "200"])
        #expect(tooLong.status == 2, "\(tooLong.stdout)")
        #expect(tooLong.stderr.contains("line 6") && tooLong.stderr.contains("--max-line-bytes"), "\(tooLong.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("a/plan.json").path))
    }

    @Test("a UTF-8 byte order mark before the first line is dropped, in every format")
    func byteOrderMarkIsDropped() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = (0..<3).map { "http://127.0.0.1:9/\($0).png" }
        let inputs = [
            ("list.txt", urls.joined(separator: "\n")),
            ("list.csv", (["url,caption"] + urls.map { "\($0),c" }).joined(separator: "\n")),
            ("list.tsv", (["url\tcaption"] + urls.map { "\($0)\tc" }).joined(separator: "\n")),
            ("list.jsonl", urls.map { "{\"url\":\"\($0)\"}" }.joined(separator: "\n")),
            ("list.json", "[" + urls.map { "{\"url\":\"\($0)\"}" }.joined(separator: ",\n") + "]"),
        ]
        for (name, text) in inputs {
            let list = try Self.write("\u{FEFF}" + text + "\n", to: folder, name: name)
            for path in [list, try BulkCommandTests.gzip(list)] {
                let output = folder.appendingPathComponent("out-" + path.lastPathComponent)
                let run = try await Self.bulk(path, output: output)
                #expect(run.status == 0, "\(path.lastPathComponent): \(run.stderr)")
                #expect(try Self.rows(output).map { $0["url"] as? String ?? "" } == urls, "\(path.lastPathComponent)")
            }
        }
    }

    @Test("a line longer than --max-line-bytes (1 MB by default) is an error naming it, in every format")
    func overlongLinesAreRefused() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let long = "http://127.0.0.1:9/" + String(repeating: "a", count: 2 << 20)
        let inputs = [
            ("list.txt", "http://127.0.0.1:9/0.png\n\(long)\n"),
            ("list.csv", "url\nhttp://127.0.0.1:9/0.png\n\(long)\n"),
            ("list.tsv", "url\nhttp://127.0.0.1:9/0.png\n\(long)\n"),
            ("list.jsonl", "{\"url\":\"http://127.0.0.1:9/0.png\"}\n{\"url\":\"\(long)\"}\n"),
            ("list.json", "[{\"url\":\"http://127.0.0.1:9/0.png\"},\n{\"url\":\"\(long)\"}]\n"),
        ]
        for (name, text) in inputs {
            let list = try Self.write(text, to: folder, name: name)
            let line = ["list.txt", "list.jsonl", "list.json"].contains(name) ? 2 : 3
            let run = try await Self.bulk(list, output: folder.appendingPathComponent("out-" + name), ["--plan-only"])
            #expect(run.status == 2, "\(name)")
            #expect(run.stderr.contains("line \(line) ") && run.stderr.contains("--max-line-bytes"), "\(run.stderr)")
            // Measured, not asserted (a sanitizer's shadow memory alone changes it): the refusal above is
            // what shows the reader stopped at the limit.
            print("\(name): a 2 MB line refused at planning, peak RSS \(run.peakRSSKiB / 1024) MB")
            // A limit above the line lets it through.
            let allowed = try await Self.bulk(
                list, output: folder.appendingPathComponent("allowed-" + name),
                ["--plan-only", "--max-line-bytes", "3000000"])
            #expect(allowed.status == 0, "\(name): \(allowed.stderr)")
        }
    }

    @Test("--max-line-bytes counts a line's bytes without its line break (CR LF or LF)")
    func lineLimitExcludesTheLineBreak() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = "http://127.0.0.1:9/0.png"
        let object = "{\"url\":\"\(url)\"}"
        let inputs = [
            ("list.txt", "\(url)\r\n", url.utf8.count),
            ("list.csv", "url\r\n\(url)\r\n", url.utf8.count),
            ("list.tsv", "url\n\(url)\n", url.utf8.count),
            ("list.jsonl", "\(object)\r\n", object.utf8.count),
        ]
        for (name, text, longest) in inputs {
            let list = try Self.write(text, to: folder, name: name)
            for (limit, status) in [(longest, Int32(0)), (longest - 1, Int32(2))] {
                let run = try await Self.bulk(
                    list, output: folder.appendingPathComponent("out-\(limit)-" + name),
                    ["--plan-only", "--max-line-bytes", String(limit)])
                #expect(run.status == status, "\(name) with --max-line-bytes \(limit): \(run.stderr)")
            }
        }
    }

    /// A gzip-compressed list of `count` loopback URLs.
    static func gzipList(count: Int, in folder: URL) throws -> (URL, Data) {
        let text = (0..<count).map { "http://127.0.0.1:9/\($0).png" }.joined(separator: "\n") + "\n"
        let list = try Self.write(text, to: folder, name: "list.txt")
        let compressed = try BulkCommandTests.gzip(list)
        return (compressed, try Data(contentsOf: compressed))
    }

    @Test("a truncated or corrupted .gz ends the run with exit 2 and the row, at planning")
    func damagedGzipIsAnError() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (compressed, data) = try Self.gzipList(count: 5_000, in: folder)
        // --plan-only: the count alone must catch the damage, and nothing is ever downloaded, whatever a
        // damaged file might turn into.
        let intact = try await Self.bulk(compressed, output: folder.appendingPathComponent("intact"), ["--plan-only"])
        #expect(intact.status == 0, "\(intact.stderr)")
        #expect(try CLIRunner.jsonObjects(intact).first?["rows"] as? Int == 5_000)

        let truncated = folder.appendingPathComponent("truncated.txt.gz")
        try data.prefix(data.count / 2).write(to: truncated)
        let cut = try await Self.bulk(truncated, output: folder.appendingPathComponent("cut"), ["--plan-only"])
        #expect(cut.status == 2, "\(cut.stdout)")
        #expect(cut.stderr.contains("truncated") && cut.stderr.contains("after row "), "\(cut.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("cut/plan.json").path))

        var flipped = data
        flipped[data.count / 2] ^= 0x10
        let corrupt = folder.appendingPathComponent("corrupt.txt.gz")
        try flipped.write(to: corrupt)
        let garbled = try await Self.bulk(corrupt, output: folder.appendingPathComponent("garbled"), ["--plan-only"])
        #expect(garbled.status == 2, "\(garbled.stdout)")
        #expect(
            garbled.stderr.contains("damaged gzip data") && garbled.stderr.contains("after row "), "\(garbled.stderr)")

        // Zero padding after the last member is not damage (gzip(1) and Python skip it).
        let padded = folder.appendingPathComponent("padded.txt.gz")
        try (data + Data(count: 512)).write(to: padded)
        let pad = try await Self.bulk(padded, output: folder.appendingPathComponent("padded"), ["--plan-only"])
        #expect(pad.status == 0, "\(pad.stderr)")
    }
}
