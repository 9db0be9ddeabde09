import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `webimage serve`'s scheduling and encoder cost through the built binary: work abandoned by every
/// request stops holding slots, and only the signed URL or `--enable-avif-detection` buys an AVIF encode.
@Suite("webimage serve: scheduling and format cost", .timeLimit(.minutes(5)))
struct ServeSchedulingCommandTests {
    static let unsigned = ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"]

    static func avifMagic(_ data: Data) -> Bool { data.dropFirst(4).prefix(8) == Data("ftypavif".utf8) }

    @Test("after a flood of requests for a source that trickles 1 byte/s, a good request is answered 200")
    func floodOfSlowSources() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try await ServeProcess.start(
            Self.unsigned + ["--deadline", "4", "--max-concurrency", "2", "--max-queue", "4"])
        // Six different results (two running, four queued), each of a source sent one byte a second.
        let slow = (0..<6).map { index in
            let source =
                origin.url("/drip/coffee-progressive.jpg").absoluteString
                + "%3Fchunk%3D1%26interval%3D1000%26flood%3D\(index)"
            return "/insecure/w:\(50 + index)/plain/\(source)@png"
        }
        let flood = try await withThrowingTaskGroup(of: ServeProcess.Reply.self) { group in
            for path in slow { group.addTask { try await serve.get(path) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(flood.map(\.status) == Array(repeating: 504, count: 6), "\(serve.stderr)")

        // Every request of the flood has left: their jobs must not hold the slots or the queue any more.
        let good = origin.url("/files/coffee-progressive.jpg").absoluteString
        let reply = try await serve.get("/insecure/w:64/plain/\(good)@png")
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
        #expect(ServeProcess.pngSize(reply.body)?.width == 64)
        #expect(await serve.stop() == 0, "\(serve.stderr)")
    }

    @Test("Accept: image/avif gets AVIF only with --enable-avif-detection (or its env variable); Vary: Accept")
    func avifDetection() async throws {
        guard AVIFEncoder.isAvailable else { return }
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let photo = origin.url("/files/coffee-progressive.jpg").absoluteString
        let path = "/insecure/w:64/plain/\(photo)"

        let plain = try await ServeProcess.start(Self.unsigned)
        // Chromium's Accept gets JPEG, not an AVIF encode, unless a detection is turned on (imgproxy's default).
        for accept in ["image/avif", "image/avif,image/webp,image/apng,*/*;q=0.8"] {
            let reply = try await plain.get(path, headers: ["Accept": accept])
            #expect(reply.status == 200)
            #expect(reply.header("Content-Type") == "image/jpeg", "Accept \(accept) without detection")
            #expect(!Self.avifMagic(reply.body))
            #expect(reply.header("Vary") == nil, "nothing is negotiated")
        }
        let explicit = try await plain.get(path + "@avif", headers: ["Accept": "image/jpeg"])
        #expect(explicit.header("Content-Type") == "image/avif" && Self.avifMagic(explicit.body))
        #expect(explicit.header("Vary") == nil)
        #expect(await plain.stop() == 0)

        for (arguments, environment) in [
            (["--enable-avif-detection"], [:]), ([], ["IMGPROXY_ENABLE_AVIF_DETECTION": "true"]),
            ([], ["IMGPROXY_AUTO_AVIF": "1"]),
        ] {
            let detecting = try await ServeProcess.start(Self.unsigned + arguments, environment: environment)
            let reply = try await detecting.get(path, headers: ["Accept": "image/avif,image/webp,*/*"])
            #expect(reply.status == 200)
            #expect(reply.header("Content-Type") == "image/avif", "\(arguments) \(environment)")
            #expect(Self.avifMagic(reply.body))
            #expect(reply.header("Vary") == "Accept")
            #expect(await detecting.stop() == 0)
        }

        // The flag wins over the environment, and a value that is not a boolean is refused.
        let disabled = try await ServeProcess.start(
            Self.unsigned + ["--disable-avif-detection"], environment: ["IMGPROXY_ENABLE_AVIF_DETECTION": "1"])
        let reply = try await disabled.get(path, headers: ["Accept": "image/avif"])
        #expect(reply.header("Content-Type") == "image/jpeg")
        #expect(await disabled.stop() == 0)
        let bad = try await CLIRunner.run(
            "webimage", ["serve", "--allow-unsigned"], environment: ["IMGPROXY_ENABLE_AVIF_DETECTION": "yes"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("IMGPROXY_ENABLE_AVIF_DETECTION"), "\(bad.stderr)")
    }
}
