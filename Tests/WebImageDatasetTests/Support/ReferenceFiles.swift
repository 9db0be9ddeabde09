import Foundation
import TestSupport
import Testing

@testable import WebImageDataset

/// The Parquet files Tests/Fixtures/parquet/generate.py writes with pyarrow and fastparquet (once per test
/// run, into a temporary folder), and what pyarrow reads back from each.
enum ReferenceFiles {
    /// The Python `make test` prepares with pyarrow and fastparquet (`.venv-test`).
    static let python = Fixtures.packageRoot.appendingPathComponent(".venv-test/bin/python3").path
    static var available: Bool { FileManager.default.isExecutableFile(atPath: python) }

    struct Manifest: Decodable {
        struct Refusal: Decodable {
            var name: String
            var column: String
            var feature: String
        }
        var files: [String]
        var errors: [Refusal]
    }

    /// The folder with the generated files, generated on first use.
    static let folder: Result<URL, any Error> = Result {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "webimage-parquet-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        // Removed when the test process exits (Swift Testing has no hook after the last test).
        atexit { ReferenceFiles.removeFolder() }
        try runGenerator([folder.path])
        return folder
    }

    private static func removeFolder() {
        if case .success(let folder) = folder { try? FileManager.default.removeItem(at: folder) }
    }

    /// Runs generate.py with `arguments`.
    static func runGenerator(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments =
            [Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/parquet/generate.py").path] + arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ParquetError(.io, "generate.py \(arguments) exited with \(process.terminationStatus)")
        }
    }

    /// What pyarrow reads from the Parquet file at `url` (written next to it as .jsonl).
    static func pyarrowReading(_ url: URL) throws -> (header: [String: Any], rows: [[Tagged]]) {
        try runGenerator(["--dump", url.path])
        return try expected(at: url.deletingPathExtension().appendingPathExtension("jsonl"))
    }

    static func url(_ name: String, _ extension: String = "parquet") throws -> URL {
        try folder.get().appendingPathComponent("\(name).\(`extension`)")
    }

    static func manifest() throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: try url("manifest", "json")))
    }

    /// What pyarrow read from `name`: its header and one tagged row per line.
    static func expected(_ name: String) throws -> (header: [String: Any], rows: [[Tagged]]) {
        try expected(at: try url(name, "jsonl"))
    }

    static func expected(at url: URL) throws -> (header: [String: Any], rows: [[Tagged]]) {
        let data = try Data(contentsOf: url)
        var lines = data.split(separator: UInt8(ascii: "\n"))
        guard !lines.isEmpty else { throw ParquetError(.io, "\(url.path) is empty") }
        let header = try #require(try JSONSerialization.jsonObject(with: lines.removeFirst()) as? [String: Any])
        let rows = try lines.map { line in
            let cells = try #require(try JSONSerialization.jsonObject(with: line) as? [Any])
            return try cells.map(Tagged.init(json:))
        }
        return (header, rows)
    }
}

/// A cell as generate.py writes it: nothing lost, comparable with `==`.
enum Tagged: Equatable, CustomStringConvertible {
    case null
    case atom(String)
    case list([Tagged])

    init(json: Any) throws {
        switch json {
        case is NSNull: self = .null
        case let text as String: self = .atom(text)
        case let items as [Any]: self = .list(try items.map(Tagged.init(json:)))
        default: throw ParquetError(.io, "unexpected JSON cell \(json)")
        }
    }

    init(_ value: ParquetValue) {
        switch value {
        case .null: self = .null
        case .bool(let value): self = .atom(value ? "b:1" : "b:0")
        case .int32(let value): self = .atom("i:\(value)")
        case .int64(let value): self = .atom("i:\(value)")
        case .float(let value): self = Self.double(Double(value))
        case .double(let value): self = Self.double(value)
        case .string(let value): self = .atom("s:" + value)
        case .bytes(let value): self = .atom("x:" + value.map { String(format: "%02x", $0) }.joined())
        case .list(let items): self = .list(items.map(Tagged.init))
        }
    }

    private static func double(_ value: Double) -> Tagged {
        .atom(value.isNaN ? "d:nan" : "d:\(value.bitPattern)")
    }

    var description: String {
        switch self {
        case .null: "null"
        case .atom(let text): text.debugDescription
        case .list(let items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        }
    }
}
