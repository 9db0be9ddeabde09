import Foundation
import LocalImageServer
import LocalImageServerTLS
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `webimage bulk` run with img2dataset's command line, and its outputs read as img2dataset's readers
/// read them: field names and types in the records, the `.json` sidecars, the Parquet file and the stats.
@Suite("webimage bulk with img2dataset's command line", .timeLimit(.minutes(10)))
struct BulkImg2datasetTests {
    /// `urls` as a CSV list with `url`, `caption` and `n` columns (``BulkCommandTests/writeList``).
    static func list(_ urls: [String], in folder: URL) throws -> URL {
        try BulkCommandTests.writeList(urls, to: folder)
    }

    static func stats(_ folder: URL, _ name: String = "00000_stats.json") throws -> [String: Any] {
        let data = try Data(contentsOf: folder.appendingPathComponent(name))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("img2dataset's option names (with _ or -) and values run, and mean what they mean there")
    func img2datasetSpellings() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // The generated images are 24×16; row 3 is a 404.
        let urls = (0..<5).map { server.url("/gen/\($0).png").absoluteString }
        let list = try Self.list(urls, in: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--url_list", list.path, "--output_folder", output.path, "--image_size", "8",
                "--resize_mode", "keep_ratio", "--resize_only_if_bigger", "False", "--processes_count", "2",
                "--thread-count", "4", "--input_format", "csv", "--url_col", "url", "--caption-col", "caption",
                "--save_additional_columns", #"["n"]"#, "--output_format", "files", "--encode_format", "png",
                "--number_sample_per_shard", "3", "--extract_exif=False", "--compute_hash", "md5",
                "--enable_wandb", "False", "--distributor", "multiprocessing", "--incremental_mode", "incremental",
                "--oom_shard_count", "5", "--max_shard_retry", "2", "--max_image_area", "inf", "--max-aspect-ratio",
                "inf", "--retries", "0",
                "--timeout", "10", "--min_image_size", "0", "--disallowed_header_directives", "[]",
                "--allow-destination", "127.0.0.0/8",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try BulkInputTests.rows(output)
        // img2dataset's keys: shards of 3 rows keep one digit of row after the 5 of shard.
        #expect(rows.map { $0["key"] as? String } == ["000000", "000001", "000002", "000010", "000011"])
        #expect(rows.allSatisfy { $0["exif"] == nil }, "--extract_exif=False: no exif field")
        // keep_ratio: the shorter side becomes 8 (center-crop, webimage's default, would make 8×8).
        let ok = rows.filter { $0["status"] as? String == "success" }
        #expect(ok.count == 4 && ok.allSatisfy { $0["width"] as? Int == 12 && $0["height"] as? Int == 8 }, "\(ok)")
        #expect(ok.allSatisfy { ($0["md5"] as? String)?.count == 32 && $0["sha256"] == nil }, "\(ok)")
        #expect(rows.map { $0["n"] as? Int } == [0, 1, 2, 3, 4])
        #expect(rows[3]["status"] as? String == "failed_to_download")
        // --output_format files, --encode_format png: a folder per shard.
        let files = try FileManager.default.contentsOfDirectory(atPath: output.appendingPathComponent("00000").path)
        #expect(files.contains("000000.png") && files.contains("000000.json"), "\(files)")

        // Booleans as python-fire takes them: `--flag`, `--flag=True`, `--noflag`; the resize enlarges
        // (24×16 to 96×64) unless resize_only_if_bigger.
        for (flag, width) in [
            (["--resize_only_if_bigger"], 24), (["--resize-only-if-bigger=True"], 24),
            (["--noresize_only_if_bigger"], 96), (["--resize_only_if_bigger", "false"], 96),
        ] {
            let out = folder.appendingPathComponent("flag-\(UUID().uuidString)")
            let flagged = try await CLIRunner.run(
                "webimage",
                ["bulk", list.path, "--output-folder", out.path, "--image-size", "64", "--resize-mode", "keep_ratio"]
                    + flag + ["--allow-destination", "127.0.0.0/8"])
            #expect(flagged.status == 0, "\(flag): \(flagged.stderr)")
            #expect(try BulkInputTests.rows(out).first?["width"] as? Int == width, "\(flag)")
        }

        // img2dataset's resize_mode names: no keeps the size (and webimage's own names still work).
        for (mode, width) in [("no", 24), ("center_crop", 8), ("keep_ratio_largest", 8), ("border", 8), ("fit", 8)] {
            let out = folder.appendingPathComponent("mode-\(mode)")
            let resized = try await CLIRunner.run(
                "webimage",
                [
                    "bulk", list.path, "--output_folder", out.path, "--image_size", "8", "--resize_mode", mode,
                    "--allow-destination", "127.0.0.0/8",
                ])
            #expect(resized.status == 0, "\(mode): \(resized.stderr)")
            #expect(try BulkInputTests.rows(out).first?["width"] as? Int == width, "\(mode)")
        }
    }

    @Test("--oom_shard_count and --number_sample_per_shard name shards and keys as img2dataset does, run after run")
    func shardAndKeyNames() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Row 3 is a 404 (BulkCommandTests.Kind.missing).
        let list = try Self.list((0..<5).map { server.url("/gen/\($0).png").absoluteString }, in: folder)
        let output = folder.appendingPathComponent("out")
        let arguments = [
            "bulk", "--url_list", list.path, "--output_folder", output.path, "--output_format", "files",
            "--number_sample_per_shard", "2", "--oom_shard_count", "3", "--image_size", "8",
            "--allow-destination", "127.0.0.0/8",
        ]
        let run = try await CLIRunner.run("webimage", arguments)
        #expect(run.status == 0, "\(run.stderr)")
        // img2dataset's names: shard numbers of 3 digits; shard × 10 + row, 4 digits (one digit holds a row).
        let rows = try BulkInputTests.rows(output)
        #expect(rows.map { $0["key"] as? String } == ["0000", "0001", "0010", "0011", "0020"])
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: output.path))
        #expect(names.isSuperset(of: ["000", "001", "002", "000_stats.json", "002.jsonl", "plan.json"]), "\(names)")
        #expect(!names.contains { $0.hasPrefix("00000") }, "\(names)")
        let files = try FileManager.default.contentsOfDirectory(atPath: output.appendingPathComponent("001").path)
        #expect(files.contains("0010.jpg") && files.contains("0010.json") && !files.contains("0011.jpg"), "\(files)")

        // A rerun finds every shard done under those names; --retry-failed runs the 404 again under its key.
        let rerun = try await CLIRunner.run("webimage", arguments)
        #expect(rerun.status == 0 && rerun.stderr.contains("0 shard(s) written, 3 already done"), "\(rerun.stderr)")
        let retry = try await CLIRunner.run("webimage", arguments + ["--retry-failed"])
        #expect(retry.status == 0 && retry.stderr.contains("retried 1 failed row(s)"), "\(retry.stderr)")
        let retried = try String(contentsOf: output.appendingPathComponent("001-retry1.jsonl"), encoding: .utf8)
        #expect(retried.contains(#""key":"0011""#), "\(retried)")
        // The plan keeps the naming: the same output with other shard digits is refused.
        let other = try await CLIRunner.run(
            "webimage", arguments.map { $0 == "3" ? "4" : $0 })
        #expect(other.status == 2 && other.stderr.contains("shard numbers of 3 digits"), "\(other.stderr)")
    }

    @Test("an img2dataset option webimage does not have is refused with a message saying so, and nothing is made")
    func unsupportedOptionsAreRefused() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try Self.list(["http://127.0.0.1:9/a.png"], in: folder)
        let cases: [([String], String)] = [
            (["--output-format", "lmdb"], "--output-format takes files, webdataset, parquet, tfrecord or dummy"),
            (["--extract_exif=maybe"], "--extract_exif takes True or False, got 'maybe'"),
            (["--skip_reencode=maybe"], "--skip_reencode takes True or False, got 'maybe'"),
            (["--enable_wandb", "True"], "img2dataset's --enable_wandb is not supported by webimage bulk"),
            (["--wandb_project", "x"], "img2dataset's --wandb_project is not supported by webimage bulk"),
            (["--distributor", "pyspark"], "img2dataset's --distributor is not supported by webimage bulk as pyspark"),
            (
                ["--upscale_interpolation", "bicubic"],
                "img2dataset's --upscale_interpolation is not supported by webimage bulk as bicubic"
            ),
            (["--upscale_interpolation", "area"], "as area (it resizes with Lanczos-3: give lanczos or lanczos4)"),
            (["--downscale-interpolation", "nearest"], "img2dataset's --downscale-interpolation is not supported"),
            (["--downscale_interpolation", "box"], "--downscale_interpolation takes one of nearest, linear"),
            (
                ["--incremental_mode", "overwrite"],
                "img2dataset's --incremental_mode is not supported by webimage bulk"
            ),
            (["--subjob_size", "10"], "img2dataset's --subjob_size is not supported by webimage bulk"),
            (["--input_format", "xml"], "--input_format takes txt, csv, tsv, json, jsonl, parquet or webdataset"),
            (
                ["--encode_format", "png", "--encode_quality", "9"],
                "img2dataset's --encode_quality with --encode_format png (the compression level) is not supported"
            ),
            (["--processes_count", "64"], "got 64 × 256"),
            (["--encode_format", "tiff"], "--encode_format takes jpg, png or webp, got 'tiff'"),
            (["--resize_only_if_bigger=maybe"], "--resize_only_if_bigger takes True or False, got 'maybe'"),
            (["--verify_hash", #"["md5_col","md5"]"#], "checks a md5 digest but --compute_hash is sha256"),
        ]
        for (options, message) in cases {
            let output = folder.appendingPathComponent("out")
            let run = try await CLIRunner.run(
                "webimage", ["bulk", list.path, "--output_folder", output.path] + options)
            #expect(run.status == 64, "\(options): \(run.stderr)")
            #expect(run.stderr.contains(message), "\(options): \(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output.path), "\(options)")
        }
        // The input's name says csv; --input_format must agree (exit 2, as for a bad option value).
        let mismatch = try await CLIRunner.run(
            "webimage",
            ["bulk", list.path, "--output", folder.appendingPathComponent("o").path, "--input_format", "tsv"])
        #expect(
            mismatch.status == 2 && mismatch.stderr.contains("--input_format tsv does not match"), "\(mismatch.stderr)")

        // --skip_reencode with webimage's --encode none: nothing to skip (exit 2, as for a bad option value).
        let keepAll = try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output", folder.appendingPathComponent("k").path, "--skip_reencode", "--encode",
                "none", "--resize-mode", "none",
            ])
        #expect(
            keepAll.status == 2 && keepAll.stderr.contains("--skip-reencode applies to an --encode format"),
            "\(keepAll.stderr)")

        // --help keeps webimage's own names.
        let help = try await CLIRunner.run("webimage", ["bulk", "--help"])
        #expect(help.stdout.contains("--output <dir>") && help.stdout.contains("--size <size>"), "\(help.stdout)")
        #expect(!help.stdout.contains("--img2dataset-input-format"), "\(help.stdout)")
    }

    /// Writes argv[2]: the JPEG argv[1] with a camera's EXIF spliced in after its SOI (make, model, times,
    /// exposure, GPS, an EXIF version, a thumbnail IFD), and prints img2dataset's `exif` text for it.
    static let cameraJPEG = #"""
        import io, json, struct, sys, exifread
        jpeg = open(sys.argv[1], "rb").read()
        def ifd(entries, start, nxt=0):
            head, tail = struct.pack(">H", len(entries)), b""
            data_at = start + 2 + 12 * len(entries) + 4
            for tag, kind, count, payload in entries:
                if len(payload) <= 4:
                    value = payload.ljust(4, b"\0")
                else:
                    value = struct.pack(">I", data_at + len(tail))
                    tail += payload + (b"\0" if len(payload) % 2 else b"")
                head += struct.pack(">HHI", tag, kind, count) + value
            return head + struct.pack(">I", nxt) + tail
        def rational(*pairs):
            return b"".join(struct.pack(">II", a, b) for a, b in pairs)
        exif_at, gps_at, thumb_at = 400, 700, 900
        ifd0 = ifd([
            (0x010F, 2, 6, b"Canon\0"), (0x0110, 2, 14, b"Canon EOS 5D\0\0"), (0x0112, 3, 1, struct.pack(">H", 1)),
            (0x011A, 5, 1, rational((72, 1))), (0x0128, 3, 1, struct.pack(">H", 2)),
            (0x0132, 2, 20, b"2021:07:04 12:30:45\0"), (0x8769, 4, 1, struct.pack(">I", exif_at)),
            (0x8825, 4, 1, struct.pack(">I", gps_at)),
        ], 8, thumb_at)
        exif = ifd([
            (0x829A, 5, 1, rational((1, 60))), (0x829D, 5, 1, rational((28, 10))), (0x8827, 3, 1, struct.pack(">H", 400)),
            (0x9000, 7, 4, b"0230"), (0x9003, 2, 20, b"2021:07:04 12:30:45\0"), (0x9209, 3, 1, struct.pack(">H", 16)),
            (0x920A, 5, 1, rational((50, 1))), (0xA402, 3, 1, struct.pack(">H", 0)),
        ], exif_at)
        gps = ifd([
            (0x0001, 2, 2, b"N\0"), (0x0002, 5, 3, rational((48, 1), (51, 1), (2343, 100))),
            (0x0003, 2, 2, b"E\0"), (0x0004, 5, 3, rational((2, 1), (21, 1), (789, 100))),
        ], gps_at)
        thumb = ifd([(0x0103, 3, 1, struct.pack(">H", 6)), (0x011A, 5, 1, rational((72, 1)))], thumb_at)
        tiff = bytearray(b"MM\0*" + struct.pack(">I", 8) + ifd0)
        for at, block in ((exif_at, exif), (gps_at, gps), (thumb_at, thumb)):
            tiff += b"\0" * (at - len(tiff)) + block
        app1 = b"Exif\0\0" + bytes(tiff)
        data = jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + jpeg[2:]
        open(sys.argv[2], "wb").write(data)
        tags = exifread.process_file(io.BytesIO(data), details=False)
        print(json.dumps({k: str(v).strip() for k, v in tags.items() if v is not None}))
        """#

    @Test("the exif field is img2dataset's text for a camera's EXIF, in the jsonl, the sidecar and the Parquet file")
    func exifAsImg2datasetWritesIt() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let photo = folder.appendingPathComponent("camera.jpg")
        let source = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/corpus/images/astronaut-baseline.jpg")
        let printed = try await BulkParquetTests.python(Self.cameraJPEG, [source.path, photo.path])
        let expected = try #require(printed.last)
        // The EXIF is all there: names, labels, reduced ratios, GPS, and ExifVersion read as exifread reads it.
        for part in [
            #""Image Make": "Canon""#, #""EXIF ExposureTime": "1/60""#, #""EXIF FNumber": "14/5""#,
            #""GPS GPSLatitude": "[48, 51, 2343/100]""#, #""Image Orientation": "Horizontal (normal)""#,
            #""EXIF ExifVersion": """#, #""Thumbnail Compression": "JPEG (old-style)""#,
        ] {
            #expect(expected.contains(part), "\(expected)")
        }
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        let bytes = try Data(contentsOf: photo)
        server.route("/camera.jpg") { _ in
            LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/jpeg")], body: .data(bytes))
        }
        let list = try Self.list([server.url("/camera.jpg").absoluteString, "not a url"], in: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--url_list", list.path, "--output_folder", output.path, "--output_format", "files",
                "--image_size", "32", "--allow-destination", "127.0.0.0/8",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try BulkInputTests.rows(output)
        #expect(rows.first?["exif"] as? String == expected)
        #expect(rows.last?["exif"] is NSNull)
        let sidecar = output.appendingPathComponent("00000/000000000.json")
        let meta = try JSONSerialization.jsonObject(with: Data(contentsOf: sidecar)) as? [String: Any]
        #expect(meta?["exif"] as? String == expected)
        let parquet = try await BulkParquetTests.python(
            "import sys, pyarrow.parquet as pq\n"
                + "rows = pq.read_table(sys.argv[1]).to_pylist()\n"
                + "print([row['exif'] for row in rows if row['status'] == 'success'][0])",
            [output.appendingPathComponent("00000.parquet").path])
        #expect(parquet.last == expected)

        // --extract_exif False (and webimage's --no-extract-exif): no field at all.
        let off = folder.appendingPathComponent("off")
        let quiet = try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output_folder", off.path, "--extract_exif", "False", "--allow-destination",
                "127.0.0.0/8",
            ])
        #expect(quiet.status == 0, "\(quiet.stderr)")
        #expect(try BulkInputTests.rows(off).allSatisfy { $0["exif"] == nil })
    }

    @Test("--skip_reencode keeps a file already in the encode format, unresized and opaque, byte for byte")
    func skipReencodeKeepsTheBytes() async throws {
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        var pixels: [UInt8] = []
        for index in 0..<(24 * 16) { pixels += [UInt8(index % 256), 120, UInt8(255 - index % 256), 255] }
        let frame = ImageFrame(width: 24, height: 16, bytesPerRow: 96, pixels: pixels)
        let jpeg = try JPEGEncoder(quality: 70).encode(Image(format: .png, width: 24, height: 16, frames: [frame]))
        let png = try PNGEncoder().encode(frame)
        server.route("/photo.jpg") { _ in
            LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/jpeg")], body: .data(jpeg))
        }
        server.route("/photo.png") { _ in
            LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/png")], body: .data(png))
        }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try Self.list(
            [server.url("/photo.jpg").absoluteString, server.url("/photo.png").absoluteString], in: folder)
        /// The saved files of a run with `options`, in key order.
        func saved(_ options: [String]) async throws -> [Data] {
            let output = folder.appendingPathComponent("out-\(UUID().uuidString)")
            let run = try await CLIRunner.run(
                "webimage",
                [
                    "bulk", "--url_list", list.path, "--output_folder", output.path, "--output_format", "files",
                    "--encode_format", "jpg", "--encode_quality", "95", "--allow-destination", "127.0.0.0/8",
                ] + options)
            #expect(run.status == 0, "\(options): \(run.stderr)")
            let shard = output.appendingPathComponent("00000")
            return try ["000000000.jpg", "000000001.jpg"].map {
                try Data(contentsOf: shard.appendingPathComponent($0))
            }
        }
        // Unresized JPEG: kept as it came; the PNG becomes a JPEG all the same.
        let skipped = try await saved(["--resize_mode", "no", "--skip_reencode", "True"])
        #expect(skipped[0] == jpeg)
        #expect(skipped[1] != png && skipped[1].starts(with: [0xFF, 0xD8]))
        // Without the option, and when the resize changes the size, the JPEG is encoded again.
        let encoded = try await saved(["--resize_mode", "no"])
        #expect(encoded[0] != jpeg && encoded[0].starts(with: [0xFF, 0xD8]))
        let resized = try await saved(["--resize_mode", "keep_ratio", "--image_size", "8", "--skip_reencode"])
        #expect(resized[0] != jpeg && resized[0].starts(with: [0xFF, 0xD8]))
    }

    @Test("records, .json sidecars, Parquet and stats carry img2dataset's field names and types; url as given")
    func outputsHaveImg2datasetFields() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Row 1 is not a URL, row 2 has a space webimage must not re-encode in the record, row 3 is a 404;
        // /gen/0.png with ?x=a b is still a generated image.
        let spaced = server.url("/gen/0.png").absoluteString + "?x=a b"
        let urls = [
            server.url("/gen/0.png").absoluteString, "not a url", spaced, server.url("/gen/3.png").absoluteString,
        ]
        let list = try Self.list(urls, in: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output_folder", output.path, "--image_size", "8", "--caption_col", "caption",
                "--save_additional_columns", "n", "--allow-destination", "127.0.0.0/8",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try BulkInputTests.rows(output)
        #expect(rows.map { $0["url"] as? String } == urls)
        #expect(
            rows.map { $0["status"] as? String } == ["success", "failed_to_download", "success", "failed_to_download"])
        let fields: Set<String> = [
            "key", "url", "status", "error_message", "caption", "width", "height", "original_width",
            "original_height", "sha256", "n", "error_code", "ms", "attempts", "exif",
        ]
        for row in rows { #expect(Set(row.keys) == fields, "\(row.keys.sorted())") }
        // img2dataset's exif: the tags' text for a success ({} for a PNG), null for a failure.
        #expect(rows.map { $0["exif"] as? String } == ["{}", nil, "{}", nil] && rows[1]["exif"] is NSNull)
        #expect(rows[0]["error_message"] is NSNull && (rows[1]["error_message"] as? String)?.isEmpty == false)
        #expect(rows[0]["original_width"] as? Int == 24 && rows[0]["width"] as? Int == 8)

        let stats = try Self.stats(output)
        #expect(
            Set(stats.keys) == [
                "count", "successes", "failed_to_download", "failed_to_resize", "duration", "start_time", "end_time",
                "status_dict", "shard", "bytes", "bytes_downloaded",
            ], "\(stats.keys.sorted())")
        // Two copies of /gen/0.png arrived (the 404's body is no file), as curl counts them.
        let curl = try await CLIRunner.runProgram(
            "/usr/bin/env", ["curl", "-s", "-o", "/dev/null", "-w", "%{size_download}", urls[0]])
        let png = try #require(Int(curl.stdout), "\(curl.stderr)")
        #expect(png > 0 && stats["bytes_downloaded"] as? Int == 2 * png, "\(stats)")
        #expect(stats["count"] as? Int == 4 && stats["successes"] as? Int == 2)
        #expect(stats["failed_to_download"] as? Int == 2 && stats["failed_to_resize"] as? Int == 0)
        #expect(
            stats["status_dict"] as? [String: Int] == ["success": 2, "invalidURL": 1, "invalidDownloadStatusCode": 1])
        let start = try #require(stats["start_time"] as? Double)
        let end = try #require(stats["end_time"] as? Double)
        #expect(start <= end && end - start <= (stats["duration"] as? Double ?? -1) + 1)

        // bulk-stats reads the new fields.
        let summed = try await CLIRunner.run("webimage", ["bulk-stats", output.path])
        #expect(
            summed.status == 0 && summed.stdout.contains("failed to download: 2, failed to resize: 0"),
            "\(summed.stdout)")
        #expect(summed.stdout.contains("images: 4, ok 2"), "\(summed.stdout)")
    }

    @Test(
        "the tar's .json sidecars and the Parquet file have img2dataset's names and types, as Python reads them",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: BulkCommandTests.webdatasetPython),
            "make test-python sets up .venv-test with pyarrow"))
    func sidecarsAndParquetForPython() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = [server.url("/gen/0.png").absoluteString, "not a url"]
        let list = try Self.list(urls, in: folder)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output_folder", output.path, "--output_format", "webdataset", "--image_size", "8",
                "--allow-destination", "127.0.0.0/8",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let script = """
            import json, sys, tarfile, pyarrow.parquet as pq
            folder = sys.argv[1]
            with tarfile.open(folder + "/00000.tar") as tar:
                for member in tar.getmembers():
                    if member.name.endswith(".json"):
                        meta = json.load(tar.extractfile(member))
                        print("json", ",".join(sorted(meta)), meta["status"], meta["url"])
            table = pq.read_table(folder + "/00000.parquet")
            for field in table.schema:
                print("parquet", field.name, field.type)
            rows = sorted(table.to_pylist(), key=lambda row: row["key"])
            print("rows", json.dumps([row["url"] for row in rows]), json.dumps([row["status"] for row in rows]))
            """
        let lines = try await BulkParquetTests.python(script, [output.path])
        let sidecar = try #require(lines.first { $0.hasPrefix("json ") })
        #expect(
            sidecar
                == "json attempts,caption,error_code,error_message,exif,height,key,ms,original_height,original_width,"
                + "sha256,status,url,width success \(urls[0])")
        let types = Dictionary(
            lines.filter { $0.hasPrefix("parquet ") }.map { line -> (String, String) in
                let parts = line.split(separator: " ")
                return (String(parts[1]), String(parts[2]))
            }, uniquingKeysWith: { first, _ in first })
        for name in ["width", "height", "original_width", "original_height"] {
            #expect(types[name] == "int32", "\(types)")
        }
        for name in ["key", "url", "status", "error_message", "exif", "sha256"] {
            #expect(types[name] == "string", "\(types)")
        }
        #expect(types["error"] == nil)
        #expect(lines.last == #"rows [""# + urls[0] + #"", "not a url"] ["success", "failed_to_download"]"#)
    }

    @Test("a run whose every row the destination policy refused names the option, exits 2, and its retry works")
    func allRefusedNamesTheOption() async throws {
        let (server, _) = try BulkCommandTests.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = [0, 1, 2].map { server.url("/gen/\($0).png").absoluteString }
        let list = try Self.list(urls, in: folder)
        let output = folder.appendingPathComponent("out")
        let refused = try await CLIRunner.run(
            "webimage", ["bulk", list.path, "--output", output.path, "--size", "8"])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(
            refused.stderr.contains("every row (3) failed with destinationNotAllowed")
                && refused.stderr.contains("--allow-private-destinations")
                && refused.stderr.contains("--retry-failed"), "\(refused.stderr)")
        #expect(refused.stderr.contains("0 ok, 3 failed"), "\(refused.stderr)")

        // What the message says to do.
        let retried = try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output", output.path, "--size", "8", "--retry-failed",
                "--allow-private-destinations",
            ])
        #expect(retried.status == 0 && retried.stderr.contains("3 ok, 0 failed"), "\(retried.stderr)")
    }

    @Test(
        "every row failing TLS names --insecure and exits 2; img2dataset's --ignore_ssl_certificate True is --insecure")
    func tlsFailuresNameInsecure() async throws {
        let server = try Fixtures.server(tls: .selfSigned)
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = server.url("/files/pixel-1x1.png").absoluteString
        let list = try Self.list([url, url + "?again"], in: folder)
        let strict = try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output", folder.appendingPathComponent("strict").path, "--size", "8",
                "--allow-destination", "127.0.0.0/8",
            ])
        #expect(strict.status == 2, "\(strict.stderr)")
        #expect(
            strict.stderr.contains("every row (2) failed with sslFailure") && strict.stderr.contains("--insecure"),
            "\(strict.stderr)")

        let ignoring = folder.appendingPathComponent("ignoring")
        let insecure = try await CLIRunner.run(
            "webimage",
            [
                "bulk", list.path, "--output_folder", ignoring.path, "--image_size", "8", "--ignore_ssl_certificate",
                "True", "--allow-destination", "127.0.0.0/8",
            ])
        #expect(insecure.status == 0, "\(insecure.stderr)")
        #expect(try BulkInputTests.rows(ignoring).map { $0["status"] as? String } == ["success", "success"])
    }

    @Test("a plan that fails (missing input, missing column) leaves no output folder behind; one that existed stays")
    func failedPlanLeavesNothing() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try Self.list(["http://127.0.0.1:9/a.png"], in: folder)
        let missing = try await CLIRunner.run(
            "webimage",
            [
                "bulk", folder.appendingPathComponent("missing.csv").path, "--output",
                folder.appendingPathComponent("a/b/out").path,
            ])
        #expect(missing.status == 2, "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("a").path))

        let column = try await CLIRunner.run(
            "webimage",
            ["bulk", list.path, "--output_folder", folder.appendingPathComponent("out").path, "--url_col", "link"])
        #expect(column.status == 2 && column.stderr.contains("link"), "\(column.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("out").path))

        let existing = folder.appendingPathComponent("existing")
        try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: true)
        let kept = try await CLIRunner.run(
            "webimage", ["bulk", folder.appendingPathComponent("missing.csv").path, "--output", existing.path])
        #expect(kept.status == 2)
        #expect(FileManager.default.fileExists(atPath: existing.path))
    }

    @Test("bulk-stats reads stats written before img2dataset's names")
    func bulkStatsReadsOldFiles() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let old =
            #"{"shard":0,"count":5,"successes":3,"failures":{"tooSmall":1,"timedOut":1},"bytes":10,"duration":2,"#
            + #""started":100,"finished":102}"#
        try Data(old.utf8).write(to: folder.appendingPathComponent("00000_stats.json"))
        let run = try await CLIRunner.run("webimage", ["bulk-stats", folder.path, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(object["count"] as? Int == 5 && object["successes"] as? Int == 3)
        #expect(object["failedToDownload"] as? Int == 1 && object["failedToResize"] as? Int == 1)
        #expect(object["failures"] as? [String: Int] == ["tooSmall": 1, "timedOut": 1])
        #expect(object["wallSeconds"] as? Double == 2)
    }
}
