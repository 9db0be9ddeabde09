import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage
import WebImageCodecs

/// `local:///path` sources through `webimage serve --local-filesystem-root` run as a child process on
/// 127.0.0.1: served from the root, and never from outside it, by `..`, encoding or a symbolic link.
@Suite("webimage serve: local filesystem sources", .timeLimit(.minutes(5)))
struct ServeSourcesTests {
    /// A root holding `sub/quadrants.png`, `sub` itself, a link to a file outside the root and one to a file
    /// inside; `outside.png` beside the root.
    struct Root {
        let folder: URL
        var root: URL { folder.appendingPathComponent("root") }

        init() throws {
            folder = try CLIRunner.temporaryFolder()
            let manager = FileManager.default
            let sub = folder.appendingPathComponent("root/sub")
            try manager.createDirectory(at: sub, withIntermediateDirectories: true)
            let quadrants = try ServeGeometryTests.quadrants()
            try quadrants.write(to: sub.appendingPathComponent("quadrants.png"))
            try quadrants.write(to: folder.appendingPathComponent("outside.png"))
            try manager.createSymbolicLink(
                atPath: folder.appendingPathComponent("root/link-out.png").path,
                withDestinationPath: folder.appendingPathComponent("outside.png").path)
            try manager.createSymbolicLink(
                atPath: folder.appendingPathComponent("root/link-in.png").path, withDestinationPath: "sub/quadrants.png"
            )
        }

        func remove() { try? FileManager.default.removeItem(at: folder) }
    }

    static func get(_ serve: ServeProcess, _ source: String, options: String = "w:50") async throws -> (Int, Data) {
        let reply = try await serve.get("/insecure/\(options)/plain/\(source)@png")
        return (reply.status, reply.body)
    }

    @Test("a local source is served from the root, resized, by a plain or a Base64 URL")
    func servedFromTheRoot() async throws {
        let root = try Root()
        defer { root.remove() }
        let serve = try await ServeProcess.start(["--allow-unsigned", "--local-filesystem-root", root.root.path])
        for source in ["local:///sub/quadrants.png", "local:///sub/./x/../quadrants.png", "local:///link-in.png"] {
            let (status, body) = try await Self.get(serve, source)
            #expect(status == 200, "\(source): \(String(decoding: body, as: UTF8.self))")
            guard status == 200 else { continue }
            let image = try ImageDecoderRegistry.shared.decode(body)
            #expect(image.width == 50 && image.height == 25, "\(source)")
            // The quadrants: red top left, yellow bottom right.
            #expect(ServeGeometryTests.near(ServeGeometryTests.pixel(image, 5, 5), ServeGeometryTests.red))
            #expect(ServeGeometryTests.near(ServeGeometryTests.pixel(image, 45, 20), ServeGeometryTests.yellow))
        }
        let encoded = ServeRequestOptionsTests.base64URL("local:///sub/quadrants.png")
        let reply = try await serve.get("/insecure/w:20/\(encoded).png")
        #expect(reply.status == 200 && ServeProcess.pngSize(reply.body)?.width == 20)
        #expect(await serve.stop() == 0)
    }

    @Test("no escape from the root: .., encoded .., a link out, a directory, a missing file, NUL")
    func neverOutsideTheRoot() async throws {
        let root = try Root()
        defer { root.remove() }
        let serve = try await ServeProcess.start(["--allow-unsigned", "--local-filesystem-root", root.root.path])
        let cases: [(String, Int, String)] = [
            ("local:///../outside.png", 403, "leaves the local filesystem root"),
            ("local:///sub/../../outside.png", 403, "leaves the local filesystem root"),
            ("local:///%252e%252e/outside.png", 403, "leaves the local filesystem root"),
            ("local:///%252E%252E%252Foutside.png", 403, "leaves the local filesystem root"),
            ("local:///link-out.png", 403, "leaves the local filesystem root"),
            ("local:///sub", 404, "not found"),
            ("local:///sub/missing.png", 404, "not found"),
            ("local:///sub/quadrants.png%2500", 404, "not found"),
        ]
        for (source, status, message) in cases {
            let (got, body) = try await Self.get(serve, source)
            let text = String(decoding: body, as: UTF8.self)
            #expect(got == status && text.contains(message), "\(source): \(got) \(text)")
            #expect(!text.contains(root.folder.path), "\(source): the answer names no path")
        }
        #expect(await serve.stop() == 0)
    }

    @Test("without a root a local source is 400; allowed sources apply to local sources; a bad root stops the start")
    func rootAndAllowedSources() async throws {
        let root = try Root()
        defer { root.remove() }
        let plain = try await ServeProcess.start(["--allow-unsigned"])
        let (status, body) = try await Self.get(plain, "local:///sub/quadrants.png")
        #expect(status == 400 && String(decoding: body, as: UTF8.self).contains("local:// sources are not enabled"))
        #expect(await plain.stop() == 0)

        let origin = try Fixtures.server()
        origin.setFile(name: "quadrants.png", data: try ServeGeometryTests.quadrants())
        let limited = try await ServeProcess.start(
            [
                "--allow-unsigned", "--allow-destination", "127.0.0.0/8", "--allowed-sources", "local:///sub/",
            ], environment: ["IMGPROXY_LOCAL_FILESYSTEM_ROOT": root.root.path])
        #expect(try await Self.get(limited, "local:///sub/quadrants.png").0 == 200)
        #expect(try await Self.get(limited, "local:///link-in.png").0 == 403, "not below local:///sub/")
        #expect(try await Self.get(limited, "local:///sub/../link-in.png").0 == 403)
        let http = try await Self.get(limited, origin.url("/files/quadrants.png").absoluteString)
        #expect(http.0 == 403, "an http source matches no local prefix")
        #expect(origin.count(for: "/files/quadrants.png") == 0)
        #expect(await limited.stop() == 0)
        origin.shutdown()

        for bad in [root.folder.appendingPathComponent("missing").path, "/", root.root.path + "/sub/quadrants.png"] {
            let run = try await CLIRunner.run(
                "webimage", ["serve", "--allow-unsigned", "--port", "0", "--local-filesystem-root", bad])
            #expect(run.status != 0 && !run.signalled, "\(bad)")
            #expect(run.stderr.contains("--local-filesystem-root"), "\(bad): \(run.stderr)")
        }
    }
}

/// `s3://bucket/key` sources through `webimage serve --use-s3` against moto's S3 server on loopback, which
/// checks each request's SigV4 signature.
@Suite(
    "webimage serve: S3 sources", .timeLimit(.minutes(5)),
    .enabled(if: MotoS3.available, "make test-python sets up .venv-test with moto[server] and boto3"))
struct ServeS3SourcesTests {
    @Test("an object is served through a presigned GET; a missing key is 404; bad buckets and keys are 400")
    func servedFromTheStore() async throws {
        let store = try await MotoS3.start()
        let file = try CLIRunner.temporaryFolder().appendingPathComponent("q.png")
        try ServeGeometryTests.quadrants().write(to: file)
        try await store.upload(file, key: "images/q.png")
        let serve = try await ServeProcess.start(
            ["--allow-unsigned"], environment: store.environment().merging(["IMGPROXY_USE_S3": "true"]) { $1 })
        let (status, body) = try await ServeSourcesTests.get(serve, "s3://\(MotoS3.bucket)/images/q.png")
        #expect(status == 200, "\(String(decoding: body, as: UTF8.self)) \(serve.stderr)")
        if status == 200 {
            let image = try ImageDecoderRegistry.shared.decode(body)
            #expect(image.width == 50 && image.height == 25)
            #expect(ServeGeometryTests.near(ServeGeometryTests.pixel(image, 5, 5), ServeGeometryTests.red))
        }
        let cases: [(String, Int)] = [
            ("s3://\(MotoS3.bucket)/images/missing.png", 404),
            ("s3://Bad_Bucket/images/q.png", 400),
            ("s3://\(MotoS3.bucket)/images/../images/q.png", 400),
        ]
        for (source, expected) in cases {
            let (got, text) = try await ServeSourcesTests.get(serve, source)
            #expect(got == expected, "\(source): \(got) \(String(decoding: text, as: UTF8.self))")
        }
        #expect(await serve.stop() == 0)

        // A wrong secret signs URLs the store refuses: nothing is served.
        let wrong = try await ServeProcess.start(
            ["--allow-unsigned"],
            environment: store.environment(secret: "not-the-secret").merging(["IMGPROXY_USE_S3": "true"]) { $1 })
        let refused = try await ServeSourcesTests.get(wrong, "s3://\(MotoS3.bucket)/images/q.png")
        #expect(refused.0 == 502, "\(refused.0)")
        #expect(await wrong.stop() == 0)

        let off = try await ServeProcess.start(["--allow-unsigned"], environment: store.environment())
        let disabled = try await ServeSourcesTests.get(off, "s3://\(MotoS3.bucket)/images/q.png")
        #expect(disabled.0 == 400 && String(decoding: disabled.1, as: UTF8.self).contains("not enabled"))
        #expect(await off.stop() == 0)
    }

    @Test("--use-s3 without credentials stops the start naming what is missing")
    func needsCredentials() async throws {
        let run = try await CLIRunner.run(
            "webimage", ["serve", "--allow-unsigned", "--port", "0", "--use-s3"],
            environment: ["AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": ""])
        #expect(run.status != 0 && !run.signalled)
        #expect(run.stderr.contains("AWS_ACCESS_KEY_ID"), "\(run.stderr)")
    }
}

/// imgproxy's fallback image: answered, processed as the URL asks, when the source cannot be fetched.
@Suite("webimage serve: fallback image", .timeLimit(.minutes(5)))
struct ServeFallbackImageTests {
    @Test("a missing or unreachable source gets the fallback, resized, 200, Fallback-Image: 1, its own TTL, no ETag")
    func fallbackAnswers() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fallback = folder.appendingPathComponent("fallback.png")
        try ServeGeometryTests.quadrants().write(to: fallback)
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(
            ["--allow-unsigned", "--allow-destination", "127.0.0.0/8", "--fallback-image-path", fallback.path],
            environment: ["IMGPROXY_FALLBACK_IMAGE_TTL": "60"])
        for source in [origin.url("/files/missing.png").absoluteString, "http://127.0.0.1:9/nothing.png"] {
            let reply = try await serve.get("/insecure/w:40/plain/\(source)@png")
            #expect(reply.status == 200, "\(source): \(reply.status)")
            #expect(reply.header("Fallback-Image") == "1")
            #expect(reply.header("Cache-Control") == "public, max-age=60")
            #expect(reply.header("ETag") == nil)
            let image = try ImageDecoderRegistry.shared.decode(reply.body)
            #expect(image.width == 40 && image.height == 20)
            #expect(ServeGeometryTests.near(ServeGeometryTests.pixel(image, 2, 2), ServeGeometryTests.red))
        }
        // A source that is there is served as itself; a URL the proxy refuses gets no fallback.
        origin.setFile(name: "real.png", data: try ServeGeometryTests.quadrants())
        let real = try await serve.get("/insecure/w:40/plain/\(origin.url("/files/real.png").absoluteString)@png")
        #expect(real.status == 200 && real.header("Fallback-Image") == nil && real.header("ETag") != nil)
        #expect(
            try await serve.get("/insecure/w:-1/plain/\(origin.url("/files/missing.png").absoluteString)").status == 400
        )
        #expect(await serve.stop() == 0)

        let coded = try await ServeProcess.start(
            ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"],
            environment: [
                "IMGPROXY_FALLBACK_IMAGE_DATA": try ServeGeometryTests.quadrants().base64EncodedString(),
                "IMGPROXY_FALLBACK_IMAGE_HTTP_CODE": "0",
            ])
        let missing = try await coded.get("/insecure/w:40/plain/\(origin.url("/files/missing.png").absoluteString)@png")
        #expect(missing.status == 404 && missing.header("Fallback-Image") == "1")
        #expect(ServeProcess.pngSize(missing.body)?.width == 40)
        #expect(await coded.stop() == 0)

        let bad = try await CLIRunner.run(
            "webimage", ["serve", "--allow-unsigned", "--port", "0"],
            environment: ["IMGPROXY_FALLBACK_IMAGE_DATA": Data("not an image".utf8).base64EncodedString()])
        #expect(bad.status != 0 && bad.stderr.contains("fallback image"), "\(bad.stderr)")
    }
}

/// imgproxy's `IMGPROXY_BASE_URL`, and the `Expires` field beside `Cache-Control`.
@Suite("webimage serve: base URL, Expires", .timeLimit(.minutes(5)))
struct ServeBaseURLTests {
    @Test(
        "a relative source is fetched below the base URL, a full one under it is not doubled; Expires follows the TTL")
    func baseURLAndExpires() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        origin.setFile(name: "quadrants.png", data: try ServeGeometryTests.quadrants())
        let base = origin.url("/files/").absoluteString
        let serve = try await ServeProcess.start(
            ["--allow-unsigned", "--allow-destination", "127.0.0.0/8", "--ttl", "3600"],
            environment: ["IMGPROXY_BASE_URL": base])
        let relative = try await serve.get("/insecure/w:40/plain/quadrants.png@png")
        #expect(relative.status == 200, "\(String(decoding: relative.body, as: UTF8.self))")
        let full = try await serve.get("/insecure/w:30/plain/\(base)quadrants.png@png")
        #expect(full.status == 200 && ServeProcess.pngSize(full.body)?.width == 30)
        let encoded = ServeRequestOptionsTests.base64URL("quadrants.png")
        #expect(try await serve.get("/insecure/w:20/\(encoded).png").status == 200)
        #expect(origin.count(for: "/files/quadrants.png") >= 1)
        #expect(relative.header("Cache-Control") == "public, max-age=3600")
        let expires = try #require(relative.header("Expires").flatMap { HTTPDate.parse($0) })
        // An hour ahead of the answer; the bounds only allow for the time the request took.
        #expect(expires.timeIntervalSinceNow > 3000 && expires.timeIntervalSinceNow <= 3601)
        #expect(await serve.stop() == 0)
    }
}

/// imgproxy's `IMGPROXY_USE_LAST_MODIFIED` and `IMGPROXY_CACHE_CONTROL_PASSTHROUGH`.
@Suite("webimage serve: Last-Modified, Cache-Control passthrough", .timeLimit(.minutes(5)))
struct ServeSourceFieldsTests {
    @Test("the source's Last-Modified and Cache-Control pass through, from a fetch and from the result cache")
    func passedThrough() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let modified = Date(timeIntervalSince1970: 1_577_836_800)  // 2020-01-01 00:00:00 UTC
        origin.setFile(name: "quadrants.png", data: try ServeGeometryTests.quadrants(), lastModified: modified)
        let source = origin.url("/cache/max-age=77/quadrants.png").absoluteString
        let path = "/insecure/w:40/plain/\(source)@png"
        let serve = try await ServeProcess.start(
            ["--allow-unsigned", "--allow-destination", "127.0.0.0/8", "--cache-dir", folder.path],
            environment: ["IMGPROXY_USE_LAST_MODIFIED": "true", "IMGPROXY_CACHE_CONTROL_PASSTHROUGH": "1"])
        let fetched = try await serve.get(path)
        let cached = try await serve.get(path)
        #expect(origin.count(for: "/cache/max-age=77/quadrants.png") == 1, "the second answer is the cache's")
        for reply in [fetched, cached] {
            #expect(reply.status == 200)
            #expect(reply.header("Last-Modified") == "Wed, 01 Jan 2020 00:00:00 GMT")
            #expect(reply.header("Cache-Control") == "max-age=77")
            #expect(reply.header("Expires") == nil, "the source sent none, so the proxy's is dropped too")
        }
        let same = try await serve.get(path, headers: ["If-Modified-Since": "Wed, 01 Jan 2020 00:00:00 GMT"])
        #expect(same.status == 304 && same.body.isEmpty)
        let older = try await serve.get(path, headers: ["If-Modified-Since": "Tue, 31 Dec 2019 23:59:59 GMT"])
        #expect(older.status == 200 && !older.body.isEmpty)
        #expect(await serve.stop() == 0)

        // Off (imgproxy's default): the proxy's own fields, If-Modified-Since ignored.
        let plain = try await ServeProcess.start(["--allow-unsigned", "--allow-destination", "127.0.0.0/8"])
        let reply = try await plain.get(path, headers: ["If-Modified-Since": "Wed, 01 Jan 2020 00:00:00 GMT"])
        #expect(reply.status == 200 && reply.header("Last-Modified") == nil)
        #expect(reply.header("Cache-Control")?.hasPrefix("public, max-age=") == true)
        #expect(await plain.stop() == 0)
    }
}

/// imgproxy's `IMGPROXY_ENABLE_CLIENT_HINTS`.
@Suite("webimage serve: client hints", .timeLimit(.minutes(5)))
struct ServeClientHintsTests {
    @Test("Sec-CH-DPR and Sec-CH-Width (or DPR and Width) set dpr and width under the URL's own; Vary names them")
    func clientHints() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        origin.setFile(name: "quadrants.png", data: try ServeGeometryTests.quadrants())
        let source = origin.url("/files/quadrants.png").absoluteString
        let serve = try await ServeProcess.start(
            ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"],
            environment: ["IMGPROXY_ENABLE_CLIENT_HINTS": "true"])
        func width(_ options: String, _ headers: [String: String]) async throws -> Int? {
            let reply = try await serve.get("/insecure/\(options)/plain/\(source)@png", headers: headers)
            #expect(reply.status == 200, "\(options) \(headers): \(reply.status)")
            #expect(reply.header("Vary")?.contains("Sec-CH-Width") == true)
            return ServeProcess.pngSize(reply.body)?.width
        }
        // 120 device pixels at a ratio of 2: width 60 at dpr 2, so 120 pixels wide.
        #expect(try await width("el:1", ["Sec-CH-DPR": "2", "Sec-CH-Width": "120"]) == 120)
        #expect(try await width("el:1", ["DPR": "2", "Width": "120"]) == 120)
        // No ratio: the width as given; an invalid ratio is ignored, the next field used.
        #expect(try await width("el:1", ["Width": "70"]) == 70)
        #expect(try await width("el:1", ["Sec-CH-DPR": "9", "DPR": "1.5", "Width": "90"]) == 90)
        // The URL's own width wins over the hint; the hinted ratio still applies.
        #expect(try await width("w:30/el:1", ["Sec-CH-DPR": "2", "Sec-CH-Width": "120"]) == 60)
        #expect(await serve.stop() == 0)

        let off = try await ServeProcess.start(["--allow-unsigned", "--allow-destination", "127.0.0.0/8"])
        let reply = try await off.get("/insecure/el:1/plain/\(source)@png", headers: ["Sec-CH-Width": "120"])
        #expect(ServeProcess.pngSize(reply.body)?.width == 200, "off by default: the hint changes nothing")
        #expect(reply.header("Vary") == nil)
        #expect(await off.stop() == 0)
    }
}
