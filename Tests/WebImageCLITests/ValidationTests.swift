import Foundation
import TestSupport
import Testing

/// Bad arguments are rejected by `validate()` with a clear message and exit status 64 (usage).
@Suite("webimage argument validation", .timeLimit(.minutes(5)))
struct ValidationTests {
    @Test(
        "rejects bad values",
        arguments: [
            (["--thumbnail", "0x10"], "The value '0x10' is invalid for '--thumbnail <WxH>': not a size like 256x256"),
            (["--thumbnail", "wide"], "The value 'wide' is invalid for '--thumbnail <WxH>': not a size like 256x256"),
            (
                ["--thumbnail", "20000x10"],
                "The value '20000x10' is invalid for '--thumbnail <WxH>': not a size like 256x256"
            ),
            (["--concurrency", "0"], "--concurrency must be between 1 and 256, got 0."),
            (["--concurrency", "1000"], "--concurrency must be between 1 and 256, got 1000."),
            (["--priority", "urgent"], "The value 'urgent' is invalid for '--priority <priority>'"),
            (["--timeout", "0"], "--timeout must be a positive number of seconds"),
            (["--header", "no colon"], "'--header <name: value>': not of the form 'Name: value'"),
            (["--password", "secret"], "--password needs --user."),
            (["--png"], "--png needs -o DIR."),
            (["--ignore-cached"], "--ignore-cached needs --http-cache or --http-cache-dir."),
            (["--http-cache", "--http-cache-dir", "/tmp/x"], "--http-cache and --http-cache-dir exclude each other"),
            (["--cookies", "--cookies-file", "/tmp/x"], "--cookies and --cookies-file exclude each other"),
            (["--cookies-file", ""], "--cookies-file needs a non-empty path."),
        ])
    func rejects(arguments: [String], message: String) async throws {
        let output = try await CLIRunner.run("webimage", ["get"] + arguments + ["http://127.0.0.1:1/a.png"])
        #expect(output.status == 64)
        #expect(output.stderr.contains(message), "\(output.stderr)")
    }

    @Test("get needs a URL, and URLs must be http(s)")
    func urls() async throws {
        let none = try await CLIRunner.run("webimage", ["get"])
        #expect(none.status == 64)
        #expect(none.stderr.contains("Give at least one URL"))
        let ftp = try await CLIRunner.run("webimage", ["get", "ftp://example.com/a.png"])
        #expect(ftp.status == 64)
        #expect(ftp.stderr.contains("'ftp://example.com/a.png' is not an http or https URL."))
    }

    @Test("--help lists every download option")
    func help() async throws {
        let output = try await CLIRunner.run("webimage", ["get", "--help"])
        #expect(output.status == 0)
        for flag in [
            "--concurrency", "--lifo", "--priority", "--progressive", "--cookies", "--cookies-file", "--http-cache",
            "--http-cache-dir",
            "--ignore-cached", "--insecure", "--scale-down", "--thumbnail", "--first-frame-only", "--timeout",
            "--header", "--user", "--password", "--input", "-o <dir>", "--png", "--json",
        ] {
            #expect(output.stdout.contains(flag), "\(flag)")
        }
    }
}
