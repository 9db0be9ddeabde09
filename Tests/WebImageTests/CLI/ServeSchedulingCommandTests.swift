import Foundation
import LocalImageServer
import Testing
import WebImage

/// `webimage serve`'s scheduling through the built binary: work abandoned by every request stops holding
/// slots.
@Suite("webimage serve: scheduling", .timeLimit(.minutes(5)))
struct ServeSchedulingCommandTests {
    static let unsigned = ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"]

    @Test("after a flood of requests for a source that trickles 1 byte/s, a good request is answered 200")
    func floodOfSlowSources() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let serve = try ServeProcess(
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
}
