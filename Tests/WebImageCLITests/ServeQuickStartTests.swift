import Foundation
import TestSupport
import Testing
import WebImage

/// README.md's `webimage serve` quick start, run as written: its shell block with only the binary's path
/// (this build's instead of the release one `make demo` makes) and its two ports (free ones) changed.
/// Everything it talks to is on 127.0.0.1.
@Suite("README: the serve quick start runs as written", .timeLimit(.minutes(5)))
struct ServeQuickStartTests {
    /// The first ```sh block after the serve section's heading.
    static func quickStart() throws -> String {
        let readme = try String(
            contentsOf: Fixtures.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "## `webimage serve`"))
        let fence = try #require(readme.range(of: "```sh\n", range: section.upperBound..<readme.endIndex))
        let end = try #require(readme.range(of: "\n```\n", range: fence.upperBound..<readme.endIndex))
        return String(readme[fence.upperBound..<end.lowerBound])
    }

    static func freePort() throws -> Int {
        let listener = try LoopbackListener(address: "127.0.0.1")
        defer { listener.stop() }
        return listener.port
    }

    @Test("the block fetches through a loopback origin with the key from the environment and saves a WebP")
    func quickStartRuns() async throws {
        var block = try Self.quickStart()
        #expect(block.contains(".build/release/webimage serve"), "the block names the binary's path")
        #expect(block.contains("curl -f "), "curl fails on an error status instead of saving its text")
        let (proxyPort, originPort) = (try Self.freePort(), try Self.freePort())
        let binary = try CLIRunner.executable("webimage").path
        block = block.replacingOccurrences(of: ".build/release/webimage", with: binary)
            .replacingOccurrences(of: "8080", with: String(proxyPort))
            .replacingOccurrences(of: "8000", with: String(originPort))
            .replacingOccurrences(
                of: "--directory SampleImages",
                with: "--directory \(Fixtures.packageRoot.appendingPathComponent("SampleImages").path)")
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Whatever happens, the block's servers end with the shell.
        let script = "set -eu\ncd '\(folder.path)'\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + block
        // The test process blocks most signals on its threads and a child inherits that mask, which would make
        // the block's `kill` do nothing: Python clears the mask, then becomes bash.
        let unblocked =
            "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); "
            + "os.execvp('bash', ['bash', '-c', sys.argv[1]])"
        let run = try await CLIRunner.runProgram(
            "/usr/bin/env", ["python3", "-c", unblocked, script], killAfterMilliseconds: 240_000)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let saved = try Data(contentsOf: folder.appendingPathComponent("coffee.webp"))
        let image = try ImageDecoderRegistry.shared.decode(saved, options: ImageDecodingOptions())
        #expect(image.format == .webp && image.width == 300 && image.height == 200)
    }
}
