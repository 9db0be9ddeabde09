import Foundation
import TestSupport
import Testing

/// `webimage serve` as a browser sees it: headless Chromium (Debian's `chromium`) loads a page of `<img>`
/// tags pointing at the service, signed as README shows with `openssl dgst -hmac`, and the page reports each
/// image's natural size. Chromium's net log shows what it sent and what came back. The origin, the service
/// and the browser run in a network namespace with only `lo` when the machine allows one
/// (Tests/Browser/serve-in-chromium.sh).
@Suite("webimage serve in Chromium", .timeLimit(.minutes(5)))
struct ServeBrowserTests {
    /// What the page asks for (the script's request list) and the natural size each must have. The sources
    /// are 600×400 (coffee-progressive.jpg) and 400×328 (horse-rgba.png).
    static let expectedSizes = [
        "fit": "200x133", "fill": "120x80", "width-only": "150x100", "dpr": "200x133", "alpha": "64x64",
        "enlarge": "800x656", "explicit-webp": "200x133",
        // imgproxy's other options: trim with smart gravity, the filters and flip, padding on a background, a
        // GIF result, the watermark, the metadata options, preserve_hdr.
        "trim-smart": "100x100", "effects": "120x80", "padded": "80x69", "gif": "50x33", "watermark": "90x60",
        "metadata": "90x60", "hdr": "64x52",
    ]

    @Test("every <img>, imgproxy's options among them, loads at its size; WebP detection gives WebP; all on loopback")
    func chromiumLoadsThePage() async throws {
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        try #require(chromium != nil, "Chromium is missing: `make test` installs Debian's chromium package")
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = Fixtures.packageRoot.appendingPathComponent("Tests/Browser/serve-in-chromium.sh")
        let run = try await CLIRunner.runProgram(
            "/bin/bash",
            [script.path, try CLIRunner.executable("webimage").path, Fixtures.corpusImages.path, folder.path])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdoutLines

        var sizes: [String: String] = [:]
        for line in lines where line.hasPrefix("IMAGE ") {
            let parts = line.split(separator: " ").map(String.init)
            sizes[parts[1]] = parts[2]
        }
        #expect(sizes == Self.expectedSizes, "\(run.stdout)")

        // One response per image, each read by Chromium from the service.
        let responses = lines.filter { $0.hasPrefix("RESPONSE ") }.map { $0.split(separator: " ").map(String.init) }
        #expect(responses.count == Self.expectedSizes.count, "\(run.stdout)")
        for response in responses {
            let (status, type, vary, url) = (response[1], response[2], response[3], response[4])
            #expect(status == "200", "\(url)")
            // The script turns WebP detection on, and with a detection on imgproxy says Vary: Accept on every
            // image, an explicit format's too.
            #expect(vary == "Accept", "\(url)")
            if url.contains("/f:webp/") {
                #expect(type == "image/webp", "an explicit format is sent as asked: \(url)")
            } else if url.contains("/f:gif/") {
                #expect(type == "image/gif", "an explicit format is sent as asked: \(url)")
            } else if url.contains("/f:png/") {
                #expect(type == "image/png", "an explicit format is sent as asked: \(url)")
            } else {
                #expect(["image/avif", "image/webp"].contains(type), "\(type) for \(url)")
            }
        }
        let accepts = lines.filter { $0.hasPrefix("REQUESTED ") }
        #expect(!accepts.isEmpty && accepts.allSatisfy { $0.contains("image/avif") }, "\(accepts)")

        // Every connection Chromium opened was to loopback: the service, or the dead proxy that its own
        // background requests were sent to.
        let connections = lines.filter { $0.hasPrefix("CONNECT ") }.map { String($0.dropFirst("CONNECT ".count)) }
        #expect(!connections.isEmpty)
        #expect(connections.allSatisfy { $0.hasPrefix("127.") || $0.hasPrefix("[::1]") }, "\(connections)")
        #expect(lines.first?.hasPrefix("NAMESPACE ") == true)
    }
}
