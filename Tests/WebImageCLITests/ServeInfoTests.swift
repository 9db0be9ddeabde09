import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage
import WebImageCodecs

/// `/info/{signature}/{options}/{source}` through `webimage serve` run as a child process on 127.0.0.1: the
/// JSON for fixture images (sizes, format, frames, EXIF orientation, ICC profile name, byte count, BlurHash
/// and ThumbHash), signed as image URLs are, failing as image URLs fail, and never crashing on a hostile
/// source.
@Suite("webimage serve: /info", .timeLimit(.minutes(5)))
struct ServeInfoTests {
    static let key = ServeCommandTests.key
    static let salt = ServeCommandTests.salt

    /// The corpus origin, with the Display P3 JPEG at `/files/coffee-p3.jpg`.
    static func origin() throws -> LocalImageServer {
        let origin = try Fixtures.server()
        origin.setFile(name: "coffee-p3.jpg", data: try PipelineFixtures.data("coffee-p3.jpg"))
        return origin
    }

    /// The answer's JSON object; a non-200 answer or a body that is not an object is recorded.
    static func json(_ reply: ServeProcess.Reply, sourceLocation: SourceLocation = #_sourceLocation) -> [String: Any] {
        let text = String(decoding: reply.body, as: UTF8.self)
        #expect(reply.status == 200, "\(reply.status): \(text)", sourceLocation: sourceLocation)
        #expect(reply.header("Content-Type") == "application/json", sourceLocation: sourceLocation)
        let object = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any]
        #expect(object != nil, "not a JSON object: \(text)", sourceLocation: sourceLocation)
        return object ?? [:]
    }

    /// What the library makes of `data` as the proxy summarizes it: the first frame decoded upright with its
    /// profile kept, shrunk to fit 100×100, converted to sRGB, hashed.
    static func expectedHashes(_ data: Data, x: Int = 4, y: Int = 3) throws -> (blurHash: String, thumbHash: String) {
        var options = ImageDecodingOptions()
        options.decodeFirstFrameOnly = true
        options.colorSpace = .preserve
        var image = try ImageDecoderRegistry.shared.decode(data, options: options)
        image.frames = [ImagePlaceholders.downscaled(try #require(image.frames.first))]
        let frame = ImagePlaceholders.sRGB(image).frames[0]
        let thumb = try ThumbHash.encode(frame).map { String(format: "%02X", $0) }.joined()
        return (try BlurHash.encode(frame, xComponents: x, yComponents: y), thumb)
    }

    @Test("signed /info answers each fixture's sizes, format, frames, orientation, profile, bytes and hashes")
    func fixtures() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(ServeCommandTests.signed)
        // file, width, height, format, frames, orientation, profile name
        let cases: [(String, Int, Int, String, Int, Int, String?)] = [
            ("chelsea-palette.png", 451, 300, "png", 1, 1, "sRGB IEC61966-2.1"),
            // Stored 451×300 with orientation 6: upright, as imgproxy reports it, it is 300×451.
            ("chelsea-exif-orientation6.jpg", 300, 451, "jpeg", 1, 6, nil),
            ("chelsea-animated.gif", 300, 200, "gif", 8, 1, nil),
            ("chelsea-animated.webp", 300, 200, "webp", 8, 1, nil),
            ("coffee-p3.jpg", 0, 0, "jpeg", 1, 1, "Display P3 (WebImage test)"),
            ("horse-rgba.png", 400, 328, "png", 1, 1, nil),
        ]
        for (file, width, height, format, frames, orientation, profile) in cases {
            let data =
                file == "coffee-p3.jpg" ? try PipelineFixtures.data(file) : try Fixtures.corpusFile(file)
            let source = origin.url("/files/\(file)").absoluteString
            let info = Self.json(try await serve.get(try await Self.signed("/plain/\(source)")))
            if width > 0 {
                #expect(info["width"] as? Int == width && info["height"] as? Int == height, "\(file): \(info)")
            }
            #expect(info["format"] as? String == format && info["mime_type"] as? String == "image/\(format)")
            #expect(info["pages_number"] as? Int == frames, "\(file): \(info)")
            #expect(info["orientation"] as? Int == orientation, "\(file): \(info)")
            #expect(info["size"] as? Int == data.count, "\(file): \(info)")
            if let profile {
                #expect(info["color_profile"] as? String == profile, "\(file): \(info)")
            } else {
                #expect(info["color_profile"] is NSNull, "\(file): null without a profile: \(info)")
            }
            let expected = try Self.expectedHashes(data)
            #expect(info["blurhash"] as? String == expected.blurHash, "\(file): \(info)")
            #expect(info["thumb_hash"] as? String == expected.thumbHash, "\(file): \(info)")
            #expect((info["blurhash"] as? String)?.count == 28)
        }
        #expect(await serve.stop() == 0)
    }

    @Test("options: bh and th choose the hashes, s/f/d/pn leave fields out, Base64 sources; unknown is 400")
    func options() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(ServeCommandTests.signed)
        let source = origin.url("/files/chelsea-palette.png").absoluteString
        let data = try Fixtures.corpusFile("chelsea-palette.png")
        let nine = Self.json(try await serve.get(try await Self.signed("/bh:9:9/th:0/plain/\(source)")))
        #expect(nine["blurhash"] as? String == (try Self.expectedHashes(data, x: 9, y: 9)).blurHash)
        #expect(nine["thumb_hash"] == nil && nine["width"] as? Int == 451)
        let bare = Self.json(
            try await serve.get(try await Self.signed("/bh:0:0/th:f/s:0/f:false/d:0/pn:0/cp:0/plain/\(source)")))
        #expect(bare.isEmpty, "\(bare)")
        let encoded = ServeRequestOptionsTests.base64URL(source)
        let viaBase64 = Self.json(try await serve.get(try await Self.signed("/blurhash:4:3/\(encoded)")))
        #expect(viaBase64["blurhash"] as? String == (try Self.expectedHashes(data)).blurHash)
        for options in ["w:50", "bh:10:3", "bh:4", "th:maybe", "exif:1", "bh:-1:2"] {
            let reply = try await serve.get(try await Self.signed("/\(options)/plain/\(source)"))
            #expect(reply.status == 400, "\(options): \(reply.status)")
        }
        let expired = try await serve.get(try await Self.signed("/exp:1000000000/plain/\(source)"))
        #expect(expired.status == 404)
        #expect(origin.count(for: "/files/chelsea-palette.png") == 3, "the 400s and the expired URL fetch nothing")
        #expect(await serve.stop() == 0)
    }

    @Test("a bad signature is 403 before the source is asked; insecure only with --allow-unsigned")
    func signatures() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(ServeCommandTests.signed)
        let path = "/plain/\(origin.url("/files/chelsea-palette.png"))"
        let signature = try await ServeProcess.sign(path, key: Self.key, salt: Self.salt)
        let otherKey = try await ServeProcess.sign(path, key: "00ff", salt: Self.salt)
        // An image URL's signature of the same path is accepted: the signature covers what follows it.
        for bad in [
            "/info/\(otherKey)\(path)", "/info/insecure\(path)", "/info/\(signature)/bh:9:9\(path)",
            "/info/\(signature.dropLast(2))\(path)",
        ] {
            let reply = try await serve.get(bad)
            #expect(reply.status == 403, "\(bad): \(reply.status)")
        }
        #expect(try await serve.get("/info/\(signature)").status == 400, "a signature and nothing to sign")
        #expect(origin.count(for: "/files/chelsea-palette.png") == 0)
        #expect(try await serve.get("/info/\(signature)\(path)").status == 200)
        #expect(await serve.stop() == 0)
        #expect(await pollAsync(seconds: 60) { serve.stderr.contains("path=/info/-/plain/") }, "\(serve.stderr)")
        #expect(!serve.stderr.contains(signature), "the access log never carries a signature")

        let unsigned = try await ServeProcess.start(ServeHardeningTests.local)
        #expect(try await unsigned.get("/info/insecure\(path)").status == 200)
        #expect(await unsigned.stop() == 0)
    }

    @Test("a failing source answers /info with the image URL's status; hostile files never crash the server")
    func failingSources() async throws {
        let origin = try Self.origin()
        defer { origin.shutdown() }
        let root = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        try Fixtures.corpusFile("chelsea-palette.png").write(to: root.appendingPathComponent("cat.png"))
        let serve = try await ServeProcess.start(
            ServeHardeningTests.local + [
                "--allowed-sources", "http://127.0.0.1:\(origin.port)/files/", "--allowed-sources", "local:///",
            ],
            environment: ["IMGPROXY_LOCAL_FILESYSTEM_ROOT": root.path])
        let files = origin.url("/files/").absoluteString
        let sources: [(String, Int)] = [
            (files + "missing.png", 404), (files + "html-error-page.jpg", 422), (files + "random-bytes.png", 422),
            (files + "empty.jpg", 422), (files + "corrupt-header.webp", 422), (files + "truncated-half.jpg", 422),
            (files + "truncated.png", 422), (files + "bomb-100000x100000.png", 422),
            ("http://127.0.0.1:\(origin.port)/elsewhere.png", 403), ("local:///../etc/passwd", 403),
            ("local:///missing.png", 404), ("s3://bucket/key.png", 403), ("local:///cat.png", 200),
        ]
        for (source, status) in sources {
            let info = try await serve.get("/info/insecure/plain/\(source)")
            let image = try await serve.get("/insecure/w:50/plain/\(source)@png")
            #expect(info.status == status, "\(source): \(info.status) \(String(decoding: info.body, as: UTF8.self))")
            #expect(info.status == image.status, "\(source): /info \(info.status), image \(image.status)")
        }
        #expect(try await serve.get("/health").status == 200)
        #expect(await serve.stop() == 0, "the server shut down cleanly after every hostile source")

        // Without --allow-destination the loopback origin is a refused destination, for /info too.
        let guarded = try await ServeProcess.start(["--allow-unsigned"])
        let refused = try await guarded.get("/info/insecure/plain/\(files)chelsea-palette.png")
        #expect(refused.status == 403, "\(String(decoding: refused.body, as: UTF8.self))")
        #expect(await guarded.stop() == 0)
    }

    /// `path` (after the signature) as a signed `/info` path.
    static func signed(_ path: String) async throws -> String {
        "/info/" + (try await ServeProcess.sign(path, key: key, salt: salt)) + path
    }
}
