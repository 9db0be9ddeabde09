import Foundation
import TestSupport
import Testing
import WebImage

@testable import WebImageDataset

/// webdataset shards as `bulk`'s input: ``TarReader`` against Python's `tarfile` (its three formats), the
/// samples ``WebDatasetRowReader`` makes against webdataset's own iterator (both in `.venv-test`), and
/// damaged archives.
@Suite(
    "webdataset input", .timeLimit(.minutes(10)),
    .enabled(if: FileManager.default.isExecutableFile(atPath: MotoS3.python), "make test-python sets up .venv-test"))
struct WebDatasetInputTests {
    /// The folder tar_cases.py wrote, and what it read there.
    static func cases() async throws -> (URL, [String: Any]) {
        let folder = try CLIRunner.temporaryFolder()
        let script = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/webdataset/tar_cases.py").path
        let run = try await CLIRunner.runProgram(MotoS3.python, [script, folder.path])
        #expect(run.status == 0, "\(run.stderr)")
        let expected = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("expected.json")))
                as? [String: Any])
        return (folder, expected)
    }

    /// The regular members of `path`: name, size, sha256 of the bytes.
    static func regularFiles(_ path: String) throws -> [[String]] {
        let reader = try TarReader(path: path)
        var files: [[String]] = []
        while let member = try reader.next() {
            guard member.isRegularFile else { continue }
            files.append([member.name, String(member.size), BulkHashAlgorithm.sha256.hex(try reader.read(member))])
        }
        return files
    }

    static func rows(_ reader: any BulkRowReading) throws -> [BulkRow] {
        var rows: [BulkRow] = []
        while let row = try reader.next() { rows.append(row) }
        return rows
    }

    @Test("ustar, GNU and pax archives: the regular files, names, sizes and bytes tarfile reads")
    func formatsAsTarfileReadsThem() async throws {
        let (folder, expected) = try await Self.cases()
        defer { try? FileManager.default.removeItem(at: folder) }
        for format in ["ustar", "gnu", "pax"] {
            let listed = try #require(expected[format] as? [[Any]])
            let want: [[String]] = listed.map { fields in fields.map { "\($0)" } }
            let got = try Self.regularFiles(folder.appendingPathComponent("\(format).tar").path)
            #expect(got == want, "\(format)")
            #expect(want.count >= 6, "\(format): \(want.count) files")
        }
        // Each archive also holds a directory and a symlink: not regular files, and not samples.
        let rows = try Self.rows(
            WebDatasetRowReader(
                paths: [folder.appendingPathComponent("gnu.tar").path], columns: BulkColumns(), maxLineBytes: 1 << 20))
        #expect(!rows.contains { $0.url.hasSuffix("/link") || $0.url.hasSuffix("/somedir") })
    }

    @Test("samples are webdataset's: consecutive members of one key, the extension after the first dot")
    func groupingAsWebdataset() async throws {
        let (folder, expected) = try await Self.cases()
        defer { try? FileManager.default.removeItem(at: folder) }
        let samples = try #require(expected["grouping"] as? [[Any]])
        let reader = WebDatasetRowReader(
            paths: [folder.appendingPathComponent("grouping.tar").path], columns: BulkColumns(),
            maxLineBytes: 1 << 20)
        let rows = try Self.rows(reader)
        // Without a json url, a row's url is ARCHIVE/KEY.
        #expect(rows.map(\.url) == samples.map { "grouping.tar/\($0[0])" })
        for (row, sample) in zip(rows, samples) {
            let suffixes = try #require(sample[1] as? [String])
            let imageSuffix = suffixes.first { WebDatasetRowReader.imageExtensions.contains($0) }
            switch row.image {
            case .file(let data, let member)?:
                #expect(imageSuffix != nil && member.lowercased().hasSuffix("." + (imageSuffix ?? "")), "\(member)")
                #expect(String(decoding: data, as: UTF8.self) == member)  // each member holds its own name
            case .unusable(let reason)?:
                // s1's json member is not JSON (it holds its name); s1 again has only a txt.
                #expect(imageSuffix == nil || suffixes.contains("json"), "\(reason)")
            case nil:
                Issue.record("a webdataset row always carries its image or a reason")
            }
            if suffixes.contains("txt"), !suffixes.contains("json") {
                #expect(row.caption?.hasSuffix(".txt") == true || row.caption?.hasSuffix(".TXT") == true)
            }
        }
        // Counting rows reads headers only and agrees with reading them.
        let counter = WebDatasetRowReader(
            paths: [folder.appendingPathComponent("grouping.tar").path], columns: BulkColumns(),
            maxLineBytes: 1 << 20)
        #expect(try counter.skip(Int.max) == samples.count)
    }

    @Test("a sample's json gives the url and columns, its txt the caption; what cannot be used is said")
    func rowsFromSamples() throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("rows.tar")
        let writer = try TarWriter(url: path)
        let json = #"{"url": "https://example.com/a b.jpg", "caption": "from json", "n": 3, "box": [[0, 0, 0.5, 0.5]]}"#
        try writer.add(name: "000.jpg", data: Data("image zero".utf8))
        try writer.add(name: "000.json", data: Data(json.utf8))
        try writer.add(name: "000.txt", data: Data("from txt".utf8))
        try writer.add(name: "001.png", data: Data("image one".utf8))
        try writer.add(name: "001.txt", data: Data("caption one".utf8))
        try writer.add(name: "002.json", data: Data("{not json".utf8))
        try writer.add(name: "002.jpg", data: Data(count: 10))
        try writer.add(name: "003.txt", data: Data("no image".utf8))
        try writer.add(name: "004.webp", data: Data(count: 2_000))
        try writer.add(name: "005.txt", data: Data(count: 300))
        try writer.add(name: "005.jpg", data: Data(count: 10))
        try writer.finish()
        let reader = WebDatasetRowReader(
            paths: [path.path], columns: BulkColumns(caption: "caption", saved: ["n"], boxes: "box"),
            maxLineBytes: 256, maxImageBytes: 1_000)
        let rows = try Self.rows(reader)
        try #require(rows.count == 6)
        #expect(rows[0].url == "https://example.com/a b.jpg")
        #expect(rows[0].caption == "from json")
        // The json's number stays a number, as the record that wrote it had it.
        #expect(rows[0].saved == [BulkColumnValue(name: "n", value: .int(3))])
        #expect(rows[0].boxes.count == 1)
        #expect(rows[0].image == .file(Data("image zero".utf8), member: "000.jpg"))
        #expect(rows[1].url == "rows.tar/001")
        #expect(rows[1].caption == "caption one")
        #expect(rows[1].saved == [BulkColumnValue(name: "n", value: .null)])
        func reason(_ row: BulkRow) -> String {
            if case .unusable(let reason)? = row.image { return reason }
            return "usable"
        }
        #expect(reason(rows[2]).contains("'002' of 'rows.tar' has a json member that is not valid JSON"))
        #expect(reason(rows[3]).contains("has no image member (only .txt)"))
        #expect(rows[3].caption == "no image")
        #expect(reason(rows[4]).contains("'004.webp' of 2000 bytes, more than 1000"))
        #expect(reason(rows[5]).contains("txt member of 300 bytes, more than --max-line-bytes (256)"))
        // The saved columns are there on every row, an unusable one's included.
        #expect(rows.allSatisfy { $0.saved.map(\.name) == ["n"] })
    }

    @Test("the engine reprocesses 60 samples in shards of 7: each image decoded and resized, keys in order")
    func engineReprocesses() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let names = ["astronaut-baseline.jpg", "coffee-rgb.png", "horse-lossless.webp", "chelsea.gif", "empty.jpg"]
        let files = try names.map { try Data(contentsOf: Fixtures.corpusImages.appendingPathComponent($0)) }
        let input = folder.appendingPathComponent("in.tar")
        let writer = try TarWriter(url: input)
        for index in 0..<60 {
            let pick = index % names.count
            let ext = (names[pick] as NSString).pathExtension
            try writer.add(name: String(format: "%05d.%@", index, ext), data: files[pick])
            try writer.add(name: String(format: "%05d.json", index), data: Data(#"{"url": "u\#(index)"}"#.utf8))
        }
        try writer.finish()
        let output = folder.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        let plan = try BulkPlan.make(
            input: input.path, columns: BulkColumns(), maxLineBytes: 1 << 20, shardSize: 7, format: "webdataset")
        #expect(plan.rows == 60 && plan.shards == 9)
        var settings = BulkSettings()
        settings.resize = BulkResize(mode: .centerCrop, size: 24)
        settings.encoder = PNGEncoder()
        let engine = BulkEngine(
            input: input.path, plan: plan, assigned: Array(0..<plan.shards), directory: output,
            downloader: ImageDownloader(), settings: settings, columns: BulkColumns())
        let (summary, _) = try await BulkEngineTests.collect(engine) { try await engine.run() }
        // empty.jpg (every fifth) does not decode; the others are 24×24 PNGs.
        #expect(summary.written == 9 && summary.succeeded == 48 && summary.failed == 12, "\(summary)")
        #expect(summary.failures == ["badImageData": 12])
        var urls: [String] = []
        for shard in 0..<9 {
            let stem = plan.keys.stem(shard: shard)
            let lines = try String(contentsOf: output.appendingPathComponent(stem + ".jsonl"), encoding: .utf8)
                .split(separator: "\n")
            for line in lines {
                let record = try JSONDecoder().decode(BulkSampleRecord.self, from: Data(line.utf8))
                urls.append(record.url)
                let index = try #require(Int(record.url.dropFirst()))
                #expect(record.key == plan.keys.key(shard: index / 7, index: index % 7))
                if index % names.count == 4 {
                    #expect(record.status == .failedToResize)
                } else {
                    #expect(record.status == .success && record.width == 24 && record.height == 24, "\(record)")
                }
            }
        }
        #expect(urls.sorted() == (0..<60).map { "u\($0)" }.sorted())
    }

    @Test("a damaged archive is an error naming where: bad checksum, truncation, a size past the end")
    func damagedArchives() throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let good = folder.appendingPathComponent("good.tar")
        let writer = try TarWriter(url: good)
        for index in 0..<4 { try writer.add(name: "\(index).jpg", data: Data(repeating: UInt8(index), count: 700)) }
        try writer.finish()
        let bytes = try Data(contentsOf: good)
        func failure(_ data: Data) throws -> String? {
            let path = folder.appendingPathComponent("damaged.tar")
            try data.write(to: path)
            do {
                _ = try Self.rows(
                    WebDatasetRowReader(paths: [path.path], columns: BulkColumns(), maxLineBytes: 1 << 20))
                return nil
            } catch let error as BulkInputError {
                return error.description
            }
        }
        var flipped = bytes
        flipped[1536 + 10] ^= 0x20  // the second header's name
        #expect(try failure(flipped)?.contains("the header at byte 1536: not a tar header (its checksum") == true)
        #expect(try failure(bytes.prefix(1536 + 512 + 100))?.contains("past the end of the file") == true)
        #expect(try failure(bytes.prefix(1536 + 200))?.contains("ends inside a header: truncated") == true)
        // Ending right after a member, without the two zero blocks, is a whole archive (as tarfile reads it).
        #expect(try failure(bytes.prefix(4 * 1536)) == nil)
        var huge = bytes
        huge.replaceSubrange(124..<136, with: Array("77777777777\u{0}".utf8))
        var sum = 0
        for (index, byte) in huge.prefix(512).enumerated() { sum += (148..<156).contains(index) ? 32 : Int(byte) }
        huge.replaceSubrange(148..<156, with: Array(String(format: "%06o", sum).utf8) + [0, 32])
        #expect(try failure(huge)?.contains("declares 8589934591 bytes, past the end of the file") == true)
    }

    @Test("2,000 mutated archives: every one reads to its end or fails with an input error, never a crash")
    func mutatedArchives() throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let good = folder.appendingPathComponent("good.tar")
        let writer = try TarWriter(url: good)
        for index in 0..<3 {
            try writer.add(name: "\(index).jpg", data: Data(repeating: UInt8(index), count: 300 + index * 400))
            try writer.add(name: "\(index).json", data: Data(#"{"url": "https://example.com/\#(index)"}"#.utf8))
        }
        try writer.finish()
        let bytes = [UInt8](try Data(contentsOf: good))
        var generator = SeededGenerator(seed: 38)
        var (read, refused) = (0, 0)
        let path = folder.appendingPathComponent("mutant.tar")
        for round in 0..<2_000 {
            var mutant = bytes
            if round % 4 == 0 {
                mutant = Array(mutant.prefix(Int.random(in: 0..<mutant.count, using: &generator)))
            } else {
                for _ in 0..<Int.random(in: 1...8, using: &generator) {
                    // Mostly in the headers, where a change means something.
                    let header = [0, 1024, 2048, 3072, 4096, 5120].randomElement(using: &generator) ?? 0
                    let offset = min(mutant.count - 1, header + Int.random(in: 0..<512, using: &generator))
                    mutant[offset] = UInt8.random(in: 0...255, using: &generator)
                }
            }
            try Data(mutant).write(to: path)
            do {
                let rows = try Self.rows(
                    WebDatasetRowReader(paths: [path.path], columns: BulkColumns(), maxLineBytes: 1 << 20))
                #expect(rows.count <= 6)
                read += 1
            } catch is BulkInputError {
                refused += 1
            }
        }
        #expect(read + refused == 2_000)
        #expect(read > 0 && refused > 0, "\(read) read, \(refused) refused")
    }
}
