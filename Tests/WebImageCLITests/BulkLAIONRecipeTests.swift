import Foundation
import LocalImageServer
import TestSupport
import Testing

@testable import WebImage

/// README's LAION recipe, read from README.md and run through the built binary on a LAION-shaped Parquet
/// file that pyarrow writes, against a loopback server: images kept, shrunk and filtered, a 404, a page
/// that is not an image and a `noai` robots tag.
@Suite("Bulk LAION-style recipe", .timeLimit(.minutes(10)))
struct BulkLAIONRecipeTests {
    /// README's LAION command line as arguments after `webimage`: the `$ webimage bulk laion2B…` line and its
    /// continuations, split on spaces (the recipe has no quoting).
    static func readmeArguments() throws -> [String] {
        let readme = try String(
            contentsOf: Fixtures.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix("$ webimage bulk laion2B-en-joined.parquet ") })
        var command = ""
        for line in lines[start...] {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasSuffix("\\") else {
                command += trimmed
                break
            }
            command += trimmed.dropLast() + " "
        }
        #expect(!command.contains("'") && !command.contains("\""), "\(command)")
        let words = command.split(separator: " ").map(String.init)
        #expect(Array(words.prefix(2)) == ["$", "webimage"])
        return Array(words.dropFirst(2))
    }

    /// The rows: a path on the server, the image's size when it is one, and the outcome the recipe gives.
    static let rows: [(path: String, size: (Int, Int)?, code: String?)] = [
        ("/img/800x600.png", (800, 600), nil),  // shrunk to 512×384
        ("/img/300x200.png", (300, 200), nil),  // not above 384: kept
        ("/img/1000x400.png", (1000, 400), nil),  // shrunk to 960×384 (no caption)
        ("/gone/3.jpg", nil, "invalidDownloadStatusCode"),
        ("/page.html", nil, "badImageData"),
        ("/robots/5.png?tag=noai", (120, 80), "robotsTag"),
        ("/img/50x90.png", (50, 90), "tooSmall"),
        ("/img/900x100.png", (900, 100), "aspectRatio"),
        ("/robots/8.png?tag=noarchive", (120, 80), nil),  // a directive the recipe allows
        ("/img/384x384.png", (384, 384), nil),
    ]

    /// Writes the LAION-shaped file (LAION's joined columns and types, row groups of 4, SNAPPY) and prints
    /// the md5 of each URL's body, or `-` for a URL that is not a 200.
    static let writeList = """
        import hashlib, sys, urllib.error, urllib.request, pyarrow as pa, pyarrow.parquet as pq
        urls = sys.argv[2:]
        n = len(urls)
        pq.write_table(pa.table({
            "URL": pa.array(urls, pa.string()),
            "TEXT": pa.array([None if i == 2 else "a photo, number %d" % i for i in range(n)], pa.string()),
            "WIDTH": pa.array([800 + i for i in range(n)], pa.int64()),
            "HEIGHT": pa.array([None if i == 1 else 600 for i in range(n)], pa.int64()),
            "similarity": pa.array([None if i == 4 else 0.3 + i / 1000 for i in range(n)], pa.float64()),
            "hash": pa.array([-3135720131373445136 + i for i in range(n)], pa.int64()),
            "punsafe": pa.array([i / 8 for i in range(n)], pa.float32()),
            "pwatermark": pa.array([0.1 * i for i in range(n)], pa.float32()),
            "LANGUAGE": pa.array(["en"] * n, pa.string()),
        }), sys.argv[1], row_group_size=4, compression="snappy")
        for url in urls:
            try:
                with urllib.request.urlopen(url) as response:
                    print(hashlib.md5(response.read()).hexdigest())
            except urllib.error.HTTPError:
                print("-")
        """

    /// Reads the shard's tar (extracting it to `folder/tar`) and Parquet file: prints the tar's member
    /// names, then `same` when every Parquet row equals its jsonl line (a float column's cell equal to the
    /// jsonl's number read as float32), then the saved columns' types.
    static let readOutput = """
        import json, struct, sys, tarfile, pyarrow as pa, pyarrow.parquet as pq
        out, extracted = sys.argv[1], sys.argv[2]
        with tarfile.open(out + "/00000.tar") as tar:
            print(" ".join(tar.getnames()))
            tar.extractall(extracted)
        expected = [json.loads(line) for line in open(out + "/00000.jsonl")]
        table = pq.read_table(out + "/00000.parquet")
        floats = [field.name for field in table.schema if field.type == pa.float32()]
        for row in expected:
            for name in floats:
                if row.get(name) is not None:
                    row[name] = struct.unpack("<f", struct.pack("<f", row[name]))[0]
        print("same" if table.to_pylist() == expected else "differ: %r != %r" % (table.to_pylist(), expected))
        schema = table.schema
        print(" ".join("%s:%s" % (name, schema.field(name).type) for name in sys.argv[3:]))
        """

    @Test(
        "README's LAION recipe on a LAION-shaped pyarrow file: tar members, jsonl and Parquet rows, typed columns",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: BulkCommandTests.webdatasetPython),
            "make test-python sets up .venv-test with pyarrow"))
    func laionRecipeFromReadme() async throws {
        let server = try BulkModesTests.server()
        defer { server.shutdown() }
        server.route("/page.html") { _ in
            LocalImageServer.Response(
                status: 200, headers: [("Content-Type", "text/html")], body: .data(Data("<html>hi</html>".utf8)))
        }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("laion.parquet")
        let output = folder.appendingPathComponent("laion2B-en")
        let urls = Self.rows.map { server.url($0.path).absoluteString }
        let md5s = try await BulkParquetTests.python(Self.writeList, [input.path] + urls)
        #expect(md5s.count == Self.rows.count)

        var arguments = try Self.readmeArguments()
        let inputIndex = try #require(arguments.firstIndex(of: "laion2B-en-joined.parquet"))
        arguments[inputIndex] = input.path
        let outputIndex = try #require(arguments.firstIndex(of: "--output")) + 1
        #expect(arguments[outputIndex] == "laion2B-en")
        arguments[outputIndex] = output.path
        // Generous limits: the recipe's shape is under test, not a loaded machine's loopback speed (a full
        // make test-asan beside other builds saw a row's body stall past the default 15 s).
        let run = try await CLIRunner.run(
            "webimage",
            arguments + ["--allow-destination", "127.0.0.0/8", "--timeout", "600", "--stall-timeout", "600"])
        #expect(run.status == 0, "\(run.stderr)")
        let last = run.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("1 shard(s) written, 0 already done, 1 assigned of 1: 5 ok, 5 failed in "), "\(last)")

        // The jsonl: one record per row in order, the outcome, sizes, md5 of the downloaded file, LAION's
        // columns with their values (LANGUAGE not asked for, not kept).
        let records = try BulkCommandTests.jsonl(output).sorted {
            ($0["key"] as? String ?? "") < ($1["key"] as? String ?? "")
        }
        try #require(records.count == Self.rows.count)
        for (index, (row, record)) in zip(Self.rows, records).enumerated() {
            let key = String(format: "%09d", index)
            #expect(record["key"] as? String == key)
            #expect(record["url"] as? String == urls[index])
            #expect(record["caption"] as? String == (index == 2 ? nil : "a photo, number \(index)"))
            // img2dataset's stages: a file that does not decode and the filters fail in its resizer.
            let resizer = ["badImageData", "tooSmall", "aspectRatio"].contains(row.code ?? "")
            let status = row.code == nil ? "success" : resizer ? "failed_to_resize" : "failed_to_download"
            #expect(record["status"] as? String == status, "\(record)")
            #expect(record["error_code"] as? String == row.code, "\(record)")
            #expect(record["hash"] as? Int == -3_135_720_131_373_445_136 + index)
            #expect(record["WIDTH"] as? Int == 800 + index)
            #expect(index == 1 ? record["HEIGHT"] is NSNull : record["HEIGHT"] as? Int == 600)
            #expect(index == 4 ? record["similarity"] is NSNull : record["similarity"] is Double)
            #expect(record["punsafe"] as? Double == Double(index) / 8)
            // A float column's value in JSON is the float's shortest decimal (0.3, not 0.30000001192092896).
            #expect(record["pwatermark"] as? Double == Double(Float(0.1 * Double(index)).description), "\(record)")
            #expect(record["LANGUAGE"] == nil)
            // The digest of the file as served, for a success only.
            #expect(record["md5"] as? String == (row.code == nil ? md5s[index] : nil), "\(record)")
            let filtered = ["tooSmall", "aspectRatio"].contains(row.code ?? "")
            let original = filtered || row.code == nil ? row.size : nil
            #expect(record["original_width"] as? Int == original?.0, "\(record)")
            #expect(record["original_height"] as? Int == original?.1, "\(record)")
        }
        func sizes(_ key: Int) -> [Int?] { [records[key]["width"] as? Int, records[key]["height"] as? Int] }
        #expect(sizes(0) == [512, 384])
        #expect(sizes(1) == [300, 200])
        #expect(sizes(2) == [960, 384])
        #expect(sizes(8) == [120, 80])
        #expect(sizes(9) == [384, 384])
        for key in [3, 4, 5, 6, 7] { #expect(sizes(key) == [nil, nil]) }
        let errors = records.map { $0["error_message"] as? String }
        #expect(errors[3]?.contains("404") == true, "\(errors[3] ?? "")")
        #expect(errors[4]?.isEmpty == false, "a page that is not an image names why it was not decoded")
        #expect(errors[5] == "use of image disallowed by X-Robots-Tag directive")
        #expect(errors[6]?.hasPrefix("image too small: 50×90 is below ") == true, "\(errors[6] ?? "")")
        #expect(errors[7]?.hasPrefix("aspect ratio too large: ") == true, "\(errors[7] ?? "")")

        // The tar: image, json and txt (empty without a caption, as img2dataset writes it) per success; the
        // Parquet file holds the jsonl's rows, LAION's columns typed as in the input: int64, double and float
        // (float32, as img2dataset keeps them).
        let extracted = folder.appendingPathComponent("tar")
        let saved = ["similarity", "hash", "punsafe", "pwatermark", "WIDTH", "HEIGHT"]
        let printed = try await BulkParquetTests.python(
            Self.readOutput, [output.path, extracted.path] + saved)
        let successes = Self.rows.indices.filter { Self.rows[$0].code == nil }
        let members = successes.flatMap { index -> [String] in
            let key = String(format: "%09d", index)
            return [key + ".jpg", key + ".json", key + ".txt"]
        }
        try #require(printed.count == 3)
        #expect(Set(printed[0].split(separator: " ").map(String.init)) == Set(members), "\(printed[0])")
        #expect(printed[1] == "same")
        #expect(
            printed[2]
                == "similarity:double hash:int64 punsafe:float pwatermark:float WIDTH:int64 HEIGHT:int64")
        for index in successes {
            let key = String(format: "%09d", index)
            let jpeg = try Data(contentsOf: extracted.appendingPathComponent(key + ".jpg"))
            let frame = try #require(try JPEGDecoder().decode(jpeg, options: ImageDecodingOptions()).frames.first)
            #expect([frame.width, frame.height] == sizes(index))
            let json = try Data(contentsOf: extracted.appendingPathComponent(key + ".json"))
            let member = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
            #expect(NSDictionary(dictionary: member) == NSDictionary(dictionary: records[index]))
            let caption = try String(contentsOf: extracted.appendingPathComponent(key + ".txt"), encoding: .utf8)
            #expect(caption == (index == 2 ? "" : "a photo, number \(index)"))
        }

        // The shard's totals.
        let statsData = try Data(contentsOf: output.appendingPathComponent("00000_stats.json"))
        let stats = try #require(try JSONSerialization.jsonObject(with: statsData) as? [String: Any])
        #expect(stats["count"] as? Int == 10 && stats["successes"] as? Int == 5)
        let failures = try #require(stats["status_dict"] as? [String: Int])
        #expect(
            failures == [
                "success": 5, "invalidDownloadStatusCode": 1, "badImageData": 1, "robotsTag": 1, "tooSmall": 1,
                "aspectRatio": 1,
            ])
        #expect(stats["failed_to_download"] as? Int == 2 && stats["failed_to_resize"] as? Int == 3)
    }
}
