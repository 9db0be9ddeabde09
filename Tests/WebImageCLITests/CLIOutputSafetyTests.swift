import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// `webimage get -o DIR` writes only inside DIR, under safe names, never through a symlink, never over a
/// file without `--force`; one file that cannot be written fails alone; `get` streams; the password can
/// stay out of argv.
@Suite(.timeLimit(.minutes(5))) struct CLIOutputSafetyTests {
    /// A server whose `/any/...` route answers every path with the same PNG.
    static func server() throws -> (LocalImageServer, Data) {
        let server = try Fixtures.server()
        let png = LocalImageServer.pixelPNG
        server.route("/any") { _ in
            LocalImageServer.Response(headers: [("Content-Type", "image/png")], body: .data(png))
        }
        return (server, png)
    }

    /// A fresh parent folder holding an empty `out` folder: anything written outside `out` shows up
    /// in the parent.
    static func folders() throws -> (parent: URL, out: URL) {
        let parent = try CLIRunner.temporaryFolder()
        let out = parent.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        return (parent, out)
    }

    @Test("Names made from URLs are never dotfiles, never hold a separator, and stay in the folder")
    func safeNames() async throws {
        let (server, png) = try Self.server()
        defer { server.shutdown() }
        let (parent, out) = try Self.folders()
        defer { try? FileManager.default.removeItem(at: parent) }
        let paths = [
            "/any/.bashrc", "/any/..%2F..%2Fescape.png", "/any/a%5Cb.png", "/any/%2E%2E", "/any/...",
            "/any/%2Fetc%2Fpasswd", "/any/name%00.png", "/any/" + String(repeating: "x", count: 300) + ".png",
        ]
        let urls = paths.map { server.url($0).absoluteString }
        let output = try await CLIRunner.run("webimage", ["get", "--json", "-o", out.path] + urls)
        #expect(output.status == 0, "stdout: \(output.stdout)\nstderr: \(output.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path) == ["out"], "nothing outside -o")
        let names = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(names.count == paths.count, "\(names)")
        for name in names {
            #expect(!name.hasPrefix("."), "\(name)")
            #expect(!name.contains("/") && !name.contains("\\") && !name.contains("\0"), "\(name)")
            #expect(name.utf8.count <= 210, "\(name)")
            #expect(try Data(contentsOf: out.appendingPathComponent(name)) == png)
        }
        #expect(names.contains("bashrc.png"), "\(names)")
        // Every result line says where its file went, and it is inside the folder.
        for object in try CLIRunner.jsonObjects(output) {
            let saved = try #require(object["saved"] as? String)
            #expect(
                URL(fileURLWithPath: saved).deletingLastPathComponent().standardizedFileURL.path
                    == out.standardizedFileURL.path)
        }
    }

    @Test("An existing file or a planted symlink is never written through; --force replaces the name itself")
    func noOverwriteNoSymlink() async throws {
        let (server, png) = try Self.server()
        defer { server.shutdown() }
        let (parent, out) = try Self.folders()
        defer { try? FileManager.default.removeItem(at: parent) }
        let victim = parent.appendingPathComponent("victim.txt")
        try Data("keep".utf8).write(to: victim)
        try FileManager.default.createSymbolicLink(
            atPath: out.appendingPathComponent("linked.png").path, withDestinationPath: victim.path)
        try Data("old".utf8).write(to: out.appendingPathComponent("existing.png"))
        let urls = ["/any/linked.png", "/any/existing.png"].map { server.url($0).absoluteString }

        let first = try await CLIRunner.run("webimage", ["get", "-o", out.path] + urls)
        #expect(first.status == 0, "stdout: \(first.stdout)\nstderr: \(first.stderr)")
        #expect(try Data(contentsOf: victim) == Data("keep".utf8), "the symlink's target is untouched")
        #expect(try Data(contentsOf: out.appendingPathComponent("existing.png")) == Data("old".utf8))
        #expect(try Data(contentsOf: out.appendingPathComponent("linked-1.png")) == png)
        #expect(try Data(contentsOf: out.appendingPathComponent("existing-1.png")) == png)

        let second = try await CLIRunner.run("webimage", ["get", "-o", out.path] + urls)
        #expect(second.status == 0)
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("existing-2.png").path))

        let forced = try await CLIRunner.run("webimage", ["get", "--force", "-o", out.path] + urls)
        #expect(forced.status == 0, "stdout: \(forced.stdout)\nstderr: \(forced.stderr)")
        #expect(try Data(contentsOf: victim) == Data("keep".utf8), "--force replaces the link, not its target")
        let linkAttributes = try FileManager.default.attributesOfItem(
            atPath: out.appendingPathComponent("linked.png").path)
        #expect(linkAttributes[.type] as? FileAttributeType == .typeRegular)
        #expect(try Data(contentsOf: out.appendingPathComponent("linked.png")) == png)
        #expect(try Data(contentsOf: out.appendingPathComponent("existing.png")) == png)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: out.path).allSatisfy { !$0.hasPrefix(".") },
            "no temporary left")
    }

    @Test("A file that cannot be written fails alone; the others are saved and the exit status is 1")
    func oneWriteErrorFailsOneFile() async throws {
        let (server, png) = try Self.server()
        defer { server.shutdown() }
        let (parent, out) = try Self.folders()
        defer { try? FileManager.default.removeItem(at: parent) }
        // With --force the name is replaced by rename(2), which cannot replace a non-empty directory.
        let blocker = out.appendingPathComponent("blocked.png")
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: true)
        try Data().write(to: blocker.appendingPathComponent("inside"))
        let urls = ["/any/blocked.png", "/any/fine.png"].map { server.url($0).absoluteString }
        let output = try await CLIRunner.run("webimage", ["get", "--json", "--force", "-o", out.path] + urls)
        #expect(output.status == 1)
        let objects = try CLIRunner.jsonObjects(output)
        try #require(objects.count == 2, "stdout: \(output.stdout)")
        let blocked = try #require(objects.first { ($0["url"] as? String)?.hasSuffix("blocked.png") == true })
        let fine = try #require(objects.first { ($0["url"] as? String)?.hasSuffix("fine.png") == true })
        #expect(blocked["ok"] as? Bool == false)
        #expect((blocked["saveError"] as? String)?.contains("blocked.png") == true, "\(blocked)")
        #expect(fine["ok"] as? Bool == true)
        #expect(try Data(contentsOf: out.appendingPathComponent("fine.png")) == png)
        #expect(output.stderr.contains("1 failed"), "the summary counts it: \(output.stderr)")
    }

    @Test("The password comes from --password-stdin or WEBIMAGE_PASSWORD, not only argv")
    func passwordOutOfArgv() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let url = server.url("/auth/basic/alice/s3cret/horse-rgba.png").absoluteString
        let fromStdin = try await CLIRunner.run(
            "webimage", ["get", "--allow-credentials-over-http", "--user", "alice", "--password-stdin", url],
            stdin: Data("s3cret\n".utf8))
        #expect(fromStdin.status == 0, "stdout: \(fromStdin.stdout)\nstderr: \(fromStdin.stderr)")
        let fromEnvironment = try await CLIRunner.run(
            "webimage", ["get", "--allow-credentials-over-http", "--user", "alice", url],
            environment: ["WEBIMAGE_PASSWORD": "s3cret"])
        #expect(fromEnvironment.status == 0, "stdout: \(fromEnvironment.stdout)\nstderr: \(fromEnvironment.stderr)")
        let wrong = try await CLIRunner.run(
            "webimage", ["get", "--allow-credentials-over-http", "--user", "alice", "--password-stdin", url],
            stdin: Data("nope\n".utf8))
        #expect(wrong.status == 1, "a wrong password read from stdin is really sent")
        let both = try await CLIRunner.run(
            "webimage", ["get", "--user", "alice", "--password-stdin", "--input", "-"], stdin: Data())
        #expect(both.status != 0 && both.stderr.contains("stdin"), "\(both.stderr)")
    }

    @Test("A password written into a URL is never printed: get's lines, table and --json, and info")
    func passwordInTheURLIsRedacted() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        // The built-in auth route would put the password in the path, where this test looks for it.
        let expected = "Basic \(Data("alice:S3CRET".utf8).base64EncodedString())"
        server.route("/secured") { request in
            guard request.header("Authorization") == expected else {
                var response = LocalImageServer.Response.text("authentication required\n", status: 401)
                response.headers.append(("WWW-Authenticate", "Basic realm=\"webimage\""))
                return response
            }
            return LocalImageServer.Response(
                headers: [("Content-Type", "image/png")], body: .data(LocalImageServer.pixelPNG))
        }
        let plain = server.url("/secured/pixel.png").absoluteString
        let url = plain.replacingOccurrences(of: "http://", with: "http://alice:S3CRET@")
        let shown = plain.replacingOccurrences(of: "http://", with: "http://alice:***@")
        let json = try await CLIRunner.run("webimage", ["get", "--json", "--allow-credentials-over-http", url])
        #expect(json.status == 0, "stdout: \(json.stdout)\nstderr: \(json.stderr)")
        #expect(try CLIRunner.jsonObjects(json).first?["url"] as? String == shown)
        // Over plain http without the opt-in the credentials are not sent: a 401, reported without them.
        let refused = try await CLIRunner.run("webimage", ["get", url])
        #expect(refused.status == 1)
        #expect(refused.stdout.contains(shown), "\(refused.stdout)")
        let info = try await CLIRunner.run("webimage", ["info", url])
        #expect(info.status == 1)
        #expect(info.stderr.contains(shown), "\(info.stderr)")
        for output in [json, refused, info] {
            #expect(!(output.stdout + output.stderr).contains("S3CRET"), "\(output.stdout)\n\(output.stderr)")
        }
        #expect(server.requests.filter { $0.request.header("Authorization") != nil }.count == 1)
    }

    // Not under AddressSanitizer: its allocator keeps freed memory in quarantine (256 MB by default), so
    // resident memory grows with the work done, not with what the program holds.
    @Test(
        "get streams: peak memory over 10,000 URLs stays within 1.5× of 100 URLs",
        .disabled(if: Sanitizers.addressSanitizerIsOn, "AddressSanitizer's quarantine holds freed memory"))
    func streamingMemory() async throws {
        let (server, _) = try Self.server()
        defer { server.shutdown() }
        let (parent, out) = try Self.folders()
        defer { try? FileManager.default.removeItem(at: parent) }
        func run(_ count: Int) async throws -> CLIRunner.Output {
            let list = (0..<count).map { server.url("/any/image.png?n=\($0)").absoluteString }.joined(separator: "\n")
            let listFile = parent.appendingPathComponent("urls-\(count).txt")
            try Data(list.utf8).write(to: listFile)
            let folder = out.appendingPathComponent("\(count)")
            return try await CLIRunner.run(
                "webimage", ["get", "--json", "--concurrency", "16", "--input", listFile.path, "-o", folder.path])
        }
        let small = try await run(100)
        let large = try await run(10_000)
        #expect(small.status == 0 && large.status == 0, "\(small.stderr.suffix(300))\n\(large.stderr.suffix(300))")
        #expect(large.stdoutLines.count == 10_000)
        let saved = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("10000").path)
        #expect(saved.count == 10_000 && saved.contains("image-9999.png"))
        print("webimage get peak RSS: 100 URLs \(small.peakRSSKiB) KiB, 10,000 URLs \(large.peakRSSKiB) KiB")
        #expect(small.peakRSSKiB > 0)
        #expect(Double(large.peakRSSKiB) <= 1.5 * Double(small.peakRSSKiB))
    }
}
