import ArgumentParser
import Foundation
import LocalImageServer
import WebImage

extension WebImageCLI {
    /// `webimage demo`: the library's behaviour, shown against a loopback server with bundled samples.
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what WebImage does, against a local server with the bundled sample images.",
            discussion: """
                Starts a loopback HTTP server on a free port over SampleImages/, downloads the samples with \
                a mix of options (merged duplicates, LIFO, progressive partial images, scale-down, \
                animations, the HTTP cache's 304 pass, error paths), prints a table and writes a labelled \
                contact sheet.

                Example:
                  swift run -c release --traits Tools webimage demo --output /tmp/demo
                """)

        @Option(help: ArgumentHelp("Folder for contact-sheet.png.", valueName: "dir"))
        var output = "demo-output"

        @Option(
            help: ArgumentHelp(
                "Folder of sample images (default: SampleImages/ in the current directory or the package).",
                valueName: "dir"))
        var samples: String?

        mutating func validate() throws {
            guard !output.isEmpty else { throw ValidationError("--output must not be empty.") }
            if let samples, !FileManager.default.fileExists(atPath: samples) {
                throw ValidationError("--samples folder '\(samples)' does not exist.")
            }
        }

        func run() async throws {
            let folder = try SampleFolder.locate(explicit: samples)
            let server = LocalImageServer(root: folder)
            do { try server.start() } catch { throw CLIError("cannot start the loopback server: \(error)") }
            defer { server.shutdown() }
            print(
                "WebImage \(LibraryVersions.webImage) demo — serving \(folder.path) at \(server.baseURL.absoluteString)\n"
            )

            let display = ProgressDisplay(resultLines: .none)
            var outcomes: [DownloadOutcome] = []
            var unexpected: [String] = []
            for scenario in DemoScenario.all(server: server) {
                print("• \(scenario.title): \(scenario.explanation)")
                display.begin(total: scenario.requests.count)
                var phase = await scenario.run(display: display)
                display.end()
                for line in scenario.observe(server, &phase) { print("    \(line)") }
                for (offset, var outcome) in phase.enumerated() {
                    outcome.index = outcomes.count
                    let expectation = scenario.requests[offset]
                    if let succeeds = expectation.succeeds, outcome.ok != succeeds {
                        unexpected.append(
                            "\(SummaryTable.pathAndQuery(outcome.url.absoluteString)) \(outcome.ok ? "succeeded" : "failed") "
                                + "but was expected to \(succeeds ? "succeed" : "fail")")
                    }
                    outcomes.append(outcome)
                }
            }

            print("")
            print(SummaryTable(outcomes: outcomes, showsNotes: true, pathsOnly: true).render())
            try writeContactSheet(outcomes)
            guard unexpected.isEmpty else {
                throw CLIError("unexpected results:\n  " + unexpected.joined(separator: "\n  "))
            }
        }

        private func writeContactSheet(_ outcomes: [DownloadOutcome]) throws {
            let cells = outcomes.map { outcome -> ContactSheetCell in
                let name = "\(outcome.index + 1) \(outcome.url.lastPathComponent)"
                if let error = outcome.error {
                    return ContactSheetCell(
                        image: nil, lines: [name, "\(error.code.rawValue) \(error.code)"], isError: true)
                }
                let image = outcome.image
                let detail =
                    image.map { "\($0.format.rawValue) \($0.width)x\($0.height) \(outcome.note)" } ?? outcome.note
                return ContactSheetCell(image: image, lines: [name, detail], isError: false)
            }
            let (layout, canvas) = ContactSheet.render(
                title: "WebImage \(LibraryVersions.webImage) demo - \(outcomes.count) downloads", cells: cells)
            let directory = URL(fileURLWithPath: output, isDirectory: true)
            let file = directory.appendingPathComponent("contact-sheet.png")
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                try PNGEncoder().encode(canvas.frame).write(to: file)
            } catch {
                throw CLIError("cannot write \(file.path): \(error)")
            }
            print(
                "contact sheet: \(file.path) (\(layout.width)x\(layout.height), \(layout.columns) columns x "
                    + "\(layout.rows) rows, \(cells.count) images)")
        }
    }
}

/// Where the demo's sample images are: `--samples`, else `SampleImages/` in the current directory,
/// else next to this source file's package root (so `swift run` and the built binary both find them).
enum SampleFolder {
    static func locate(explicit: String?) throws -> URL {
        if let explicit { return URL(fileURLWithPath: explicit, isDirectory: true) }
        let fileManager = FileManager.default
        var candidates = [URL(fileURLWithPath: fileManager.currentDirectoryPath).appendingPathComponent("SampleImages")]
        // Examples/webimage/DemoCommand.swift → the package root is three levels up.
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(packageRoot.appendingPathComponent("SampleImages"))
        for candidate in candidates
        where fileManager.fileExists(atPath: candidate.appendingPathComponent("SOURCES.md").path) {
            return candidate
        }
        throw CLIError(
            "cannot find the sample images (looked in \(candidates.map(\.path).joined(separator: ", "))); "
                + "pass --samples DIR")
    }
}
