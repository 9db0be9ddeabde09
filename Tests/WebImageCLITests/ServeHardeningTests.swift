import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `webimage serve` against what an attacker sends it, through the running binary: numbers past any
/// range, results larger than the limits, truncated sources, allowed-source tricks, HEAD and `*`
/// validators, credentials in source URLs. Every source is on 127.0.0.0/8.
@Suite("webimage serve: hardening", .timeLimit(.minutes(5)))
struct ServeHardeningTests {
    static let local = ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"]

    /// A `width`×`height` PNG with a horizontal gradient in red and a vertical one in green, opaque.
    static func gradientPNG(width: Int, height: Int) throws -> Data {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let index = (y * width + x) * 4
                pixels[index] = UInt8(x * 255 / max(1, width - 1))
                pixels[index + 1] = UInt8(y * 255 / max(1, height - 1))
                pixels[index + 2] = 60
            }
        }
        return try PNGEncoder().encode(
            ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels))
    }

    /// The corpus server with `/gen/{width}x{height}.png` answering a gradient PNG of that size.
    static func origin() throws -> LocalImageServer {
        let origin = try Fixtures.server()
        origin.route("/gen/") { request in
            let name = request.path.split(separator: "/").last?.split(separator: ".").first ?? ""
            let sides = name.split(separator: "x").compactMap { Int($0) }
            guard sides.count == 2, let png = try? gradientPNG(width: sides[0], height: sides[1]) else {
                return .text("bad size\n", status: 400)
            }
            return LocalImageServer.Response(headers: [("Content-Type", "image/png")], body: .data(png))
        }
        return origin
    }

    @Test("numbers past any range in a URL are answered (200 or 400), and the server lives on")
    func extremeNumbers() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        // A small limit keeps the huge requests' results (each up to the limit) cheap to encode.
        let serve = try await ServeProcess.start(Self.local + ["--max-result-dimension", "512"])
        let photo = origin.url("/files/coffee-progressive.jpg").absoluteString
        // The first four are the reported crashes (SIGILL in ProcessingOptions.scaledWidth before the fix).
        let cases: [(String, Int)] = [
            ("w:9223372036854775807", 200), ("rs:fit:4611686018427387904:0:0/dpr:2", 200),
            ("w:2000000000000000000/dpr:8", 200), ("rs:force:0:9223372036854775807:0", 200),
            ("rs:fill:9223372036854775807:9223372036854775807:1/dpr:8", 200),
            ("w:9223372036854775808", 400), ("h:-9223372036854775808", 400), ("dpr:nan", 400), ("dpr:inf", 400),
            ("dpr:1e300", 400), ("dpr:-0", 400), ("q:9223372036854775807", 400),
        ]
        for (options, status) in cases {
            let reply = try await serve.get("/insecure/\(options)/plain/\(photo)@png")
            #expect(reply.status == status, "\(options): \(String(decoding: reply.body, as: UTF8.self))")
            if status == 200 {
                let size = try #require(ServeProcess.pngSize(reply.body), "\(options)")
                #expect(size.width <= 512 && size.height <= 512, "\(options): \(size)")
            }
        }
        #expect(try await serve.get("/health").status == 200)
        #expect(await serve.stop() == 0)
    }

    @Test("times past a day, NaN or infinite are refused at start with a message, never a trap")
    func extremeFlags() async throws {
        for arguments in [
            ["--deadline", "1e300"], ["--deadline", "nan"], ["--drain-timeout", "1e300"], ["--drain-delay", "inf"],
            ["--max-concurrency", "9223372036854775807"], ["--max-queue", "-1"],
        ] {
            let run = try await CLIRunner.run("webimage", ["serve", "--allow-unsigned", "--port", "0"] + arguments)
            #expect(run.status == 64 && !run.signalled, "\(arguments): status \(run.status), \(run.stderr)")
            #expect(run.stderr.contains(arguments[0]), "\(arguments): \(run.stderr)")
        }
    }

    @Test("--max-result-dimension bounds every side: h:2048/el:1 on 200×10 is 2048×102, and memory stays bounded")
    func resultDimensionBoundsEverySide() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(
            Self.local + [
                "--max-result-dimension", "2048", "--max-concurrency", "1", "--max-source-bytes", "1048576",
                "--max-source-pixels", "4096",
            ])
        #expect(try await serve.get("/health").status == 200)
        let before = try #require(serve.peakResidentKiB)
        let wide = origin.url("/gen/200x10.png").absoluteString
        // Before the fix: 40960×2048 (335 MB of pixels for one request).
        let tall = try await serve.get("/insecure/h:2048/el:1/plain/\(wide)@png")
        #expect(tall.status == 200, "\(String(decoding: tall.body, as: UTF8.self))")
        let size = try #require(ServeProcess.pngSize(tall.body))
        #expect(size.width == 2048 && size.height == 102, "\(size)")
        let forced = try await serve.get("/insecure/rs:force:5000:100:1/plain/\(wide)@png")
        #expect(ServeProcess.pngSize(forced.body).map { [$0.width, $0.height] } == [2048, 41])
        // An image that keeps its size is bounded too.
        let keep = try await serve.get(
            "/insecure/plain/\(origin.url("/gen/4000x1.png").absoluteString)@png")
        #expect(ServeProcess.pngSize(keep.body).map { [$0.width, $0.height] } == [2048, 1])
        // The README's per-job bound with these flags: the source file, its decoded frame (4 bytes a pixel),
        // the result and its encoding (4 bytes × 2048² each); 16 MiB beside it for the allocator's slack.
        // Under ASan or TSan freed memory stays resident (quarantine, shadow), so the figure is only printed.
        let after = try #require(serve.peakResidentKiB)
        let boundKiB = (1_048_576 + 4 * 4096 + 2 * 4 * 2048 * 2048) / 1024 + 16 * 1024
        print("serve's peak RSS grew \(after - before) KiB for three results (bound \(boundKiB) KiB)")
        if !Sanitizers.shadowMemorySanitizerIsOn {
            #expect(after - before <= boundKiB, "peak RSS grew \(after - before) KiB, bound \(boundKiB) KiB")
        }
        #expect(await serve.stop() == 0)
    }

    @Test("a fill far larger than its source is made when what it allocates fits; pixels keep the gradient")
    func largeFillWithinLimits() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(Self.local)
        let source = origin.url("/gen/4000x10.png").absoluteString
        // Covering 100×3000 scales 4000×10 to 1,200,000×3000, of which only the centre 100 columns are made.
        // Before the fix the claim counted the whole scaled frame and its float plane (72 GB): 422.
        let reply = try await serve.get("/insecure/rs:fill:100:3000:1/plain/\(source)@png")
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
        let image = try ImageDecoderRegistry.shared.decode(reply.body)
        #expect(image.width == 100 && image.height == 3000)
        let pixels = image.frames[0].pixels
        func pixel(_ x: Int, _ y: Int) -> (red: Int, green: Int) {
            let index = (y * 100 + x) * 4
            return (Int(pixels[index]), Int(pixels[index + 1]))
        }
        // The centre of a red ramp over 4000 columns, and the whole green ramp over 10 rows.
        for x in [0, 50, 99] {
            #expect(abs(pixel(x, 1500).red - 128) <= 2, "\(x): \(pixel(x, 1500))")
        }
        #expect(pixel(50, 0).green <= 2 && pixel(50, 2999).green >= 253, "\(pixel(50, 0)) \(pixel(50, 2999))")
        #expect(await serve.stop() == 0)
    }

    @Test("a refusal for a limit names the limit: source pixels, or the pixel memory one result needs")
    func limitRefusalsNameTheLimit() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(Self.local + ["--max-result-dimension", "16384"])
        func body(_ reply: ServeProcess.Reply) -> String { String(decoding: reply.body, as: UTF8.self) }
        // 16384² alone is 1 GiB of pixels, the whole decode budget: refused before anything is allocated.
        let huge = try await serve.get(
            "/insecure/rs:fill:16384:16384:1/plain/\(origin.url("/gen/200x100.png"))@png")
        #expect(huge.status == 422 && body(huge).contains("pixel memory"), "\(huge.status) \(body(huge))")
        let bomb = try await serve.get("/insecure/w:10/plain/\(origin.url("/files/bomb-100000x100000.png"))@png")
        #expect(bomb.status == 422 && body(bomb).contains("more pixels"), "\(bomb.status) \(body(bomb))")
        #expect(await serve.stop() == 0)
    }

    @Test("a truncated source is 422 with no long-lived Cache-Control, and is never stored in the result cache")
    func truncatedSource() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        let cache = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: cache) }
        let serve = try await ServeProcess.start(Self.local + ["--cache-dir", cache.path])
        let truncated = origin.url("/files/truncated-half.jpg").absoluteString
        for _ in 0..<2 {
            // Before the fix: 200, mostly black, `Cache-Control: public, max-age=31536000`, then a cache hit.
            let reply = try await serve.get("/insecure/w:50/plain/\(truncated)@png")
            #expect(reply.status == 422, "\(String(decoding: reply.body, as: UTF8.self))")
            #expect(String(decoding: reply.body, as: UTF8.self).contains("truncated"))
            #expect(reply.header("Cache-Control")?.contains("max-age=31536000") != true)
        }
        let whole = try await serve.get("/insecure/w:50/plain/\(origin.url("/files/coffee-progressive.jpg"))@png")
        #expect(whole.status == 200)
        #expect(await serve.stop() == 0)
    }

    @Test("--allowed-sources matches parsed URLs: no userinfo trick, no dot segments, redirects judged too")
    func allowedSourcesAreParsed() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        let port = origin.port
        let base = "http://127.0.0.1:\(port)"
        let serve = try await ServeProcess.start(
            Self.local + [
                "--allowed-sources", "\(base)/redirect-to", "--allowed-sources", "\(base)/files/coffee-progressive.jpg",
            ])
        func status(_ source: String) async throws -> Int {
            try await serve.get("/insecure/w:10/plain/\(source)@png").status
        }
        #expect(try await status("\(base)/files/coffee-progressive.jpg") == 200)
        // Before the fix each of these passed the string prefix and fetched /files/horse-rgba.png.
        #expect(try await status("\(base)/files/coffee-progressive.jpg/../horse-rgba.png") == 403)
        #expect(try await status("\(base)/redirect-to%3Furl=\(base)/files/horse-rgba.png") == 403)
        #expect(try await status("\(base)/files/coffee-progressive.jpg/%2E%2E/horse-rgba.png") == 403)
        #expect(origin.count(for: "/files/horse-rgba.png") == 0)
        // A redirect to an allowed URL is followed.
        #expect(try await status("\(base)/redirect-to%3Furl=\(base)/files/coffee-progressive.jpg") == 200)
        #expect(await serve.stop() == 0)

        // A prefix without a path, and a source whose host is elsewhere behind `user:password@`.
        let bare = try await ServeProcess.start(Self.local + ["--allowed-sources", base])
        let trick = "http://127.0.0.1:\(port)%40127.0.0.2:\(port)/files/coffee-progressive.jpg"
        #expect(try await bare.get("/insecure/w:10/plain/\(trick)@png").status == 403)
        #expect(await bare.stop() == 0)

        let invalid = try await CLIRunner.run(
            "webimage", ["serve", "--allow-unsigned", "--allowed-sources", "ftp://example.com/"])
        #expect(invalid.status == 64 && invalid.stderr.contains("--allowed-sources"), "\(invalid.stderr)")
    }

    @Test("HEAD sends the GET's length; If-None-Match: * answers only for a result that exists")
    func headAndWildcardValidator() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(Self.local)
        let path = "/insecure/w:40/plain/\(origin.url("/files/coffee-progressive.jpg"))@png"
        let get = try await serve.get(path)
        #expect(get.status == 200 && !get.body.isEmpty)
        let head = try await serve.get(path, method: "HEAD")
        // Before the fix: Content-Length: 0.
        #expect(head.status == 200 && head.header("Content-Length") == "\(get.body.count)")
        #expect(head.header("ETag") == get.header("ETag") && head.header("Content-Type") == "image/png")

        let missing = "/insecure/w:40/plain/\(origin.url("/status/404"))@png"
        // Before the fix: 304 for a source that does not exist.
        #expect(try await serve.get(missing, headers: ["If-None-Match": "*"]).status == 404)
        let exists = try await serve.get(path, headers: ["If-None-Match": "*"])
        #expect(exists.status == 304 && exists.body.isEmpty && exists.header("ETag") == get.header("ETag"))
        #expect(await serve.stop() == 0)
    }

    @Test("the access log writes a source's user name and password as ***, plain or Base64")
    func accessLogRedactsUserInfo() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(Self.local)
        let plain = "http://alice:hunter2%40127.0.0.1:\(origin.port)/files/coffee-progressive.jpg"
        #expect(try await serve.get("/insecure/w:10/plain/\(plain)@png").status == 200)
        let encoded = Data("http://bob:swordfish@127.0.0.1:\(origin.port)/files/coffee-progressive.jpg".utf8)
            .base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(try await serve.get("/insecure/w:10/\(encoded).png").status == 200)
        #expect(await serve.stop() == 0)
        #expect(await pollAsync(seconds: 60) { serve.stderr.components(separatedBy: "path=").count >= 3 })
        let log = serve.stderr
        // Before the fix both lines carried the credentials (the second readable by decoding it).
        #expect(!log.contains("hunter2") && !log.contains("alice") && !log.contains(encoded), "\(log)")
        #expect(log.contains("plain/http://***:***%40127.0.0.1"), "\(log)")
    }
}
