import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

@Suite(.timeLimit(.minutes(5))) struct DownloaderAsyncTests {
    let server: LocalImageServer
    init() throws { server = try Fixtures.server() }

    @Test func imageForURLReturnsTheImage() async throws {
        let downloader = ImageDownloader()
        let result = try await downloader.image(for: server.url("/files/astronaut-lossy.webp"))
        #expect(result.image?.width == 512)
        #expect(result.data == (try Fixtures.corpusFile("astronaut-lossy.webp")))
        #expect(result.response?.statusCode == 200)
        #expect(result.metrics != nil)
    }

    @Test func errorsAreThrown() async throws {
        let downloader = ImageDownloader()
        await #expect(throws: ImageDownloaderError.self) {
            _ = try await downloader.image(for: server.url("/status/500"))
        }
        do {
            _ = try await downloader.image(for: URL(string: "gopher://127.0.0.1/")!)
            Issue.record("a gopher URL succeeded")
        } catch {
            #expect(error.code == .invalidURL)
        }
    }

    @Test func theAsyncAPIThrowsImageDownloaderErrorAsItsType() async {
        let downloader = ImageDownloader()
        // Each `catch` binds `error` as an ImageDownloaderError: no cast, the throws are typed.
        do {
            _ = try await downloader.image(for: server.url("/status/404"))
            Issue.record("a 404 succeeded")
        } catch {
            #expect(error.code == .invalidDownloadStatusCode)
            #expect(error.statusCode == 404)
        }
        do {
            for try await _ in downloader.events(for: server.url("/status/404")) {}
            Issue.record("a 404's events ended without an error")
        } catch {
            #expect(error.code == .invalidDownloadStatusCode)
        }
        let failure: ImageDownloaderError? = await {
            do throws(ImageDownloaderError) {
                _ = try await downloader.image(for: URL(string: "gopher://127.0.0.1/")!)
                return nil
            } catch {
                return error
            }
        }()
        #expect(failure?.code == .invalidURL)
    }

    @Test func invalidateAsyncReturnsOnceRunningWorkEndedAndTheTransportStopped() async throws {
        let downloader = ImageTaskTests.patient()
        let url = server.url("/files/horse-rgba.png?gate=invalidate")
        let running = Task { try await downloader.image(for: url) }
        #expect(await server.waitUntil(timeout: .seconds(60)) { $0.waitingCount(atGate: "invalidate") == 1 })
        let invalidated = Locked(false)
        let invalidation = Task {
            await downloader.invalidate()
            invalidated.value = true
            return downloader.isTransportStopped
        }
        // Later requests fail as soon as the downloader is invalidated, while the running one waits.
        #expect(
            await pollAsync(seconds: 60) {
                downloader.callerCount(for: url) == 1 && downloader.downloadImage(with: server.url("/pixel.png")) == nil
            })
        #expect(!invalidated.value, "invalidate() returned while a download was still running")
        server.openGate("invalidate")
        #expect(await invalidation.value, "invalidate() returned before the transport stopped")
        #expect(try await running.value.image?.width == 400)
        await ImageDownloader.shared.invalidate()  // does nothing to `shared`, and returns
    }

    @Test func cancellingTheTaskCancelsOnlyThatCaller() async throws {
        let downloader = ImageDownloader()
        let url = server.url("/files/horse-rgba.png")
        // Suspended until both callers are attached, so the cancel certainly lands before the transfer.
        downloader.isSuspended = true
        let doomed = Task { try await downloader.image(for: url) }
        let survivor = Task { try await downloader.image(for: url) }
        let attached = await offCooperativePool { poll(seconds: 60) { downloader.callerCount(for: url) == 2 } }
        #expect(attached)
        doomed.cancel()
        let detached = await offCooperativePool { poll(seconds: 60) { downloader.callerCount(for: url) == 1 } }
        #expect(detached)
        downloader.isSuspended = false
        do {
            _ = try await doomed.value
            Issue.record("the cancelled task returned an image")
        } catch let error as ImageDownloaderError {
            #expect(error.code == .cancelled)
        } catch is CancellationError {}
        let kept = try await survivor.value
        #expect(kept.image?.width == 400)
        #expect(server.count(for: "/files/horse-rgba.png") == 1)
    }

    @Test func eventsYieldProgressThenTheResult() async throws {
        let downloader = ImageDownloader()
        var progress = 0
        var partials = 0
        var result: ImageDownloadResult?
        for try await event in downloader.events(
            for: server.url("/drip/coffee-progressive.jpg?chunk=4096&interval=20"), options: .progressiveLoad)
        {
            switch event {
            case .progress: progress += 1
            case .partialImage: partials += 1
            case .completed(let value): result = value
            }
        }
        #expect(progress >= 3)
        #expect(partials >= 1)
        #expect(result?.image?.width == 600)
    }
}
