import Foundation
import LocalImageServer
import TestSupport
import Testing

/// img2dataset 1.47 from PyPI, which `make test-python` installs into `.venv-img2dataset`.
private let img2datasetExecutable = Fixtures.packageRoot.appendingPathComponent(".venv-img2dataset/bin/img2dataset")
    .path

/// img2dataset 1.47 itself (`.venv-img2dataset`) and `webimage bulk` on one URL list with the same
/// img2dataset options, their outputs compared as img2dataset's readers see them (compare_outputs.py:
/// the Parquet rows and column types, the tar members and json sidecars, the stats counts). Every
/// difference must be one the README lists; any other fails the test.
@Suite(
    "webimage bulk beside img2dataset 1.47", .timeLimit(.minutes(10)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: img2datasetExecutable)
            && FileManager.default.isExecutableFile(atPath: BulkCommandTests.webdatasetPython),
        "make test-python sets up .venv-img2dataset and .venv-test"))
struct BulkImg2datasetParityTests {
    static let img2dataset = img2datasetExecutable

    /// Corpus files on the loopback server, a 404 and a row that is no URL: JPEG (one with a camera's EXIF,
    /// one with EXIF orientation 6), PNG, WebP lossless and lossy, a GIF, a file that does not decode.
    static let files = [
        "astronaut-baseline.jpg", "coffee-rgb.png", "missing.jpg", "corrupt-header.webp",
        "chelsea-exif-orientation6.jpg", "horse-lossless.webp", "astronaut-lossy.webp", "chelsea.gif",
        "camera-gray.jpg", "coffee-progressive.jpg",
    ]

    @Test("the same rows, sizes, digests, EXIF, statuses, members and counts as img2dataset's own run")
    func sameOutputAsImg2dataset() async throws {
        let server = LocalImageServer(root: Fixtures.corpusImages)
        try server.start()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = Self.files.map { server.url("/files/\($0)").absoluteString } + ["not a url"]
        let lines = ["url,caption,n"] + urls.enumerated().map { "\($0.element),caption \($0.offset),\($0.offset)" }
        let list = folder.appendingPathComponent("list.csv")
        try (lines.joined(separator: "\n") + "\n").write(to: list, atomically: true, encoding: .utf8)
        let options = [
            "--url_list", list.path, "--input_format", "csv", "--url_col", "url", "--caption_col", "caption",
            "--save_additional_columns", #"["n"]"#, "--output_format", "webdataset", "--image_size", "64",
            "--resize_mode", "keep_ratio", "--processes_count", "1", "--thread_count", "4", "--enable_wandb",
            "False", "--distributor", "multiprocessing", "--number_sample_per_shard", "100", "--timeout", "10",
        ]
        let theirs = folder.appendingPathComponent("img2dataset")
        // albumentations asks PyPI for a newer version unless told not to: nothing leaves loopback.
        let reference = try await CLIRunner.runProgram(
            Self.img2dataset, options + ["--output_folder", theirs.path],
            environment: ["NO_ALBUMENTATIONS_UPDATE": "1", "WANDB_MODE": "disabled"])
        #expect(reference.status == 0, "\(reference.stderr.suffix(2000))")
        let ours = folder.appendingPathComponent("webimage")
        let run = try await CLIRunner.run(
            "webimage",
            ["bulk"] + options.dropFirst(2) + [list.path, "--output_folder", ours.path]
                + ["--allow-destination", "127.0.0.0/8"])
        #expect(run.status == 0, "\(run.stderr)")
        let script = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/img2dataset/compare_outputs.py").path
        let compared = try await CLIRunner.runProgram(
            BulkCommandTests.webdatasetPython, [script, theirs.path, ours.path])
        #expect(compared.status == 0, "\(compared.stderr)")
        let result = try #require(
            try JSONSerialization.jsonObject(with: Data(compared.stdout.utf8)) as? [String: Any], "\(compared.stdout)")
        // The members, the sidecars' keys, the columns and the counts are img2dataset's.
        #expect(result["members"] as? [String] == [], "\(result)")
        #expect(result["sidecar_keys"] as? [String] == [], "\(result)")
        #expect(result["missing_columns"] as? [String] == [], "\(result)")
        #expect((result["stats"] as? [String: Any])?.isEmpty == true, "\(result)")
        // Every column has img2dataset's type (the kept `n` is int64 in both).
        #expect(result["column_types"] as? [String: [String]] == [:], "\(result)")
        // The README's known differences, and nothing else:
        let rows = try #require(result["rows"] as? [String: [String: [Any]]])
        var unexplained: [String] = []
        for (url, fields) in rows {
            for (field, values) in fields {
                let (mine, theirs) = ("\(values[1])", "\(values[0])")
                switch field {
                case "error_message":
                    continue  // the words differ; the status and the stats' counts are compared
                case "width", "height", "original_width",
                    "original_height" where url.hasSuffix("orientation6.jpg"):
                    continue  // bulk applies the EXIF orientation, img2dataset (OpenCV) does not
                default:
                    unexplained.append("\(url) \(field): img2dataset \(theirs), webimage \(mine)")
                }
            }
        }
        #expect(unexplained.isEmpty, "\(unexplained.joined(separator: "\n"))")
        // The orientation difference is the swap it should be, not something else.
        let rotated = try #require(rows.first { $0.key.hasSuffix("orientation6.jpg") }?.value)
        #expect("\(rotated["original_width"]?[0] ?? "")" == "\(rotated["original_height"]?[1] ?? "")")
        #expect("\(rotated["width"]?[0] ?? "")" == "\(rotated["height"]?[1] ?? "")")
    }
}
