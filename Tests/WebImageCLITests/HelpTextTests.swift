import Foundation
import TestSupport
import Testing
import WebImage

/// The `--help` texts name what this build can read and write and the libraries it has.
@Suite("webimage --help", .timeLimit(.minutes(5)))
struct HelpTextTests {
    @Test("webimage --help lists every decoded and encoded format and every library with its version")
    func topLevelHelp() async throws {
        let output = try await CLIRunner.run("webimage", ["--help"])
        #expect(output.status == 0, "\(output.stderr)")
        // ArgumentParser wraps the text; compare it as one line.
        let text = output.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for format in CodecLibraries.decodedFormats {
            #expect(text.contains(format.rawValue), "\(format) missing from: \(text)")
        }
        for format in ["jpeg", "png", "apng", "webp", "avif"] { #expect(text.contains(format)) }
        for (name, version) in LibraryVersions.all {
            #expect(text.contains("\(name) \(version)"), "\(name) \(version) missing from: \(text)")
        }
        for name in ["libavif", "libheif", "libjxl", "lcms2", "zstd"] {
            #expect(text.contains(name + " "), "\(name) missing from: \(text)")
        }
    }

    @Test("convert --help and info --help name HEIC and JPEG XL among the formats they read")
    func subcommandHelp() async throws {
        for command in ["convert", "info"] {
            let output = try await CLIRunner.run("webimage", [command, "--help"])
            let text = output.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(output.status == 0)
            #expect(text.contains("heic") && text.contains("jxl"), "\(command): \(text)")
        }
    }
}
