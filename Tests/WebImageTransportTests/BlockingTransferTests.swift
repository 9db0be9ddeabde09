import Foundation
import LocalImageServer
import Locking
import Testing

@testable import WebImageTransport

/// The transport's request/response transfer on the calling thread (the object-store client's): what it
/// sends, where the answer's body goes, its size caps and its stall timeout.
@Suite(.timeLimit(.minutes(5))) struct BlockingTransferTests {
    let server: LocalImageServer
    init() throws {
        server = LocalImageServer(root: nil)
        try server.start()
    }

    /// Runs `request` on a thread of its own: a blocking transfer must not hold a thread of Swift's pool.
    private func perform(_ request: BlockingTransfer.Request) async -> Result<BlockingTransfer.Response, TransportError>
    {
        let box = UncheckedBox(request)
        return await withCheckedContinuation { continuation in
            Thread {
                do throws(TransportError) {
                    continuation.resume(returning: .success(try BlockingTransfer(box.value).perform()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }.start()
        }
    }

    private func temporaryFile() throws -> (URL, FileHandle) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("blocking-\(UUID().uuidString)")
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        return (url, try FileHandle(forWritingTo: url))
    }

    @Test func theMethodFieldsAndBodyGoAsGiven() async throws {
        defer { server.shutdown() }
        let seen = Lock<LocalImageServer.Request?>(nil)
        server.route("/put") { request in
            seen.withLock { $0 = request }
            return LocalImageServer.Response(status: 201, headers: [("ETag", "\"e1\"")], body: .data(Data("made".utf8)))
        }
        var request = BlockingTransfer.Request(method: "PUT", url: server.url("/put/a/../b"))
        request.headers = ["X-Test": "one"]
        request.body = Array("the body".utf8)
        request.keepsDotSegments = true
        let response = try await perform(request).get()
        #expect(response.statusCode == 201)
        #expect(response.headers["etag"] == "\"e1\"")
        #expect(response.body == Array("made".utf8))
        let received = try #require(seen.withLock { $0 })
        #expect(received.method == "PUT")
        #expect(received.path == "/put/a/../b")
        #expect(received.header("X-Test") == "one")
        #expect(received.header("Content-Type") == "application/octet-stream")
        #expect(received.body == Data("the body".utf8))
    }

    @Test func anEmptyBodyIsSentAndHEADHasNoBody() async throws {
        defer { server.shutdown() }
        let seen = Lock<[String]>([])
        server.route("/x") { request in
            seen.withLock { $0.append("\(request.method) \(request.header("Content-Length") ?? "-")") }
            return .text("answer")
        }
        var post = BlockingTransfer.Request(method: "POST", url: server.url("/x"))
        post.body = []
        #expect(try await perform(post).get().body == Array("answer".utf8))
        let head = try await perform(BlockingTransfer.Request(method: "HEAD", url: server.url("/x"))).get()
        #expect(head.statusCode == 200 && head.body.isEmpty)
        let delete = try await perform(BlockingTransfer.Request(method: "DELETE", url: server.url("/x"))).get()
        #expect(delete.statusCode == 200)
        #expect(seen.withLock { $0 } == ["POST 0", "HEAD -", "DELETE -"])
    }

    @Test func aRedirectIsTheAnswer() async throws {
        defer { server.shutdown() }
        server.route("/moved") { _ in LocalImageServer.Response(status: 302, headers: [("Location", "/elsewhere")]) }
        server.route("/elsewhere") { _ in .text("followed") }
        let response = try await perform(BlockingTransfer.Request(method: "GET", url: server.url("/moved"))).get()
        #expect(response.statusCode == 302)
        #expect(response.headers["Location"] == "/elsewhere")
        #expect(server.count(for: "/elsewhere") == 0)
    }

    @Test func aFileTakesA2xxBodyAndAnErrorsBodyStaysInMemory() async throws {
        defer { server.shutdown() }
        server.route("/object") { _ in LocalImageServer.Response(body: .pattern(count: 100_000)) }
        server.route("/missing") { _ in .text("<Error><Code>NoSuchKey</Code></Error>", status: 404) }
        let (file, handle) = try temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        var request = BlockingTransfer.Request(method: "GET", url: server.url("/object"))
        request.sink = .file(handle, maximumSize: 1 << 20)
        let response = try await perform(request).get()
        try handle.close()
        #expect(response.statusCode == 200 && response.body.isEmpty)
        #expect(try Data(contentsOf: file) == LocalImageServer.patternBytes(offset: 0, count: 100_000))

        let (other, otherHandle) = try temporaryFile()
        defer { try? FileManager.default.removeItem(at: other) }
        request = BlockingTransfer.Request(method: "GET", url: server.url("/missing"))
        request.sink = .file(otherHandle, maximumSize: 1 << 20)
        let error = try await perform(request).get()
        try otherHandle.close()
        #expect(error.statusCode == 404)
        #expect(error.body == Array("<Error><Code>NoSuchKey</Code></Error>".utf8))
        #expect(try Data(contentsOf: other).isEmpty)
    }

    @Test func eachSinkStopsAtItsCap() async throws {
        defer { server.shutdown() }
        server.route("/long") { _ in LocalImageServer.Response(body: .pattern(count: 1 << 40)) }
        server.route("/endless") { _ in
            LocalImageServer.Response(body: .pattern(count: 1 << 40), delivery: .chunked(chunkSize: 64 << 10))
        }
        var request = BlockingTransfer.Request(method: "GET", url: server.url("/endless"))
        request.maximumResponseSize = 100_000
        guard case .failure(let memory) = await perform(request) else {
            Issue.record("an endless answer fit in memory")
            return
        }
        #expect(memory.kind == .responseTooLarge && memory.response?.statusCode == 200, "\(memory)")
        #expect(memory.message == "the body is larger than the 100000 bytes allowed")

        let (file, handle) = try temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        defer { try? handle.close() }
        for (path, message) in [
            ("/long", "the body is larger than the 1048576 bytes allowed (Content-Length: 1099511627776)"),
            ("/endless", "the body went on past the 1048576 bytes allowed"),
        ] {
            request = BlockingTransfer.Request(method: "GET", url: server.url(path))
            request.sink = .file(handle, maximumSize: 1 << 20)
            guard case .failure(let error) = await perform(request) else {
                Issue.record("\(path) fit in a file with a cap")
                continue
            }
            #expect(error.kind == .responseTooLarge && error.message == message, "\(error)")
        }
        #expect(try handle.offset() <= 1 << 20)
    }

    @Test func aStallEndsTheTransfer() async throws {
        defer { server.shutdown() }
        server.route("/slow") { _ in
            LocalImageServer.Response(
                body: .pattern(count: 36_000), delivery: .drip(chunkSize: 1, interval: .milliseconds(100)))
        }
        var request = BlockingTransfer.Request(method: "GET", url: server.url("/slow"))
        request.stallTimeout = 1
        request.lowSpeedLimit = 1024
        guard case .failure(let error) = await perform(request) else {
            Issue.record("a trickle under the low-speed limit succeeded")
            return
        }
        #expect(error.kind == .timedOut, "\(error)")
    }

    @Test func aFieldWithALineBreakIsRefusedBeforeAnythingIsSent() async throws {
        defer { server.shutdown() }
        var request = BlockingTransfer.Request(method: "GET", url: server.url("/x"))
        request.headers = ["X-Test": "a\r\nX-Injected: b"]
        guard case .failure(let error) = await perform(request) else {
            Issue.record("a field with CR LF was sent")
            return
        }
        #expect(error.kind == .setupFailed, "\(error)")
        #expect(server.count(for: "/x") == 0)
    }

    @Test func aTransferRunsOnce() throws {
        defer { server.shutdown() }
        let transfer = try BlockingTransfer(BlockingTransfer.Request(method: "GET", url: server.url("/none")))
        _ = try transfer.perform()
        #expect(throws: TransportError.self) { try transfer.perform() }
    }
}

/// Carries a value that is not `Sendable` to the one thread that uses it next.
private struct UncheckedBox<Value>: @unchecked Sendable {
    // @unchecked Sendable: the value is handed over once and used by one thread only.
    let value: Value
    init(_ value: Value) { self.value = value }
}
