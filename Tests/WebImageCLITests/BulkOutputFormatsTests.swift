import Foundation
import LocalImageServer
import TestSupport
import Testing

/// `webimage bulk`'s img2dataset output formats beyond webdataset and files (`parquet`, `dummy`), run as
/// built against the loopback server's generated images, the files read back with the test Python.
@Suite(
    "webimage bulk output formats", .timeLimit(.minutes(10)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: BulkCommandTests.webdatasetPython),
        "make test-python sets up .venv-test with pyarrow"))
struct BulkOutputFormatsTests {
    /// A list of `/gen/0.png` … `/gen/8.png` (row 3 a 404, row 5 a 429, row 7 tagged noai) and a row that
    /// is no URL: shards of 6 rows get 4 and 2 images.
    static func list(_ server: LocalImageServer, in folder: URL) throws -> URL {
        let urls = (0..<9).map { server.url("/gen/\($0).png").absoluteString } + ["not a url"]
        return try BulkCommandTests.writeList(urls, to: folder)
    }

    /// Runs `webimage bulk` on `list` into `output` with `extra` options (img2dataset's spellings allowed).
    static func bulk(_ list: URL, _ output: URL, _ extra: [String]) async throws -> CLIRunner.Output {
        try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output", output.path, "--allow-destination", "127.0.0.0/8", "--size", "16",
                "--caption-col", "caption", "--save-cols", "n", "--shard-size", "6",
            ] + extra)
    }

    @Test(
        "--output_format parquet: one file per shard, the record's columns and the image bytes in a binary jpg column"
    )
    func parquetHoldsTheImages() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try Self.list(server, in: folder)
        let parquet = folder.appendingPathComponent("parquet")
        let run = try await Self.bulk(list, parquet, ["--output_format", "parquet"])
        #expect(run.status == 0, "\(run.stderr)")
        // The same rows written as files: the images the Parquet column must hold, byte for byte (row 5's
        // 429 is the server's first answer only, so it succeeds here).
        let files = folder.appendingPathComponent("files")
        let filesRun = try await Self.bulk(list, files, ["--format", "files"])
        #expect(filesRun.status == 0, "\(filesRun.stderr)")
        let script = """
            import glob, json, os, sys, pyarrow as pa, pyarrow.parquet as pq
            out, files = sys.argv[1], sys.argv[2]
            names = sorted(n for n in os.listdir(out) if not n.startswith("."))
            print("names", " ".join(names))
            for path in sorted(glob.glob(os.path.join(out, "?????.parquet"))):
                stem = os.path.basename(path)[:-len(".parquet")]
                table = pq.read_table(path)
                assert table.schema.names[-1] == "jpg", table.schema
                assert table.schema.field("jpg").type == pa.binary(), table.schema
                records = [json.loads(line) for line in open(os.path.join(out, stem + ".jsonl"))]
                rows = table.to_pylist()
                assert [{k: v for k, v in row.items() if k != "jpg"} for row in rows] == records, (rows, records)
                for row in rows:
                    image = os.path.join(files, stem, row["key"] + ".jpg")
                    if row["status"] == "success":
                        assert row["jpg"] == open(image, "rb").read(), row["key"]
                        assert row["jpg"][:2] == b"\\xff\\xd8", row["key"]
                    else:
                        assert row["jpg"] is None, row
                print(stem, len(rows), sum(row["jpg"] is not None for row in rows), table.schema.names[0])
            # Hugging Face datasets loads the shards as one split, the image column as bytes.
            os.environ["HF_DATASETS_OFFLINE"] = "1"
            os.environ["HF_HOME"] = os.path.join(files, ".hf")
            from datasets import load_dataset
            shards = sorted(glob.glob(os.path.join(out, "?????.parquet")))
            ds = load_dataset("parquet", data_files=shards, split="train", cache_dir=os.path.join(files, ".hf"))
            images = [image for image in ds["jpg"] if image is not None]
            assert all(image[:2] == b"\\xff\\xd8" for image in images)
            print("datasets", ds.num_rows, ds.features["jpg"].dtype, len(images), "exif" in ds.features)
            """
        let lines = try await BulkParquetTests.python(script, [parquet.path, files.path])
        #expect(
            lines == [
                "names 00000.jsonl 00000.parquet 00000_stats.json 00001.jsonl 00001.parquet 00001_stats.json "
                    + "plan.json",
                "00000 6 4 key", "00001 4 2 key", "datasets 10 binary 6 True",
            ], "\(run.stderr)")
    }

    @Test("--format parquet names the image column after --encode, and refuses a kept column of that name")
    func parquetColumnFollowsTheEncoder() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try BulkCommandTests.writeList([server.url("/gen/0.png").absoluteString], to: folder)
        let output = folder.appendingPathComponent("png")
        let run = try await Self.bulk(list, output, ["--format", "parquet", "--encode", "png"])
        #expect(run.status == 0, "\(run.stderr)")
        let script = """
            import sys, pyarrow.parquet as pq
            row = pq.read_table(sys.argv[1] + "/00000.parquet").to_pylist()[0]
            print(list(row)[-1], row["png"][:4] == b"\\x89PNG")
            """
        let lines = try await BulkParquetTests.python(script, [output.path])
        #expect(lines == ["png True"])

        // A kept column may not take the image's name.
        let clash = try await Self.bulk(
            list, folder.appendingPathComponent("clash"), ["--format", "parquet", "--save-cols", "jpg"])
        #expect(clash.status == 2 && clash.stderr.contains("--save-cols cannot keep 'jpg'"), "\(clash.stderr)")
    }

    @Test("--output_format dummy downloads and counts every row and writes nothing but the stats")
    func dummyWritesOnlyStats() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try Self.list(server, in: folder)
        let output = folder.appendingPathComponent("dummy")
        let run = try await Self.bulk(list, output, ["--output_format", "dummy"])
        #expect(run.status == 0, "\(run.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: output.path).filter { !$0.hasPrefix(".") }
        #expect(names.sorted() == ["00000_stats.json", "00001_stats.json", "plan.json"])
        let first = try BulkImg2datasetTests.stats(output)
        let second = try BulkImg2datasetTests.stats(output, "00001_stats.json")
        #expect(first["count"] as? Int == 6 && first["successes"] as? Int == 4, "\(first)")
        #expect(second["count"] as? Int == 4 && second["successes"] as? Int == 2, "\(second)")
        #expect((first["bytes_downloaded"] as? Int ?? 0) > 0, "\(first)")

        // A rerun skips the finished shards; --retry-failed has no jsonl to read, and says so.
        let again = try await Self.bulk(list, output, ["--output_format", "dummy"])
        #expect(again.status == 0, "\(again.stderr)")
        let retry = try await Self.bulk(list, output, ["--format", "dummy", "--retry-failed"])
        #expect(retry.status == 2 && retry.stderr.contains("--format dummy does not write"), "\(retry.stderr)")
    }

    /// Reads every `?????.tfrecord` in `argv[1]` from the format's spec (no TensorFlow): checks each record's
    /// two masked CRC-32C, decodes its `tf.train.Example`, and prints one JSON line per record: each
    /// feature's one value (bytes as text; the image as `sha256:` and its digest).
    static let readTFRecords = """
        import glob, hashlib, json, os, struct, sys
        def crc32c(data):
            crc = 0xFFFFFFFF
            for byte in data:
                crc ^= byte
                for _ in range(8):
                    crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
            return crc ^ 0xFFFFFFFF
        assert crc32c(b"123456789") == 0xE3069283
        def masked(data):
            crc = crc32c(data)
            return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
        def varint(buf, i):
            value, shift = 0, 0
            while True:
                byte = buf[i]; i += 1
                value |= (byte & 0x7F) << shift; shift += 7
                if byte < 0x80: return value, i
        def fields(buf):
            i = 0
            while i < len(buf):
                tag, i = varint(buf, i)
                assert tag & 7 == 2, tag
                length, i = varint(buf, i)
                yield tag >> 3, buf[i:i + length]; i += length
                assert i <= len(buf)
        def feature(buf):
            ((kind, body),) = list(fields(buf))
            values = [value for number, value in fields(body) if number == 1]
            if kind == 1: return values
            packed = b"".join(values)
            if kind == 2: return list(struct.unpack("<%df" % (len(packed) // 4), packed))
            out, i = [], 0
            while i < len(packed):
                value, i = varint(packed, i)
                out.append(value - (1 << 64) if value >= 1 << 63 else value)
            return out
        def example(buf):
            ((number, features),) = list(fields(buf))
            assert number == 1
            result = {}
            for number, entry in fields(features):
                parts = dict(fields(entry))
                result[parts[1].decode()] = feature(parts[2])
            return result
        for path in sorted(glob.glob(os.path.join(sys.argv[1], "?????.tfrecord"))):
            data = open(path, "rb").read()
            i = 0
            while i < len(data):
                header = data[i:i + 8]
                (length,) = struct.unpack("<Q", header)
                (crc,) = struct.unpack("<I", data[i + 8:i + 12])
                assert crc == masked(header), "length CRC"
                body = data[i + 12:i + 12 + length]
                (crc,) = struct.unpack("<I", data[i + 12 + length:i + 16 + length])
                assert len(body) == length and crc == masked(body), "data CRC"
                i += 16 + length
                features = example(body)
                image = features.pop("jpg")
                assert len(image) == 1 and image[0][:4] == b"\\x89PNG"
                assert all(len(v) == 1 for v in features.values()), features
                features = {k: v[0].decode() if isinstance(v[0], bytes) else v[0] for k, v in features.items()}
                features["jpg"] = "sha256:" + hashlib.sha256(image[0]).hexdigest()
                print(json.dumps(features, sort_keys=True))
        """

    @Test("--output_format tfrecord: CRC-checked records of tf.train.Example with img2dataset's features")
    func tfrecordHoldsExamples() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try Self.list(server, in: folder)
        let output = folder.appendingPathComponent("tfrecord")
        // The downloaded bytes are kept, so the image feature's digest is the record's sha256.
        let run = try await Self.bulk(
            list, output, ["--output_format", "tfrecord", "--disable_all_reencoding", "True"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try await BulkParquetTests.python(Self.readTFRecords, [output.path])
        let examples = try Dictionary(
            lines.map { line -> (String, [String: Any]) in
                let example = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                return (example["key"] as? String ?? "?", example)
            }, uniquingKeysWith: { first, _ in first })
        let successes = try BulkInputTests.rows(output).filter { $0["status"] as? String == "success" }
        #expect(lines.count == 6 && examples.count == 6 && successes.count == 6, "\(lines)")
        for record in successes {
            let key = record["key"] as? String ?? "?"
            let example = try #require(examples[key], "\(key)")
            #expect(example["jpg"] as? String == "sha256:" + (record["sha256"] as? String ?? "?"))
            #expect(example["txt"] as? String == record["caption"] as? String)
            for (name, value) in record {
                if let number = value as? Int, !(value is String) {
                    #expect(example[name] as? Int == number, "\(key) \(name): \(example[name] ?? "none")")
                } else {
                    // Text as its bytes; null as empty bytes, as img2dataset writes Python's None.
                    let text = value as? String ?? ""
                    #expect(example[name] as? String == text, "\(key) \(name): \(example[name] ?? "none")")
                }
            }
            #expect(Set(example.keys) == Set(record.keys).union(["jpg", "txt"]), "\(example.keys)")
        }
        // The jsonl and the records-only Parquet file are written beside it, as for a tar.
        let names = try FileManager.default.contentsOfDirectory(atPath: output.path).filter { !$0.hasPrefix(".") }
        #expect(Set(names).isSuperset(of: ["00000.tfrecord", "00000.jsonl", "00000.parquet", "00001.tfrecord"]))
    }
}
