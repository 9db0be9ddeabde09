import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

@Suite(.timeLimit(.minutes(5))) struct ResponseBodyTests {
    private func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) &+ seed }
    }

    private func append(_ body: ResponseBody, _ bytes: [UInt8], chunk: Int) {
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + chunk, bytes.count)
            bytes[offset..<end].withUnsafeBytes { body.append($0) }
            offset = end
        }
    }

    @Test func aLargeBodyUsesAPooledBufferThatComesBackWhenItsDataIsReleased() {
        let pool = BodyBufferPool()
        let expected = bytes(3 << 20, seed: 7)
        do {
            let body = ResponseBody(pool: pool)
            body.reserve(expected.count)
            append(body, expected, chunk: 65_536)
            #expect(body.snapshot.count == expected.count)
            let data = body.take()
            #expect(Array(data) == expected)
            #expect(pool.idleBytes == 0, "the buffer belongs to the Data while it lives")
        }
        #expect(pool.idleBytes >= expected.count, "released Data returns its buffer to the pool")
        // The next body of a similar size writes into the same memory: no new buffer is held afterwards.
        let idle = pool.idleBytes
        do {
            let body = ResponseBody(pool: pool)
            body.reserve(expected.count - 1000)
            append(body, Array(expected.dropLast(1000)), chunk: 100_000)
            #expect(pool.idleBytes == 0, "the idle buffer was taken again")
            #expect(Array(body.take()) == Array(expected.dropLast(1000)))
        }
        #expect(pool.idleBytes == idle)
    }

    @Test func moreBytesThanAnnouncedMoveIntoOrdinaryData() {
        let pool = BodyBufferPool()
        let announced = 1 << 20
        let sent = bytes(announced * 3, seed: 3)  // three times the pooled buffer's 1 MiB
        let body = ResponseBody(pool: pool)
        body.reserve(announced)
        append(body, sent, chunk: 50_000)
        #expect(pool.idleBytes > 0, "the outgrown buffer went back to the pool at once")
        #expect(Array(body.take()) == sent)
    }

    @Test func smallAndUnannouncedBodiesUseOrdinaryData() {
        let pool = BodyBufferPool()
        for announced in [0, 20_000] {
            let sent = bytes(40_000, seed: 1)
            let body = ResponseBody(pool: pool)
            body.reserve(announced)
            append(body, sent, chunk: 16_384)
            #expect(Array(body.take()) == sent)
        }
        #expect(pool.idleBytes == 0)
    }

    @Test func anAbsurdDeclaredLengthIsNotServedByThePool() {
        let pool = BodyBufferPool()
        #expect(pool.take(atLeast: Int.max) == nil)
        #expect(pool.take(atLeast: Int.max / 2 + 1) == nil)
        #expect(pool.take(atLeast: 0) == nil)
    }

    @Test func theIdleTotalIsBoundedAndIdleBuffersAreFreedAfterTheirLifetime() throws {
        let pool = BodyBufferPool(maximumIdleBytes: 5 << 20, idleLifetime: 0.2)
        let buffers = try (0..<4).map { _ in try #require(pool.take(atLeast: 2 << 20)) }
        for buffer in buffers { pool.recycle(buffer) }
        #expect(pool.idleBytes <= 5 << 20)
        #expect(pool.idleBytes > 0)
        #expect(poll(seconds: 10) { pool.idleBytes == 0 })
    }

    @Test func aMultiMegabyteDownloadArrivesByteForByte() throws {
        let server = try Fixtures.server()
        let file = "astronaut-36mp.jpg"
        let downloader = ImageDownloader()
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/files/\(file)"), options: .avoidDecodeImage, completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        let call = try #require(recorder.terminals.first)
        #expect(call.error == nil)
        let served = try Fixtures.corpusFile(file)
        #expect(served.count >= BodyBufferPool.minimumSize, "the file must be large enough to use the pool")
        #expect(call.data == served)
    }
}
