import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// imgproxy's output, handling and request options and presets through `webimage serve` run as a child
/// process on 127.0.0.1, checked by status, header fields and bytes.
@Suite("webimage serve: output and request options, presets", .timeLimit(.minutes(5)))
struct ServeRequestOptionsTests {
    /// A running origin (the corpus, and the quadrants picture at `/files/quadrants.png`) and `webimage serve`.
    struct Setup {
        let origin: LocalImageServer
        let serve: ServeProcess

        init(_ arguments: [String] = [], environment: [String: String] = [:]) async throws {
            origin = try Fixtures.server()
            origin.setFile(name: "quadrants.png", data: try ServeGeometryTests.quadrants())
            serve = try await ServeProcess.start(
                ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"] + arguments, environment: environment)
        }

        func source(_ name: String) -> String { origin.url("/files/\(name)").absoluteString }

        /// `options` on the corpus file `name`, with `ext` after the source when given.
        func get(_ options: String, _ name: String = "coffee-progressive.jpg", ext: String? = nil) async throws
            -> ServeProcess.Reply
        {
            try await serve.get("/insecure/\(options)/plain/\(source(name))" + (ext.map { "@\($0)" } ?? ""))
        }

        /// The body of a 200 answer; another status is recorded.
        func body(
            _ options: String, _ name: String = "coffee-progressive.jpg", ext: String? = nil,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws -> Data {
            let reply = try await get(options, name, ext: ext)
            #expect(
                reply.status == 200, "\(options): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))",
                sourceLocation: sourceLocation)
            return reply.body
        }

        func stop() async {
            #expect(await serve.stop() == 0)
            origin.shutdown()
        }
    }

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }

    @Test("expires: a past time is 404 'the URL has expired' without fetching; a future one or 0 is served")
    func expires() async throws {
        let setup = try await Setup()
        let past = try await setup.get("exp:1000000000/w:50", ext: "png")
        #expect(past.status == 404 && String(decoding: past.body, as: UTF8.self).contains("the URL has expired"))
        #expect(setup.origin.count(for: "/files/coffee-progressive.jpg") == 0, "an expired URL fetches nothing")
        let future = Int(Date().timeIntervalSince1970) + 86_400 * 365
        #expect(try await setup.get("expires:\(future)/w:50", ext: "png").status == 200)
        #expect(try await setup.get("exp:0/w:50", ext: "png").status == 200)
        #expect(try await setup.get("exp:soon/w:50", ext: "png").status == 400)
        await setup.stop()
    }

    @Test("Content-Disposition: inline with the source's name and the result's extension; fn, encoded fn, att")
    func contentDisposition() async throws {
        let setup = try await Setup()
        let cases: [(String, String?, String)] = [
            ("w:50", "webp", "inline; filename=\"coffee-progressive.webp\""),
            ("w:50", "jpg", "inline; filename=\"coffee-progressive.jpg\""),
            ("w:50/fn:cup", "png", "inline; filename=\"cup.png\""),
            ("w:50/fn:cup/att:1", "webp", "attachment; filename=\"cup.webp\""),
            ("w:50/return_attachment:true", "png", "attachment; filename=\"coffee-progressive.png\""),
            // A quote, a backslash, a line break and non-ASCII stay inside the quoted string, as %XX.
            (
                "w:50/fn:\(Self.base64URL("a\"b\\c\r\nX-Evil: 1 é")):1", "png",
                "inline; filename=\"a%22b%5Cc%0D%0AX-Evil: 1 %C3%A9.png\""
            ),
        ]
        for (options, ext, expected) in cases {
            let reply = try await setup.get(options, ext: ext)
            #expect(reply.status == 200, "\(options)")
            #expect(reply.header("Content-Disposition") == expected, "\(options): \(reply.headers)")
            #expect(reply.header("X-Evil") == nil)
        }
        await setup.stop()
    }

    @Test("presets: --preset and IMGPROXY_PRESETS, pr:NAME where it stands, the default preset before the URL's")
    func presets() async throws {
        let setup = try await Setup(
            ["--preset", "small=rs:force:40:30", "--preset", "default=rs:force:20:10/f:png"],
            environment: ["IMGPROXY_PRESETS": "tall=rs:force:10:60,wide=pr:small/w:80"])
        func size(_ options: String) async throws -> [Int] {
            let reply = try await setup.get(options)
            #expect(reply.status == 200, "\(options): \(String(decoding: reply.body, as: UTF8.self))")
            return ServeProcess.pngSize(reply.body).map { [$0.width, $0.height] } ?? []
        }
        #expect(try await size("ar:1") == [20, 10], "the default preset alone")
        #expect(try await size("pr:small") == [40, 30])
        #expect(try await size("preset:wide") == [80, 30], "an environment preset naming a flag's")
        #expect(try await size("pr:tall") == [10, 60], "an environment preset")
        #expect(try await size("pr:small/w:25") == [25, 30], "the URL's options after the preset win")
        #expect(try await size("w:25/pr:small") == [40, 30], "the preset after the option wins")
        #expect(try await setup.get("pr:nope").status == 400)
        await setup.stop()

        for (arguments, environment, named) in [
            (["--preset", "thumb=w:x"], [:], "thumb"), (["--preset", "a=pr:b"], [:], "unknown preset \"b\""),
            (["--preset", "thumb"], [:], "thumb"), (["--only-presets"], [:], "--only-presets"),
            ([], ["IMGPROXY_PRESETS": "ok=w:1,bad=q:101"], "bad"),
            (["--preset", "ok=w:1"], ["IMGPROXY_ONLY_PRESETS": "yes"], "IMGPROXY_ONLY_PRESETS"),
        ] {
            let run = try await CLIRunner.run(
                "webimage", ["serve", "--allow-unsigned", "--port", "0"] + arguments, environment: environment)
            #expect(run.status == 64 && !run.signalled, "\(arguments): status \(run.status), \(run.stderr)")
            #expect(run.stderr.contains(named), "\(arguments): \(run.stderr)")
        }
    }

    @Test("--only-presets: the options segment is preset names; options, unknown names and no names are 400")
    func onlyPresets() async throws {
        let setup = try await Setup(
            ["--preset", "small=rs:force:40:30/f:png", "--preset", "flat=rs:force:40:10"],
            environment: ["IMGPROXY_ONLY_PRESETS": "true"])
        let source = setup.source("coffee-progressive.jpg")
        let reply = try await setup.serve.get("/insecure/small:flat/plain/\(source)")
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
        #expect(ServeProcess.pngSize(reply.body).map { [$0.width, $0.height] } == [40, 10])
        for path in [
            "/insecure/w:10/plain/\(source)", "/insecure/pr:small/plain/\(source)",
            "/insecure/nope/plain/\(source)", "/insecure/small/w:10/plain/\(source)",
        ] {
            let refused = try await setup.serve.get(path)
            #expect(refused.status == 400, "\(path): \(refused.status)")
        }
        // The access log writes a source's credentials as *** here too, after a segment of preset names.
        let secret = "http://alice:hunter2%40127.0.0.1:\(setup.origin.port)/files/coffee-progressive.jpg"
        #expect(try await setup.serve.get("/insecure/small/plain/\(secret)").status == 200)
        await setup.stop()
        // Two 200s logged: the stderr reader may still be catching up after the exit.
        #expect(await pollAsync(seconds: 60) { setup.serve.stderr.components(separatedBy: "status=200").count >= 3 })
        let log = setup.serve.stderr
        #expect(log.contains("plain/http://***:***%40127.0.0.1") && !log.contains("hunter2"), "\(log)")
    }

    @Test("max_bytes: JPEG and WebP encoded again at imgproxy's lower qualities until they fit, or at quality ≤ 10")
    func maxBytes() async throws {
        let setup = try await Setup()
        for ext in ["jpg", "webp"] {
            let best = try await setup.body("w:400/q:95", ext: ext)
            let limit = try await setup.body("w:400/q:40", ext: ext).count
            #expect(best.count > limit, "\(ext): q:95 \(best.count) bytes, q:40 \(limit)")
            let fitted = try await setup.body("w:400/q:95/mb:\(limit)", ext: ext)
            #expect(fitted.count <= limit && fitted.count < best.count, "\(ext): \(fitted.count) > \(limit)")
            let image = try ImageDecoderRegistry.shared.decode(fitted)
            #expect(image.width == 400, "\(ext): still the requested size")
            // Far too large for any quality: 95 × 0.25 = 23, × 0.25 = 5, and 5 is sent, as imgproxy does.
            let smallest = try await setup.body("w:400/q:95/max_bytes:1", ext: ext)
            let quality5 = try await setup.body("w:400/q:5", ext: ext)
            #expect(smallest == quality5, "\(ext): the quality-5 encode")
            #expect(try await setup.body("w:400/q:95/mb:0", ext: ext) == best, "\(ext): 0 is no limit")
        }
        await setup.stop()
    }

    @Test("format_quality: the quality of the format sent; quality wins over it")
    func formatQuality() async throws {
        let setup = try await Setup()
        let low = try await setup.body("w:400/fq:jpg:20:webp:90", ext: "jpg")
        let high = try await setup.body("w:400/fq:webp:20:jpeg:90", ext: "jpg")
        #expect(low.count < high.count, "fq:jpg:20 \(low.count) bytes, fq:jpg:90 \(high.count)")
        let quality20 = try await setup.body("w:400/q:20", ext: "jpg")
        #expect(low == quality20)
        #expect(try await setup.body("w:400/q:90/fq:jpg:20", ext: "jpg") == high, "q wins")
        let plain = try await setup.body("w:400", ext: "jpg")
        #expect(try await setup.body("w:400/fq:webp:20", ext: "jpg") == plain, "another format's quality")
        await setup.stop()
    }

    @Test("skip_processing and raw answer the source's bytes with its type; another format is processed")
    func skipProcessing() async throws {
        let setup = try await Setup()
        let jpeg = try Fixtures.corpusFile("coffee-progressive.jpg")
        let skipped = try await setup.get("skp:png:jpg/w:50", ext: "webp")
        #expect(skipped.status == 200 && skipped.body == jpeg, "\(skipped.body.count) bytes")
        #expect(skipped.header("Content-Type") == "image/jpeg")
        #expect(skipped.header("Content-Disposition") == "inline; filename=\"coffee-progressive.jpg\"")
        let png = try await setup.get("skip_processing:png/w:50", "quadrants.png", ext: "webp")
        let quadrants = try ServeGeometryTests.quadrants()
        #expect(png.status == 200 && png.body == quadrants)
        #expect(png.header("Content-Type") == "image/png")
        let processed = try await setup.get("skp:png/w:50", ext: "webp")
        #expect(processed.status == 200 && processed.header("Content-Type") == "image/webp")
        #expect(try ImageDecoderRegistry.shared.decode(processed.body).width == 50)
        let raw = try await setup.get("raw:1/w:50", ext: "png")
        #expect(raw.status == 200 && raw.body == jpeg && raw.header("Content-Type") == "image/jpeg")
        await setup.stop()
    }

    @Test("enforce_thumbnail: a HEIC's embedded 160-pixel thumbnail is the source; without eth the main image is")
    func enforceThumbnail() async throws {
        let setup = try await Setup()
        let heic = try Data(
            contentsOf: Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/heif/thumbnail.heic"))
        setup.origin.setFile(name: "thumbnail.heic", data: heic)
        func decoded(_ options: String, _ name: String = "thumbnail.heic") async throws -> Image {
            try ImageDecoderRegistry.shared.decode(try await setup.body(options, name, ext: "png"))
        }
        // fit in 300×300 without enlarging: the 1200×800 image gives 300×200, its 160×106 thumbnail stays so.
        let main = try await decoded("rs:fit:300:300")
        #expect(main.width == 300 && main.height == 200, "\(main.width)×\(main.height)")
        let thumbnail = try await decoded("eth:1/rs:fit:300:300")
        #expect(thumbnail.width == 160 && thumbnail.height == 106, "\(thumbnail.width)×\(thumbnail.height)")
        // The same picture: the main image's result, averaged down to the thumbnail's size, matches its pixels.
        let small = try await decoded("rs:fit:160:160")
        #expect(small.width == 160)
        for (x, y) in [(10, 10), (80, 53), (150, 100)] {
            let a = Array(thumbnail.frames[0].pixels[(y * thumbnail.frames[0].bytesPerRow + x * 4)...].prefix(3))
            let b = Array(small.frames[0].pixels[(y * small.frames[0].bytesPerRow + x * 4)...].prefix(3))
            #expect(zip(a, b).allSatisfy { abs(Int($0) - Int($1)) <= 16 }, "\(x),\(y): \(a) vs \(b)")
        }
        // A source without a thumbnail is processed from its image.
        let jpeg = try await decoded("enforce_thumbnail:1/rs:fit:300:300", "coffee-progressive.jpg")
        #expect(jpeg.width == 300)
        await setup.stop()
    }

    @Test("strip_color_profile: on by default (no ICC profile in the result); scp:0 embeds the source's")
    func stripColorProfile() async throws {
        let setup = try await Setup()
        #expect(try Fixtures.corpusFile("chelsea-palette.png").range(of: Data("iCCP".utf8)) != nil, "a profile")
        // JPEG carries it in APP2 `ICC_PROFILE` segments, WebP in an `ICCP` chunk, PNG in `iCCP` (this file's
        // profile is one libpng's sRGB check calls known-incorrect: a PNG result was refused with 422).
        for (ext, marker) in [("jpg", "ICC_PROFILE"), ("webp", "ICCP"), ("png", "iCCP")] {
            let stripped = try await setup.body("w:50", "chelsea-palette.png", ext: ext)
            #expect(stripped.range(of: Data(marker.utf8)) == nil, "\(ext)")
            #expect(try await setup.body("w:50/scp:1", "chelsea-palette.png", ext: ext) == stripped, "\(ext)")
            let kept = try await setup.body("w:50/strip_color_profile:0", "chelsea-palette.png", ext: ext)
            #expect(kept.range(of: Data(marker.utf8)) != nil, "\(ext): scp:0 keeps the profile")
        }
        await setup.stop()
    }

    @Test("cachebuster: a new value is a new ETag, the same value the same one")
    func cacheBuster() async throws {
        let setup = try await Setup()
        var etags: [String] = []
        for options in ["w:50", "w:50/cb:1", "w:50/cachebuster:2", "w:50/cb:1"] {
            let reply = try await setup.get(options, ext: "png")
            #expect(reply.status == 200)
            etags.append(reply.header("ETag") ?? "")
        }
        #expect(Set(etags.prefix(3)).count == 3, "\(etags)")
        #expect(etags[1] == etags[3])
        // A validator with the old ETag is not answered 304 once the buster changed.
        let revalidated = try await setup.serve.get(
            "/insecure/w:50/cb:3/plain/\(setup.source("coffee-progressive.jpg"))@png",
            headers: ["If-None-Match": etags[1]])
        #expect(revalidated.status == 200)
        await setup.stop()
    }
}
