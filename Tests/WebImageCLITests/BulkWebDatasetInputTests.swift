import Foundation
import TestSupport
import Testing
import WebImage

/// `webimage bulk` reprocessing webdataset shards (`--input_format webdataset`): shards written by the
/// `webdataset` package (in `.venv-test`) from the corpus's images, resized and re-encoded without a
/// network (the run has no URL to fetch, and the destination policy stays the default), read back with
/// webdataset's own loader.
@Suite(
    "webimage bulk webdataset input", .timeLimit(.minutes(10)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: BulkCommandTests.webdatasetPython),
        "make test-python sets up .venv-test with webdataset"))
struct BulkWebDatasetInputTests {
    /// Writes FOLDER/shards/00000.tar and 00001.tar with webdataset's TarWriter: a sample per corpus image
    /// given (jpg, png, webp, gif members), each with a json (url, n) and a txt caption, and in the second
    /// shard one sample with only a txt.
    static let writeShards = #"""
        import json, os, sys
        import webdataset as wds
        folder, images = sys.argv[1], sys.argv[2:]
        os.makedirs(os.path.join(folder, "shards"))
        half = (len(images) + 1) // 2
        for shard, chunk in enumerate([images[:half], images[half:]]):
            with wds.TarWriter(os.path.join(folder, "shards", "%05d.tar" % shard)) as sink:
                for i, path in enumerate(chunk):
                    n = shard * 100 + i
                    ext = path.rsplit(".", 1)[1]
                    sink.write({"__key__": "%09d" % n, ext: open(path, "rb").read(), "txt": "caption %d" % n,
                                "json": {"url": "https://example.com/%s" % os.path.basename(path), "n": n}})
                if shard == 1:
                    sink.write({"__key__": "nothing", "txt": "no image in this one"})
        """#

    /// Reads every sample of DIR's tars with webdataset's loader: one JSON line per sample (its key, members,
    /// json, txt), its image written to DIR/images/KEY.EXT.
    static let readShards = #"""
        import glob, json, os, sys
        import webdataset as wds
        folder = sys.argv[1]
        os.makedirs(os.path.join(folder, "images"), exist_ok=True)
        for sample in wds.WebDataset(sorted(glob.glob(os.path.join(folder, "*.tar"))), shardshuffle=False):
            members = sorted(k for k in sample if not k.startswith("__"))
            meta = json.loads(sample["json"])
            for ext in members:
                if ext in ("jpg", "png", "webp", "avif"):
                    with open(os.path.join(folder, "images", sample["__key__"] + "." + ext), "wb") as f:
                        f.write(sample[ext])
            print(json.dumps({"key": sample["__key__"], "members": members, "json": meta,
                              "txt": sample.get("txt", b"").decode()}))
        """#

    @Test("a folder of webdataset shards is resized and re-encoded, url, caption and columns kept; nothing lost")
    func reprocessesShards() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let names = [
            "astronaut-baseline.jpg", "coffee-rgb.png", "horse-lossless.webp", "chelsea.gif", "coffee-progressive.jpg",
            "corrupt-header.webp", "camera-gray.png",
        ]
        let images = names.map { Fixtures.corpusImages.appendingPathComponent($0).path }
        _ = try await BulkParquetTests.python(Self.writeShards, [folder.path] + images)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", folder.appendingPathComponent("shards").path, "--input_format", "webdataset", "--output_folder",
                output.path, "--image_size", "48", "--resize_mode", "center_crop", "--output_format", "webdataset",
                "--encode_format", "webp", "--save_additional_columns", "[n]",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try await BulkParquetTests.python(Self.readShards, [output.path])
        let samples = try lines.map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        // Six images decode (the corrupt WebP does not), each a 48×48 WebP with its txt and json.
        #expect(samples.count == 6, "\(lines)")
        for sample in samples {
            let key = try #require(sample["key"] as? String)
            #expect(sample["members"] as? [String] == ["json", "txt", "webp"], "\(key)")
            let meta = try #require(sample["json"] as? [String: Any])
            let n = try #require(meta["n"] as? Int)
            #expect(sample["txt"] as? String == "caption \(n)")
            #expect(meta["caption"] as? String == "caption \(n)")
            let url = try #require(meta["url"] as? String)
            #expect(names.contains { url == "https://example.com/\($0)" }, "\(url)")
            #expect(meta["status"] as? String == "success")
            let data = try Data(contentsOf: output.appendingPathComponent("images/\(key).webp"))
            let image = try ImageDecoderRegistry.shared.decode(data)
            #expect(image.width == 48 && image.height == 48, "\(key): \(image.width)×\(image.height)")
        }
        // The two that gave no image have their records: the corrupt file and the sample without one.
        let records = try BulkCommandTests.jsonl(output)
        #expect(records.count == 8)
        let failed = records.filter { $0["status"] as? String != "success" }
        #expect(
            Set(failed.compactMap { $0["error_code"] as? String }) == ["badImageData", "unusableSample"],
            "\(failed)")
        let unusable = try #require(failed.first { $0["error_code"] as? String == "unusableSample" })
        #expect(unusable["url"] as? String == "00001.tar/nothing")
        #expect(unusable["caption"] as? String == "no image in this one")
        #expect((unusable["error_message"] as? String)?.contains("has no image member (only .txt)") == true)
        // --retry-failed has nothing to download again: refused, and says why.
        let retry = try await CLIRunner.run(
            "webimage",
            ["bulk", folder.appendingPathComponent("shards").path, "--output", output.path, "--retry-failed"])
        #expect(retry.status == 2)
        #expect(retry.stderr.contains("a webdataset input's rows are its shards' own images"))
    }

    @Test("a damaged archive stops the run at planning with exit 2 and a message naming it; nothing is made")
    func damagedArchiveStopsAtPlanning() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let images = [Fixtures.corpusImages.appendingPathComponent("astronaut-baseline.jpg").path]
        _ = try await BulkParquetTests.python(Self.writeShards, [folder.path] + images)
        let archive = folder.appendingPathComponent("shards/00000.tar")
        var bytes = try Data(contentsOf: archive)
        bytes = bytes.prefix(bytes.count / 2)  // cut inside the image member
        try bytes.write(to: archive)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run("webimage", ["bulk", archive.path, "--output", output.path])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(
            run.stderr.contains("00000.tar', the header at byte") && run.stderr.contains("'000000000.jpg' declares")
                && run.stderr.contains("the archive is truncated"), "\(run.stderr)"
        )
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    @Test("bulk's own output reprocessed: a smaller size of every image, keys and records line up")
    func reprocessesItsOwnOutput() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try BulkOutputFormatsTests.list(server, in: folder)
        let first = folder.appendingPathComponent("first")
        let made = try await BulkOutputFormatsTests.bulk(list, first, [])
        #expect(made.status == 0, "\(made.stderr)")
        let second = folder.appendingPathComponent("second")
        let run = try await CLIRunner.run(
            "webimage",
            ["bulk", first.path, "--output", second.path, "--size", "8", "--save-cols", "n", "--shard-size", "4"])
        #expect(run.status == 0, "\(run.stderr)")
        let before = try BulkCommandTests.jsonl(first).filter { $0["status"] as? String == "success" }
        let after = try BulkCommandTests.jsonl(second)
        #expect(before.count == 6 && after.count == before.count, "\(before.count) → \(after.count)")
        // Each image again, by its url: the first run's size is now the original, the caption and kept
        // column carried over.
        let firstByURL = Dictionary(uniqueKeysWithValues: before.map { ($0["url"] as? String ?? "", $0) })
        for record in after {
            let url = try #require(record["url"] as? String)
            let earlier = try #require(firstByURL[url], "\(url)")
            #expect(record["status"] as? String == "success")
            #expect(record["original_width"] as? Int == earlier["width"] as? Int)
            #expect(record["original_height"] as? Int == earlier["height"] as? Int)
            #expect(max(record["width"] as? Int ?? 0, record["height"] as? Int ?? 0) == 8)
            #expect(record["caption"] as? String == earlier["caption"] as? String)
            #expect(try #require(record["n"] as? Int) == earlier["n"] as? Int)
        }
    }
}
