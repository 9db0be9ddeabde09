import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage
@testable import WebImageTransport

/// `maximumConnectionsPerHost` and `maximumTotalConnections`: the server sees no more requests at once
/// than the limits allow, and a download waiting for a connection is timed as the README says.
@Suite(.timeLimit(.minutes(2))) struct ConnectionLimitTests {
    let server: LocalImageServer
    init() throws { server = try Fixtures.server() }

    private func downloader(_ change: (inout ImageDownloaderConfig) -> Void) -> ImageDownloader {
        var config = ImageDownloaderConfig()
        change(&config)
        return ImageDownloader(config: config)
    }

    @Test func eightDownloadsFromOneHostNeverHaveMoreThanTwoInFlight() throws {
        let downloader = downloader {
            $0.maxConcurrentDownloads = 9
            $0.maximumConnectionsPerHost = 2
        }
        let recorder = CallbackRecorder()
        for n in 1...8 {
            downloader.downloadImage(
                with: server.url("/files/pixel-1x1.png?n=\(n)&gate=held"), completed: recorder.completion(n))
        }
        #expect(server.wait { $0.waitingCount(atGate: "held") == 2 })
        // The limit is per host: the same server under another name answers while two are held, and
        // the six others have still not arrived.
        let other = URL(
            string: server.url("/pixel.png").absoluteString.replacingOccurrences(of: "127.0.0.1", with: "localhost"))
        downloader.downloadImage(with: other, completed: recorder.completion(9))
        #expect(recorder.waitForTerminal(1))
        #expect(recorder.terminals(tag: 9).first?.error == nil)
        #expect(server.waitingCount(atGate: "held") == 2)
        #expect(server.count(for: "/files/pixel-1x1.png") == 2)
        // The other host's request has ended at the server too (it may count it a moment after the client
        // has the bytes); the most in flight from the reset on starts at the two held.
        #expect(server.wait { $0.inFlight == 2 })
        server.resetLog()
        server.openGate("held")
        #expect(recorder.waitForTerminal(8))
        #expect(recorder.terminals.allSatisfy { $0.error == nil }, "\(recorder.terminals.map(\.error))")
        #expect(server.count(for: "/files/pixel-1x1.png") == 6)
        #expect(server.maxInFlight == 2)
    }

    /// The first download's head comes after 3 s, so the second waits that long for the host's one
    /// connection, then takes 1.5 s: 4.5 s since it was handed to the transport, 1.5 s since it got its
    /// turn. The total timeout of 4 s counts from the turn (curl counts a pending transfer's wait).
    @Test func aDownloadWaitingForAConnectionIsNotTimedUntilItHasOne() throws {
        let downloader = downloader {
            $0.maximumConnectionsPerHost = 1
            $0.totalTimeout = 4
        }
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/files/pixel-1x1.png?n=1&delay=3000"), completed: recorder.completion(1))
        downloader.downloadImage(
            with: server.url("/files/pixel-1x1.png?n=2&delay=1500"), completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(2))
        #expect(recorder.terminals.allSatisfy { $0.error == nil }, "\(recorder.terminals.map(\.error))")
        #expect(server.maxInFlight == 1)
    }

    /// Once the request is sent the clock runs as before: a head that never comes ends at the total.
    @Test func theTotalTimeoutStillEndsADownloadThatWaitedForItsConnection() throws {
        let downloader = downloader {
            $0.maximumConnectionsPerHost = 1
            $0.totalTimeout = 2
        }
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url("/files/pixel-1x1.png?n=1&delay=1500"), completed: recorder.completion(1))
        let started = Date()
        downloader.downloadImage(with: server.url("/hang"), completed: recorder.completion(2))
        #expect(recorder.waitForTerminal(2))
        let elapsed = Date().timeIntervalSince(started)
        #expect(recorder.terminals(tag: 1).first?.error == nil)
        let error = recorder.terminals(tag: 2).first?.error
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(elapsed >= 3.4 && elapsed < 6, "ended after \(elapsed) s")
    }

    /// The admission alone: a host at its limit never holds back another host's transfers.
    @Test func aWaitingTransferOfAnotherHostEntersWhenAnyTransferEnds() {
        final class T {}
        var admission = TransferAdmission<T>(perHost: 1, total: 2)
        let a1 = T()
        let a2 = T()
        let a3 = T()
        let b1 = T()
        let b2 = T()
        let entered = [
            admission.arrive(a1, host: "a"), admission.arrive(a2, host: "a"),  // host a is full
            admission.arrive(b1, host: "b"), admission.arrive(a3, host: "a"), admission.arrive(b2, host: "b"),
        ]
        #expect(entered == [true, false, true, false, false])
        // b1 ends: b2 enters although a2 and a3 arrived first.
        let afterB1 = admission.leave(host: "b")
        #expect(afterB1.map(ObjectIdentifier.init) == [ObjectIdentifier(b2)])
        let removed = admission.removeWaiting(a3)
        #expect(removed)
        let afterA1 = admission.leave(host: "a")
        #expect(afterA1.map(ObjectIdentifier.init) == [ObjectIdentifier(a2)])
        #expect(admission.waitingCount == 0)
        let afterB2 = admission.leave(host: "b")
        #expect(afterB2.isEmpty)
    }
}
