import Foundation
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `webimage demo` and the thumbnailer example, run as built.
@Suite("webimage demo and the thumbnailer example", .timeLimit(.minutes(5)))
struct DemoAndExampleTests {
    @Test("demo exits 0 and writes a contact sheet whose size matches the printed grid")
    func demo() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Run from an unrelated directory: the demo must still find SampleImages/.
        let output = try await CLIRunner.run("webimage", ["demo", "--output", folder.path + "/out"], in: folder)
        #expect(output.status == 0, "stdout: \(output.stdout)\nstderr: \(output.stderr)")
        #expect(output.stdout.contains("3 callers, 1 transfer"))
        #expect(output.stdout.contains("the server saw them as 5, 4, 3, 2, 1"))
        #expect(output.stdout.contains("server answered 200, 304"))
        #expect(output.stdout.contains("badImageData (1001)"))

        // "contact sheet: <path> (<W>x<H>, <C> columns x <R> rows, <N> images)"
        let line = try #require(output.stdoutLines.first { $0.hasPrefix("contact sheet: ") })
        let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }.suffix(5)
        try #require(numbers.count == 5, "\(line)")
        let values = Array(numbers)
        let (width, height, columns, rows, count) = (values[0], values[1], values[2], values[3], values[4])
        // The layout: 12 px margins, a 20 px title, 160×(120 + 22) cells, 8 px gaps.
        #expect(columns == 6 && rows == (count + 5) / 6 && count >= 20)
        #expect(width == 2 * 12 + columns * 160 + (columns - 1) * 8)
        #expect(height == 2 * 12 + 20 + rows * (120 + 22) + (rows - 1) * 8)

        let png = try Data(contentsOf: folder.appendingPathComponent("out/contact-sheet.png"))
        let image = try PNGDecoder().decode(png, options: .default)
        #expect(image.width == width && image.height == height)
        #expect(!image.hasAlpha || image.frames[0].pixels[3] == 255)
    }

    @Test("the thumbnailer example downloads, thumbnails and writes PNGs")
    func thumbnailer() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = ["/files/coffee-rgb.png", "/files/astronaut-lossy.webp"].map { server.url($0).absoluteString }
        let output = try await CLIRunner.run("thumbnailer", [folder.path, "--size", "64"] + urls)
        #expect(output.status == 0, "\(output.stderr)")
        let coffee = try PNGDecoder().decode(
            Data(contentsOf: folder.appendingPathComponent("1-coffee-rgb.png")), options: .default)
        #expect(coffee.width == 64 && coffee.height == 43)
        let astronaut = try PNGDecoder().decode(
            Data(contentsOf: folder.appendingPathComponent("2-astronaut-lossy.png")), options: .default)
        #expect(astronaut.width == 64 && astronaut.height == 64)

        let failing = try await CLIRunner.run(
            "thumbnailer", [folder.path], stdin: Data("\(server.url("/status/500"))\n".utf8))
        #expect(failing.status == 1)
        #expect(failing.stderr.contains("2001"))
    }
}
