import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `webimage serve` configured the way an imgproxy deployment is, by `IMGPROXY_*` variables, through the
/// built binary: what each variable sets, that a flag wins over it, and that a malformed value or an unknown
/// name does not pass silently.
@Suite("webimage serve: IMGPROXY_* configuration", .timeLimit(.minutes(5)))
struct ServeImgproxyEnvironmentTests {
    static let key = ServeCommandTests.key
    static let salt = ServeCommandTests.salt
    static func webpMagic(_ data: Data) -> Bool {
        data.prefix(4) == Data("RIFF".utf8) && data.dropFirst(8).prefix(4) == Data("WEBP".utf8)
    }

    @Test("a server started only from IMGPROXY_KEY, IMGPROXY_SALT and IMGPROXY_BIND answers a signed URL")
    func startsFromTheEnvironmentAlone() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        // Two pairs, comma-separated as imgproxy takes them: a URL signed with either is served.
        let oldKey = "0123456789abcdef"
        let oldSalt = "fedcba9876543210"
        let serve = try await ServeProcess.start(
            [],
            environment: [
                "IMGPROXY_KEY": "\(Self.key),\(oldKey)", "IMGPROXY_SALT": "\(Self.salt),\(oldSalt)",
                "IMGPROXY_BIND": "127.0.0.1:0", "IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "true",
            ], listenFlags: false)
        let path = "/rs:fill:64:32:0/plain/\(origin.url("/files/coffee-progressive.jpg").absoluteString)@png"
        for (key, salt) in [(Self.key, Self.salt), (oldKey, oldSalt)] {
            let reply = try await serve.get("/" + (try await ServeProcess.sign(path, key: key, salt: salt)) + path)
            #expect(reply.status == 200, "\(serve.stderr)")
            #expect(ServeProcess.pngSize(reply.body)?.width == 64 && ServeProcess.pngSize(reply.body)?.height == 32)
        }
        let wrong = try await ServeProcess.sign(path, key: Self.key, salt: oldSalt)
        #expect(try await serve.get("/" + wrong + path).status == 403)
        #expect(try await serve.get("/insecure" + path).status == 403)
        #expect(await serve.stop() == 0, "\(serve.stderr)")
        #expect(!serve.stderr.contains("is not a setting"), "\(serve.stderr)")
    }

    @Test("without IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES a loopback source is refused (imgproxy's default)")
    func loopbackSourcesNeedTheSwitch() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(
            ["--allow-unsigned"], environment: ["IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "false"])
        let path = "/insecure/w:32/plain/\(origin.url("/files/coffee-progressive.jpg").absoluteString)@png"
        #expect(try await serve.get(path).status == 403)
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 0)
        #expect(await serve.stop() == 0)
    }

    @Test("a malformed value stops the start with a message naming the variable; a key is never echoed")
    func malformedValuesStopTheStart() async throws {
        let cases: [([String: String], String, String?)] = [
            (["IMGPROXY_QUALITY": "abc"], "IMGPROXY_QUALITY", "'abc'"),
            (["IMGPROXY_QUALITY": "101"], "IMGPROXY_QUALITY", "'101'"),
            (["IMGPROXY_FORMAT_QUALITY": "webp:79"], "IMGPROXY_FORMAT_QUALITY", "'webp:79'"),
            (["IMGPROXY_FORMAT_QUALITY": "webp=79,bmpx=50"], "IMGPROXY_FORMAT_QUALITY", "'bmpx=50'"),
            (["IMGPROXY_AUTO_WEBP": "yes"], "IMGPROXY_AUTO_WEBP", "'yes'"),
            (["IMGPROXY_BIND": "8080"], "IMGPROXY_BIND", "'8080'"),
            (["IMGPROXY_MAX_SRC_RESOLUTION": "lots"], "IMGPROXY_MAX_SRC_RESOLUTION", "'lots'"),
            // imgproxy's "no limit" values: every source and queue stays bounded here.
            (["IMGPROXY_MAX_SRC_FILE_SIZE": "0"], "IMGPROXY_MAX_SRC_FILE_SIZE", "'0'"),
            (["IMGPROXY_REQUESTS_QUEUE_SIZE": "0"], "IMGPROXY_REQUESTS_QUEUE_SIZE", "'0'"),
            (["IMGPROXY_SIGNATURE_SIZE": "33"], "IMGPROXY_SIGNATURE_SIZE", "'33'"),
            (["IMGPROXY_ALLOWED_SOURCES": "not a url"], "IMGPROXY_ALLOWED_SOURCES", nil),
            (["IMGPROXY_KEY": "\(Self.key)", "IMGPROXY_SALT": "\(Self.salt),00"], "IMGPROXY_KEY", nil),
            (["IMGPROXY_KEY": "zz\(Self.key)", "IMGPROXY_SALT": "\(Self.salt)"], "IMGPROXY_KEY", nil),
        ]
        for (environment, name, shown) in cases {
            let run = try await CLIRunner.run(
                "webimage", ["serve", "--allow-unsigned", "--port", "0"], environment: environment,
                killAfterMilliseconds: 120_000)
            #expect(run.status != 0, "\(environment) started")
            #expect(run.stderr.contains(name), "\(environment): \(run.stderr)")
            if let shown { #expect(run.stderr.contains(shown), "\(environment): \(run.stderr)") }
            #expect(!run.stderr.contains(Self.key), "a key is never printed: \(run.stderr)")
            #expect(run.stdout.isEmpty, "\(environment): \(run.stdout)")
        }
    }

    @Test("an unknown IMGPROXY_ variable (a misspelt name) is logged once at start")
    func unknownVariablesAreLogged() async throws {
        let serve = try await ServeProcess.start(
            ["--allow-unsigned"], environment: ["IMGPROXY_QUALTY": "90", "IMGPROXY_QUALITY": "90"])
        #expect(try await serve.get("/health").status == 200)
        #expect(await serve.stop() == 0)
        let lines = serve.stderr.split(separator: "\n").filter { $0.contains("IMGPROXY_QUALTY") }
        #expect(lines.count == 1, "\(serve.stderr)")
        #expect(lines.first?.contains("is not a setting webimage serve reads") == true, "\(serve.stderr)")
        #expect(lines.first?.contains("did you mean IMGPROXY_QUALITY?") == true, "\(serve.stderr)")
        #expect(!serve.stderr.contains("IMGPROXY_QUALITY is not"), "the known name is not reported: \(serve.stderr)")
    }

    @Test("IMGPROXY_TTL, QUALITY and MAX_RESULT_DIMENSION set the server; the flag given wins over each")
    func flagsWinOverVariables() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let environment = [
            "IMGPROXY_TTL": "60", "IMGPROXY_MAX_RESULT_DIMENSION": "40", "IMGPROXY_QUALITY": "20",
            "IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "1",
        ]
        let path = "/insecure/w:100/plain/\(origin.url("/files/coffee-progressive.jpg").absoluteString)@jpg"
        let fromVariables = try await ServeProcess.start(["--allow-unsigned"], environment: environment)
        let small = try await fromVariables.get(path)
        #expect(small.status == 200 && small.header("Cache-Control") == "public, max-age=60")
        #expect(try ImageDecoderRegistry.shared.decode(small.body).width == 40, "MAX_RESULT_DIMENSION")
        #expect(await fromVariables.stop() == 0)

        let fromFlags = try await ServeProcess.start(
            ["--allow-unsigned", "--ttl", "120", "--max-result-dimension", "100", "--quality", "90"],
            environment: environment)
        let large = try await fromFlags.get(path)
        #expect(large.status == 200 && large.header("Cache-Control") == "public, max-age=120")
        #expect(try ImageDecoderRegistry.shared.decode(large.body).width == 100)
        #expect(await fromFlags.stop() == 0)
        // The same 40-pixel-wide result at quality 20 and at 90: IMGPROXY_QUALITY reached the encoder.
        let quality20 = try await ServeProcess.start(
            ["--allow-unsigned", "--max-result-dimension", "100"], environment: environment)
        let low = try await quality20.get(path)
        #expect(await quality20.stop() == 0)
        #expect(low.status == 200 && low.body.count < large.body.count, "\(low.body.count) vs \(large.body.count)")
    }

    @Test("IMGPROXY_ENFORCE_WEBP replaces the URL's format when Accept takes WebP; IMGPROXY_FORMAT_QUALITY applies")
    func enforcedWebP() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let path = "/insecure/w:64/plain/\(origin.url("/files/coffee-progressive.jpg").absoluteString)@png"
        let serve = try await ServeProcess.start(
            ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"], environment: ["IMGPROXY_ENFORCE_WEBP": "true"])
        let enforced = try await serve.get(path, headers: ["Accept": "image/webp,*/*"])
        #expect(enforced.header("Content-Type") == "image/webp" && Self.webpMagic(enforced.body))
        #expect(enforced.header("Vary") == "Accept")
        let asked = try await serve.get(path, headers: ["Accept": "image/png"])
        #expect(asked.header("Content-Type") == "image/png" && asked.header("Vary") == "Accept")
        #expect(await serve.stop() == 0)

        // A lower WebP quality from IMGPROXY_FORMAT_QUALITY makes a smaller file than imgproxy's default 79.
        let lowQuality = try await ServeProcess.start(
            ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"],
            environment: ["IMGPROXY_ENFORCE_WEBP": "true", "IMGPROXY_FORMAT_QUALITY": "webp=10, avif=40"])
        let small = try await lowQuality.get(path, headers: ["Accept": "image/webp"])
        #expect(await lowQuality.stop() == 0)
        #expect(Self.webpMagic(small.body) && small.body.count < enforced.body.count)
    }

    @Test("IMGPROXY_SECRET asks for Authorization: Bearer; USE_ETAG=false drops ETags; HEALTH_CHECK_PATH answers")
    func secretETagAndHealthPath() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(
            ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"],
            environment: [
                "IMGPROXY_SECRET": "s3cret", "IMGPROXY_USE_ETAG": "false", "IMGPROXY_HEALTH_CHECK_PATH": "healthz/",
            ])
        let path = "/insecure/w:32/plain/\(origin.url("/files/coffee-progressive.jpg").absoluteString)@png"
        #expect(try await serve.get(path).status == 403)
        #expect(try await serve.get(path, headers: ["Authorization": "Bearer s3cre"]).status == 403)
        #expect(try await serve.get(path, headers: ["Authorization": "Bearer s3cret!"]).status == 403)
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 0)
        let reply = try await serve.get(path, headers: ["Authorization": "Bearer s3cret"])
        #expect(reply.status == 200 && reply.header("ETag") == nil, "\(reply.headers)")
        let again = try await serve.get(path, headers: ["Authorization": "Bearer s3cret", "If-None-Match": "*"])
        #expect(again.status == 200, "no ETags, no 304s")
        #expect(try await serve.get("/healthz").status == 200)
        #expect(try await serve.get("/health").status == 200)
        #expect(await serve.stop() == 0)
    }

    @Test("IMGPROXY_SIGNATURE_SIZE=8: a signature is the HMAC's first 8 bytes; the whole HMAC is refused")
    func truncatedSignatures() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(
            ["--allow-destination", "127.0.0.0/8"],
            environment: ["IMGPROXY_KEY": Self.key, "IMGPROXY_SALT": Self.salt, "IMGPROXY_SIGNATURE_SIZE": "8"])
        let path = "/w:32/plain/\(origin.url("/files/coffee-progressive.jpg").absoluteString)@png"
        let full = try await ServeProcess.sign(path, key: Self.key, salt: Self.salt)
        let bytes = try #require(
            Data(
                base64Encoded: full.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                    + "="))
        let short = bytes.prefix(8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        #expect(try await serve.get("/\(short)\(path)").status == 200, "\(serve.stderr)")
        #expect(try await serve.get("/\(full)\(path)").status == 403)
        #expect(await serve.stop() == 0)
    }
}
