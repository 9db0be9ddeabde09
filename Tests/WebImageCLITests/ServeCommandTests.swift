import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `webimage serve` run as a child process on 127.0.0.1, fetching from the in-process loopback server,
/// asked over HTTP with curl; signatures made by Python's `hmac`.
@Suite("webimage serve", .timeLimit(.minutes(5)))
struct ServeCommandTests {
    static let key = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
    static let salt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
    static let signed = ["--key", key, "--salt", salt, "--allow-destination", "127.0.0.0/8"]

    /// `path` (after the signature) signed with the test key.
    static func signedPath(_ path: String) async throws -> String {
        "/" + (try await ServeProcess.sign(path, key: key, salt: salt)) + path
    }

    static func start(_ arguments: [String] = signed) async throws -> ServeProcess {
        try await ServeProcess.start(arguments)
    }

    @Test("a signed URL is served: the resized image with its type, ETag and security headers")
    func signedRequest() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await Self.start()
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString
        let reply = try await serve.get(try await Self.signedPath("/rs:fit:300:300:0/plain/\(source)@png"))
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self)) \(serve.stderr)")
        #expect(reply.header("Content-Type") == "image/png")
        #expect(ServeProcess.pngSize(reply.body)?.width == 300 && ServeProcess.pngSize(reply.body)?.height == 200)
        #expect(reply.header("X-Content-Type-Options") == "nosniff")
        #expect(reply.header("Content-Security-Policy") == "default-src 'none'")
        #expect(reply.header("Cache-Control") == "public, max-age=31536000")
        let etag = try #require(reply.header("ETag"))
        #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count > 10, "a strong ETag, got \(etag)")
        #expect(reply.header("Vary") == nil, "an explicit format does not vary on Accept")
        #expect(await serve.stop() == 0, "SIGTERM shuts down gracefully: \(serve.stderr)")
    }

    @Test("a wrong signature is 403 and the origin is never asked; the base64 form is signed too")
    func badSignature() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await Self.start()
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString
        let path = "/rs:fit:300:300:0/plain/\(source)@png"
        let good = try await Self.signedPath(path)
        let signature = try await ServeProcess.sign(path, key: Self.key, salt: Self.salt)
        // Another key, a changed path under a good signature, and `insecure` without --allow-unsigned.
        let otherKey = try await ServeProcess.sign(path, key: "00ff", salt: Self.salt)
        for bad in [
            "/\(otherKey)\(path)", "/\(signature)/rs:fit:301:300:0/plain/\(source)@png", "/insecure\(path)",
            "/\(signature.dropLast(2))\(path)",
        ] {
            let reply = try await serve.get(bad)
            #expect(reply.status == 403, "\(bad)")
            #expect(reply.header("Content-Type") == "text/plain; charset=utf-8")
        }
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 0)
        #expect(try await serve.get(good).status == 200)

        let encoded = Data(source.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let base64Path = "/w:100/\(encoded.prefix(10))/\(encoded.dropFirst(10)).png"
        let reply = try await serve.get(try await Self.signedPath(base64Path))
        #expect(reply.status == 200)
        #expect(ServeProcess.pngSize(reply.body)?.width == 100)
    }

    @Test("with --allow-unsigned, 'insecure' stands in for the signature, and a warning is logged")
    func unsigned() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await Self.start(["--allow-unsigned", "--allow-destination", "127.0.0.0/8"])
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString
        let reply = try await serve.get("/insecure/w:120/plain/\(source)@png")
        #expect(reply.status == 200)
        #expect(ServeProcess.pngSize(reply.body)?.width == 120 && ServeProcess.pngSize(reply.body)?.height == 80)
        #expect(try await serve.get("/notasignature/w:120/plain/\(source)@png").status == 403)
        #expect(try await serve.get("/health").status == 200)
        #expect(await serve.stop() == 0)
        #expect(serve.stderr.contains("--allow-unsigned"), "\(serve.stderr)")
    }

    @Test("each resize type gives imgproxy's output size for a 600×400 source")
    func resizeModes() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await Self.start()
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString
        let cases: [(String, Int, Int)] = [
            ("rs:fit:300:300:0", 300, 200),
            ("rs:fit:1200:1200:0", 600, 400),  // never enlarged without enlarge
            ("rs:fit:1200:1200:1", 1200, 800),
            ("rs:fill:300:300:0", 300, 300),
            ("rs:fill:900:300:0", 600, 300),  // not enlarged: cropped to what the source covers
            ("rs:fill-down:900:300:0", 600, 200),  // not enlarged: the requested 3:1 kept
            ("rs:fill-down:300:300", 300, 300),
            ("rs:force:100:300:0", 100, 300),
            ("rs:force:0:100", 600, 100),  // width 0 keeps the source's
            ("rs:auto:200:100:0", 200, 100),  // both landscape: fill
            ("rs:auto:100:200:0", 100, 67),  // orientations differ: fit
            ("w:150", 150, 100),
            ("height:100", 150, 100),
            ("resize:fit:150:0/dpr:2", 300, 200),
            ("rs:fill:100:100/g:ce", 100, 100),
        ]
        for (options, width, height) in cases {
            let reply = try await serve.get(try await Self.signedPath("/\(options)/plain/\(source)@png"))
            #expect(reply.status == 200, "\(options): \(String(decoding: reply.body, as: UTF8.self))")
            let size = ServeProcess.pngSize(reply.body)
            #expect(size?.width == width && size?.height == height, "\(options): \(String(describing: size))")
        }
    }

    @Test("formats: explicit ones are sent as asked; without one, JPEG or PNG, or WebP from Accept with detection")
    func formats() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await Self.start()
        let photo = origin.url("/files/coffee-progressive.jpg").absoluteString
        let alpha = origin.url("/files/horse-rgba.png").absoluteString
        let webpMagic: (Data) -> Bool = {
            $0.prefix(4) == Data("RIFF".utf8) && $0.dropFirst(8).prefix(4) == Data("WEBP".utf8)
        }
        let jpegMagic: (Data) -> Bool = { $0.starts(with: [0xFF, 0xD8, 0xFF]) }
        let pngMagic: (Data) -> Bool = { $0.starts(with: [0x89, 0x50, 0x4E, 0x47]) }
        let avifMagic: (Data) -> Bool = { $0.dropFirst(4).prefix(8) == Data("ftypavif".utf8) }

        for (path, type, magic) in [
            ("/w:100/f:webp/plain/\(photo)", "image/webp", webpMagic),
            ("/w:100/plain/\(photo)@jpg", "image/jpeg", jpegMagic),
            ("/w:100/q:50/format:jpeg/plain/\(photo)", "image/jpeg", jpegMagic),
            ("/w:100/plain/\(alpha)@png", "image/png", pngMagic),
        ] {
            let reply = try await serve.get(
                try await Self.signedPath(path), headers: ["Accept": "image/avif,image/webp"])
            #expect(reply.status == 200, "\(path)")
            #expect(reply.header("Content-Type") == type, "\(path)")
            #expect(magic(reply.body), "\(path): \(reply.body.prefix(12).map { $0 })")
            #expect(reply.header("Vary") == nil)
        }
        if AVIFEncoder.isAvailable {
            let reply = try await serve.get(
                try await Self.signedPath("/w:64/plain/\(photo)@avif"), headers: ["Accept": "*/*"])
            #expect(reply.header("Content-Type") == "image/avif" && avifMagic(reply.body))
        }

        // imgproxy's defaults: no detection, so Accept chooses nothing and nothing varies by it.
        for (source, type, magic) in [(photo, "image/jpeg", jpegMagic), (alpha, "image/png", pngMagic)] {
            let reply = try await serve.get(
                try await Self.signedPath("/w:64/plain/\(source)"), headers: ["Accept": "image/avif,image/webp,*/*"])
            #expect(reply.header("Content-Type") == type && magic(reply.body), "\(source) without detection")
            #expect(reply.header("Vary") == nil)
        }
        #expect(await serve.stop() == 0)

        let negotiated: [(String, String, String, (Data) -> Bool)] =
            [
                (photo, "image/webp,*/*", "image/webp", webpMagic),
                (photo, "image/avif;q=0,image/webp", "image/webp", webpMagic),
                (photo, "text/html,*/*;q=0.8", "image/jpeg", jpegMagic),
                (alpha, "*/*", "image/png", pngMagic),
                (photo, "image/avif,image/webp,*/*", "image/webp", webpMagic),  // AVIF only with its detection
            ]
        for detection in [["--enable-webp-detection"], []] {
            let environment = detection.isEmpty ? ["IMGPROXY_AUTO_WEBP": "true"] : [:]
            let detecting = try await ServeProcess.start(Self.signed + detection, environment: environment)
            for (source, accept, type, magic) in negotiated {
                let reply = try await detecting.get(
                    try await Self.signedPath("/w:64/plain/\(source)"), headers: ["Accept": accept])
                #expect(reply.status == 200, "\(accept)")
                #expect(reply.header("Content-Type") == type, "\(source) with Accept \(accept), \(environment)")
                #expect(magic(reply.body), "\(source) with Accept \(accept)")
                #expect(reply.header("Vary") == "Accept")
            }
            // With a detection on, imgproxy says Vary: Accept on every image, an explicit format's too.
            let explicit = try await detecting.get(try await Self.signedPath("/w:64/plain/\(photo)@png"))
            #expect(explicit.header("Content-Type") == "image/png" && explicit.header("Vary") == "Accept")
            #expect(await detecting.stop() == 0)
        }
    }

    @Test("If-None-Match with the ETag is 304 without asking the origin; another Accept is another ETag")
    func notModified() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await Self.start(Self.signed + ["--enable-webp-detection"])
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString
        let path = try await Self.signedPath("/rs:fill:50:50/plain/\(source)")
        let first = try await serve.get(path, headers: ["Accept": "image/webp"])
        #expect(first.status == 200)
        let etag = try #require(first.header("ETag"))
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 1)

        let again = try await serve.get(path, headers: ["Accept": "image/webp", "If-None-Match": etag])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(again.header("ETag") == etag)
        #expect(again.header("Cache-Control") == "public, max-age=31536000")
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 1, "a 304 fetches nothing")

        let jpeg = try await serve.get(path, headers: ["Accept": "image/jpeg", "If-None-Match": etag])
        #expect(jpeg.status == 200, "the JPEG answer has another ETag")
        #expect(jpeg.header("ETag") != etag)
    }

    @Test("source failures: 404 → 404, not an image → 422, an unknown option → 400, all plain text")
    func sourceFailures() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await Self.start()
        let missing = origin.url("/status/404").absoluteString
        let html = origin.url("/files/html-error-page.jpg").absoluteString
        let photo = origin.url("/files/coffee-progressive.jpg").absoluteString

        let notFound = try await serve.get(try await Self.signedPath("/w:10/plain/\(missing)@png"))
        #expect(notFound.status == 404)
        #expect(notFound.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(!String(decoding: notFound.body, as: UTF8.self).contains("127.0.0.1"), "no internal detail")

        let notImage = try await serve.get(try await Self.signedPath("/w:10/plain/\(html)@png"))
        #expect(notImage.status == 422)

        let unknown = try await serve.get(try await Self.signedPath("/w:10/duotone:5/plain/\(photo)@png"))
        #expect(unknown.status == 400)
        #expect(String(decoding: unknown.body, as: UTF8.self).contains("duotone"))
        let gravity = try await serve.get(try await Self.signedPath("/ex:1:sm/plain/\(photo)@png"))
        #expect(gravity.status == 400)
        #expect(String(decoding: gravity.body, as: UTF8.self).contains("smart gravity"))
    }

    @Test("a source slower than --deadline is 504; one with more pixels than --max-source-pixels is 422")
    func deadlineAndLimits() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await Self.start(Self.signed + ["--deadline", "1"])
        // The origin holds this answer until the gate opens; `?` is written %3F, as imgproxy asks.
        let held = origin.url("/files/coffee-progressive.jpg").absoluteString + "%3Fgate%3Dserve-deadline"
        let path = try await Self.signedPath("/w:10/plain/\(held)@png")
        let started = Date()
        let late = try await serve.get(path)
        origin.openGate("serve-deadline")
        #expect(late.status == 504, "\(String(decoding: late.body, as: UTF8.self))")
        // Well before the 15 s a source may stay silent without --deadline (only the request is timed: on a
        // loaded machine the signing subprocess alone has taken many seconds).
        #expect(Date().timeIntervalSince(started) < 14)
        let bomb = origin.url("/files/bomb-100000x100000.png").absoluteString
        #expect(try await serve.get(try await Self.signedPath("/w:10/plain/\(bomb)@png")).status == 422)
    }

    @Test("without --allow-destination a loopback source is refused with 403 and the origin sees nothing")
    func refusedDestination() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await Self.start(["--key", Self.key, "--salt", Self.salt])
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString
        let reply = try await serve.get(try await Self.signedPath("/w:10/plain/\(source)@png"))
        #expect(reply.status == 403)
        #expect(origin.requests.isEmpty, "the origin saw \(origin.requests.count) requests")
    }

    @Test("--allowed-sources refuses other prefixes with 403; the key can come from the environment")
    func allowedSources() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(
            [
                "--allow-destination", "127.0.0.0/8", "--allowed-sources",
                origin.url("/files/coffee-progressive.jpg").absoluteString,
            ], environment: ["WEBIMAGE_KEY": "00ff,\(Self.key)", "WEBIMAGE_SALT": "00,\(Self.salt)"])
        let allowed = origin.url("/files/coffee-progressive.jpg").absoluteString
        let other = origin.url("/files/horse-rgba.png").absoluteString
        #expect(try await serve.get(try await Self.signedPath("/w:10/plain/\(allowed)@png")).status == 200)
        #expect(try await serve.get(try await Self.signedPath("/w:10/plain/\(other)@png")).status == 403)
        #expect(origin.count(for: "/files/horse-rgba.png") == 0)
    }

    @Test("serve refuses to start without a key unless --allow-unsigned, and checks its options")
    func validation() async throws {
        let none = try await CLIRunner.run("webimage", ["serve"])
        #expect(none.status != 0)
        #expect(none.stderr.contains("--allow-unsigned"), "\(none.stderr)")
        let oddKey = try await CLIRunner.run("webimage", ["serve", "--key", "abc", "--salt", "00"])
        #expect(oddKey.status != 0)
        let badNetwork = try await CLIRunner.run(
            "webimage", ["serve", "--allow-unsigned", "--allow-destination", "nope"])
        #expect(badNetwork.status != 0)
        #expect(badNetwork.stderr.contains("--allow-destination"))
    }

    @Test("a port already taken ends serve with exit 1 and a message naming the address and port")
    func busyPort() async throws {
        let taken = try LoopbackListener(address: "127.0.0.1")
        let run = try await CLIRunner.run(
            "webimage", ["serve", "--allow-unsigned", "--host", "127.0.0.1", "--port", "\(taken.port)"])
        #expect(run.status == 1, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        #expect(
            run.stderr.contains("cannot listen on 127.0.0.1:\(taken.port): Address already in use"), "\(run.stderr)")
    }
}
