import Foundation
import TestSupport
import Testing

@testable import WebImageDataset

/// ``EXIFSummary`` against img2dataset's own computation of its `exif` column (exifread-nocycle 3.0.1,
/// the reader img2dataset 1.47 requires, in `.venv-test`), on generated images and a photograph's EXIF.
@Suite("EXIFSummary", .timeLimit(.minutes(10)))
struct EXIFSummaryTests {
    @Test("the exif text is img2dataset's, byte for byte or null alike, for 1,500 generated images")
    func matchesImg2dataset() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("exif-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/exif/exif_cases.py").path
        let run = try await CLIRunner.runProgram(MotoS3.python, [script, folder.path, "1500", "2026"])
        #expect(run.status == 0, "\(run.stderr)")
        let expected = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("expected.json")))
                as? [String: Any])
        #expect(expected.count == 1500)
        var mismatches: [String] = []
        var (tagged, empty, null) = (0, 0, 0)
        for (name, value) in expected.sorted(by: { $0.key < $1.key }) {
            let want = value as? String
            let got = EXIFSummary.json(of: try Data(contentsOf: folder.appendingPathComponent(name)))
            if got != want { mismatches.append("\(name): want \(want ?? "null"), got \(got ?? "null")") }
            switch want {
            case nil: null += 1
            case "{}": empty += 1
            default: tagged += 1
            }
        }
        #expect(
            mismatches.isEmpty, "\(mismatches.count) differ; first: \(mismatches.prefix(3).joined(separator: "\n"))")
        // The cases cover tags, no EXIF and exifread's raises, each many times. (Seeds 7 and 99 with 3,000
        // images each matched too; the suite runs one seed for time: exifread takes ~17 ms an image.)
        #expect(tagged > 500 && empty > 150 && null > 150, "\(tagged) \(empty) \(null)")
    }

    @Test("a photograph's orientation, and files without EXIF")
    func corpusFiles() throws {
        let corpus = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/corpus/images")
        let rotated = try Data(contentsOf: corpus.appendingPathComponent("chelsea-exif-orientation6.jpg"))
        // What img2dataset writes for it (exifread-nocycle 3.0.1).
        #expect(EXIFSummary.json(of: rotated) == #"{"Image Orientation": "Rotated 90 CW"}"#)
        for name in ["coffee-rgb.png", "chelsea.gif", "astronaut-lossy.webp", "astronaut-baseline.jpg"] {
            #expect(EXIFSummary.json(of: try Data(contentsOf: corpus.appendingPathComponent(name))) == "{}", "\(name)")
        }
        #expect(EXIFSummary.json(of: Data()) == "{}")
        // HEIC: img2dataset writes null (exifread-nocycle raises KeyError 'hdlr' on each of these).
        let heif = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/heif")
        for name in ["alpha.heic", "grid.heic", "orientation6.heic", "thumbnail.heic"] {
            #expect(EXIFSummary.json(of: try Data(contentsOf: heif.appendingPathComponent(name))) == nil, "\(name)")
        }
    }

    @Test("an EXIF block that would make exifread read gigabytes ends in null at once, not in a hang")
    func boundedWork() {
        // 60,000 ASCII entries, each naming the whole 2 MB file: 120 GB for exifread to read and print.
        let entries = 60_000
        var tiff: [UInt8] = Array("II".utf8) + [42, 0, 8, 0, 0, 0] + [UInt8(entries & 0xFF), UInt8(entries >> 8)]
        for index in 0..<entries {
            let tag = 0x1000 + index
            tiff += [UInt8(tag & 0xFF), UInt8(tag >> 8 & 0xFF), 2, 0] + [0x80, 0x84, 0x1E, 0x00] + [8, 0, 0, 0]
        }
        tiff += [0, 0, 0, 0] + [UInt8](repeating: 0x41, count: 2_000_000)
        #expect(EXIFSummary.json(of: Data(tiff)) == nil)
        // 60,000 short entries print a text over 1 MiB: null too.
        var many: [UInt8] = Array("II".utf8) + [42, 0, 8, 0, 0, 0] + [UInt8(entries & 0xFF), UInt8(entries >> 8)]
        for index in 0..<entries {
            let tag = 0x1000 + index
            many += [UInt8(tag & 0xFF), UInt8(tag >> 8 & 0xFF), 3, 0] + [1, 0, 0, 0] + [7, 0, 0, 0]
        }
        #expect(EXIFSummary.json(of: Data(many + [0, 0, 0, 0])) == nil)
    }

    @Test("Python's float repr, as exifread prints FLOAT and DOUBLE values")
    func pythonFloats() {
        // repr() of each in Python 3.11.
        let cases: [(Double, String)] = [
            (0.1, "0.1"), (1e16, "1e+16"), (1234567890123456.0, "1234567890123456.0"), (1e-5, "1e-05"),
            (1e-4, "0.0001"), (2.5, "2.5"), (-1e300, "-1e+300"), (.leastNonzeroMagnitude, "5e-324"), (-0.0, "-0.0"),
            (0, "0.0"),
            (Double(Float(0.1)), "0.10000000149011612"), (.infinity, "inf"), (-.infinity, "-inf"), (.nan, "nan"),
            (100, "100.0"), (123.456, "123.456"), (1.5e-7, "1.5e-07"),
            (3.4028234663852886e38, "3.4028234663852886e+38"),
        ]
        for (value, text) in cases { #expect(PythonText.float(value) == text, "\(value)") }
    }
}
