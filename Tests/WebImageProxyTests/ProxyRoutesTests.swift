import Foundation
import Hummingbird
import Locking
import ServerTestSupport
import TestSupport
import Testing
import WebImage
import WebImageProxy

/// `WebImageProxy` as a library: a Hummingbird application of the test's own, with a route of its own,
/// mounts the proxy under `/images` and serves both on a loopback port; curl is the client.
@Suite("WebImageProxy mounted in a Hummingbird application", .timeLimit(.minutes(5)))
struct ProxyRoutesTests {
    static let key = "736563726574"
    static let salt = "68656c6c6f"

    @Test("the app's own route and the proxy's signed image and /info URLs under the mount point; nothing else")
    func mountedBesideOwnRoutes() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        var configuration = ImageProxyConfiguration()
        configuration.signingKeys = [try #require(SigningKey(hexKey: Self.key, hexSalt: Self.salt))]
        configuration.allowedDestinations = ["127.0.0.0/8"]
        let router = Router()
        router.get("/hello") { _, _ in "hello from the app\n" }
        router.addProxyRoutes(ImageProxy(configuration: configuration), under: "/images")
        let port = Lock<Int?>(nil)
        let listening = AsyncStream<Void>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                port.withLock { $0 = channel.localAddress?.port }
                listening.continuation.yield()
            })
        let server = Task { try await app.run() }
        defer { server.cancel() }
        var events = listening.stream.makeAsyncIterator()
        _ = await events.next()
        let base = "http://127.0.0.1:\(try #require(port.withLock { $0 }))"
        func get(_ path: String, method: String = "GET") async throws -> Curl.Result {
            try await Curl.run(["--path-as-is", "-X", method, "--max-time", "60", base + path])
        }

        let hello = try await get("/hello")
        #expect(hello.status == 200 && String(decoding: hello.body, as: UTF8.self) == "hello from the app\n")

        // The signature covers the path after the mount point, as the proxy's own server signs it.
        let source = origin.url("/files/coffee-progressive.jpg").absoluteString
        let imagePath = "/rs:fit:40:40/plain/\(source)@png"
        let signature = try await ServeProcess.sign(imagePath, key: Self.key, salt: Self.salt)
        let image = try await get("/images/\(signature)\(imagePath)")
        #expect(image.status == 200, "\(image.stderr) \(String(decoding: image.body.prefix(200), as: UTF8.self))")
        #expect(image.header("Content-Type") == "image/png")
        let decoded = try PNGDecoder().decode(image.body, options: ImageDecodingOptions())
        #expect(max(decoded.width, decoded.height) == 40)
        let head = try await get("/images/\(signature)\(imagePath)", method: "HEAD")
        #expect(head.status == 200 && head.header("Content-Type") == "image/png")

        // A signature made over the mounted path is not the proxy's: 403.
        let wrong = try await ServeProcess.sign("/images" + imagePath, key: Self.key, salt: Self.salt)
        #expect(try await get("/images/\(wrong)\(imagePath)").status == 403)

        let infoPath = "/plain/\(source)"
        let infoSignature = try await ServeProcess.sign(infoPath, key: Self.key, salt: Self.salt)
        let info = try await get("/images/info/\(infoSignature)\(infoPath)")
        #expect(info.status == 200)
        let fields = try JSONSerialization.jsonObject(with: info.body) as? [String: Any]
        #expect(fields?["format"] as? String == "jpeg" && (fields?["width"] as? Int ?? 0) > 40, "\(fields ?? [:])")

        // The proxy's operational paths stay the application's business; other paths are the router's 404.
        for path in ["/images/health", "/images/health/ready", "/images/metrics", "/nothing"] {
            #expect(try await get(path).status == 404, "\(path)")
        }
        #expect(try await get("/images/x", method: "POST").status != 200)
    }
}
