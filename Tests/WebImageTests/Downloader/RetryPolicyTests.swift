import Foundation
import LocalImageServer
import Locking
import MetricsTestKit
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// `config.retryPolicy`: which failures are tried again, how long the wait is, that a waiting retry holds
/// no queue slot, and that every caller still gets exactly one terminal callback.
@Suite(.timeLimit(.minutes(4))) struct RetryPolicyTests {
    let server: LocalImageServer
    let metrics = TestMetrics()
    /// Requests per path, counted by the route below.
    let seen = Lock<[String: Int]>([:])

    /// `/flaky/<status>/<name>`: `<status>` the first time each path is asked for (with `Retry-After: 1`
    /// for a 429), the PNG after. `/always/<status>/<name>`: `<status>` every time.
    init() throws {
        server = try Fixtures.server()
        let png = try Fixtures.corpusFile("horse-rgba.png")
        let seen = self.seen
        server.route("/flaky/") { request in
            let count = seen.withLock { seen -> Int in
                seen[request.path, default: 0] += 1
                return seen[request.path]!
            }
            let status = Int(request.path.split(separator: "/")[1]) ?? 500
            guard count == 1 else {
                return LocalImageServer.Response(headers: [("Content-Type", "image/png")], body: .data(png))
            }
            return LocalImageServer.Response(
                status: status, headers: status == 429 ? [("Retry-After", "1")] : [], body: .data(Data("no".utf8)))
        }
        server.route("/always/") { request in
            seen.withLock { $0[request.path, default: 0] += 1 }
            let status = Int(request.path.split(separator: "/")[1]) ?? 500
            return LocalImageServer.Response(status: status, body: .data(Data("no".utf8)))
        }
    }

    private func downloader(_ change: (inout ImageDownloaderConfig) -> Void = { _ in }) -> ImageDownloader {
        var config = ImageDownloaderConfig()
        config.metricsFactory = metrics
        config.retryPolicy = RetryPolicy(maximumAttempts: 3, baseDelay: 0.2)
        change(&config)
        return ImageDownloader(config: config)
    }

    private var retries: Int64 { metrics.counterTotal(label: "webimage_retries_total", dimensions: []) }

    @Test func a503SucceedsOnTheSecondAttempt() async throws {
        let downloader = downloader()
        let recorder = CallbackRecorder()
        downloader.downloadImage(with: server.url("/flaky/503/a.png"), completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.count == 1)
        #expect(recorder.terminals.first?.error == nil && recorder.terminals.first?.image != nil)
        #expect(seen.withLock { $0["/flaky/503/a.png"] } == 2)
        #expect(retries == 1)
        #expect(metrics.counterTotal(label: "webimage_downloads_total", dimensions: [("result", "success")]) == 1)
        #expect(metrics.counterTotal(label: "webimage_downloads_total", dimensions: [("result", "failure")]) == 0)
        // The async API reports the attempts.
        let result = try await downloader.image(for: server.url("/flaky/502/h.png"))
        #expect(result.metrics?.attempts == 2)
    }

    @Test func a429WaitsItsRetryAfter() throws {
        let downloader = downloader { $0.retryPolicy = RetryPolicy(maximumAttempts: 2, baseDelay: 0.01) }
        let recorder = CallbackRecorder()
        let started = Date()
        downloader.downloadImage(with: server.url("/flaky/429/b.png"), completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        let elapsed = Date().timeIntervalSince(started)
        #expect(recorder.terminals.first?.error == nil)
        #expect(seen.withLock { $0["/flaky/429/b.png"] } == 2)
        // Retry-After: 1 s, not the 10 ms backoff.
        #expect(elapsed >= 0.95 && elapsed < 5, "\(elapsed) s")
    }

    @Test func noRetryFor404OrWithoutThePolicy() throws {
        let recorder = CallbackRecorder()
        let downloader = downloader()
        downloader.downloadImage(with: server.url("/always/404/c.png"), completed: recorder.completion(1))
        #expect(recorder.waitForTerminal(1))
        #expect(
            recorder.terminals.first?.error?.statusCode == 404, "\(String(describing: recorder.terminals.first?.error))"
        )
        #expect(seen.withLock { $0["/always/404/c.png"] } == 1)
        // The default policy makes one attempt.
        let single = self.downloader { $0.retryPolicy = .none }
        single.downloadImage(with: server.url("/always/503/d.png"), completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 2).first?.error?.statusCode == 503)
        #expect(seen.withLock { $0["/always/503/d.png"] } == 1)
        #expect(retries == 0)
    }

    @Test func theLastAttemptsFailureIsTheCallersOnly() throws {
        let recorder = CallbackRecorder()
        let downloader = downloader()
        downloader.downloadImage(with: server.url("/always/500/e.png"), completed: recorder.completion())
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.count == 1)
        #expect(recorder.terminals.first?.error?.statusCode == 500)
        #expect(recorder.terminals.first?.error?.attempts == 3)
        #expect(seen.withLock { $0["/always/500/e.png"] } == 3)
        #expect(retries == 2)
        #expect(metrics.counterTotal(label: "webimage_downloads_total", dimensions: [("result", "failure")]) == 1)
    }

    /// One queue slot: while the 429's retry waits its second, another URL is downloaded.
    @Test func aWaitingRetryHoldsNoSlot() throws {
        let downloader = downloader { $0.maxConcurrentDownloads = 1 }
        let recorder = CallbackRecorder()
        downloader.downloadImage(with: server.url("/flaky/429/f.png"), completed: recorder.completion(1))
        #expect(server.wait { _ in seen.withLock { $0["/flaky/429/f.png"] } == 1 })
        downloader.downloadImage(with: server.url("/files/pixel-1x1.png"), completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.map(\.tag) == [2], "the other URL waited for the retry")
        #expect(seen.withLock { $0["/flaky/429/f.png"] } == 1)
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 1).first?.error == nil)
    }

    /// An `ImageTask`'s priority set while it waits to retry is the one its next operation waits with. Two
    /// slots, both held at server gates while the caller waits 30 s (`Retry-After`) and another download
    /// queues; the caller is raised to high. When one slot frees, the retry must take it before the
    /// download queued ahead of it. Every step waits for the one before, so a slow machine cannot reorder
    /// them.
    @Test func aPrioritySetDuringTheWaitReachesTheRetry() async throws {
        let png = try Fixtures.corpusFile("horse-rgba.png")
        let asked = Lock(0)
        server.route("/held-503/") { _ in
            let count = asked.withLock { count -> Int in
                count += 1
                return count
            }
            guard count > 1 else {
                return LocalImageServer.Response(
                    status: 503, headers: [("Retry-After", "30")], body: .data(Data("later".utf8)),
                    gate: "first-attempt")
            }
            return LocalImageServer.Response(headers: [("Content-Type", "image/png")], body: .data(png))
        }
        let downloader = downloader {
            $0.maxConcurrentDownloads = 2
            $0.downloadTimeout = 300
            $0.totalTimeout = 300
        }
        let path = "/files/pixel-1x1.png"
        let flaky = server.url("/held-503/p.png")
        let retried = downloader.imageTask(for: flaky)
        let held = downloader.imageTask(for: server.url("\(path)?n=1&gate=priority-a"))
        #expect(
            await server.waitUntil(timeout: .seconds(120)) {
                $0.waitingCount(atGate: "first-attempt") == 1 && $0.waitingCount(atGate: "priority-a") == 1
            })
        let heldToo = downloader.imageTask(for: server.url("\(path)?n=0&gate=priority-b"))
        // The first attempt's 503 frees its slot, which the waiting `heldToo` takes; the caller waits 30 s.
        server.openGate("first-attempt")
        #expect(await server.waitUntil(timeout: .seconds(120)) { $0.waitingCount(atGate: "priority-b") == 1 })
        let queued = downloader.imageTask(for: server.url("\(path)?n=2"))
        retried.priority = .high
        #expect(downloader.callerCount(for: flaky) == 0, "the retry joined an operation before its priority was set")
        // The retry comes due and waits in the queue behind the held slots, after `queued`.
        #expect(await pollAsync(seconds: 120) { downloader.callerCount(for: flaky) == 1 })
        server.openGate("priority-a")
        for task in [held, retried, queued] { _ = try await task.value }
        server.openGate("priority-b")
        _ = try await heldToo.value
        let order = server.requests.compactMap { entry -> String? in
            if entry.request.path == "/held-503/p.png" { return "retry" }
            return entry.request.queryValue("n").flatMap { ["0", "1"].contains($0) ? nil : $0 }
        }
        #expect(order == ["retry", "retry", "2"], "\(order)")
    }

    @Test func aCancelDuringTheWaitEndsTheCallerOnceWithCancelled() throws {
        let downloader = downloader { $0.retryPolicy = RetryPolicy(maximumAttempts: 2, baseDelay: 0.01) }
        let recorder = CallbackRecorder()
        let token = downloader.downloadImage(with: server.url("/flaky/429/g.png"), completed: recorder.completion())
        // The first attempt has failed and its operation finished: the caller waits its second.
        #expect(server.wait { _ in seen.withLock { $0["/flaky/429/g.png"] } == 1 })
        #expect(poll { downloader.tableCount == 0 })
        #expect(retries == 1)
        token?.cancel()
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals.first?.error?.code == .cancelled)
        // The retry's time passes without a request or a second callback.
        let other = CallbackRecorder()
        downloader.downloadImage(with: server.url("/files/pixel-1x1.png?delay=1500"), completed: other.completion())
        #expect(other.waitForTerminal(1))
        #expect(recorder.all.count == 1)
        #expect(seen.withLock { $0["/flaky/429/g.png"] } == 1)
        #expect(metrics.counterTotal(label: "webimage_downloads_total", dimensions: [("result", "cancelled")]) == 1)
    }

    @Test func delaysBackOffWithinTheirCaps() {
        let policy = RetryPolicy(maximumAttempts: 20)
        func status(_ code: Int, retryAfter: String? = nil) -> ImageDownloaderError {
            let url = URL(string: "http://example.com/a.png")!
            let headers: HTTPHeaders = retryAfter.map { ["Retry-After": $0] } ?? [:]
            return ImageDownloaderError(
                .invalidDownloadStatusCode, "status", url: url, statusCode: code,
                response: TransferResponse(url: url, statusCode: code, headers: headers))
        }
        let timedOut = ImageDownloaderError(.timedOut, "slow")
        #expect(policy.delay(after: timedOut, attempt: 1, jitter: 1) == 0.5)
        #expect(policy.delay(after: timedOut, attempt: 3, jitter: 1) == 2)
        #expect(policy.delay(after: timedOut, attempt: 3, jitter: 0.5) == 1)
        #expect(policy.delay(after: timedOut, attempt: 12, jitter: 1) == 30)  // maximumDelay
        #expect(policy.delay(after: status(502), attempt: 1, jitter: 1) == 0.5)
        #expect(policy.delay(after: status(429, retryAfter: "7"), attempt: 1, jitter: 0.5) == 7)  // no jitter
        #expect(policy.delay(after: status(503, retryAfter: "100000"), attempt: 1) == 300)  // maximumRetryAfter
        #expect(policy.delay(after: status(404), attempt: 1) == nil)
        #expect(policy.delay(after: ImageDownloaderError(.badImageData, "bad"), attempt: 1) == nil)
        #expect(policy.delay(after: ImageDownloaderError(.cancelled, "gone"), attempt: 1) == nil)
        #expect(RetryPolicy(maximumAttempts: 2).delay(after: timedOut, attempt: 2) == nil)  // no attempt left
        #expect(RetryPolicy.none.delay(after: timedOut, attempt: 1) == nil)
    }
}
