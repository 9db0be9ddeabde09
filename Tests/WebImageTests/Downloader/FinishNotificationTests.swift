import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// The Finish notification is reserved for success: an operation whose callers all left before they
/// were served posts Stop, never Finish, whether its bytes came from the network or the cache.
@Suite(.timeLimit(.minutes(5))) struct FinishNotificationTests {
    /// Downloads `url` with a decryptor that cancels the caller's token while the bytes are being
    /// processed (after the transfer or cache hit completed, before the callers are served), and returns
    /// the names of the notifications posted for the operation and the caller's terminal error.
    ///
    /// The waits run off Swift's cooperative pool (`offCooperativePool`), so these tests never hold one of
    /// its threads while the suite's async tests need them.
    private func cancelWhileProcessing(
        _ downloader: ImageDownloader, _ url: URL, options: ImageDownloaderOptions
    ) async throws -> (notifications: [Notification.Name], error: ImageDownloaderError?) {
        let seen = Locked<[Notification.Name]>([])
        let names: [Notification.Name] = [
            .imageDownloadStart, .imageDownloadReceiveResponse, .imageDownloadStop, .imageDownloadFinish,
        ]
        let observers = names.map { name in
            NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { note in
                guard (note.object as? ImageDownloaderOperation)?.request.url == url else { return }
                seen.update { $0.append(name) }
            }
        }
        defer {
            for observer in observers { NotificationCenter.default.removeObserver(observer) }
        }
        let token = Locked<ImageDownloadToken?>(nil)
        var context = ImageDownloadContext()
        context.decryptor = ImageDownloaderDecryptor { data, _ in
            token.value?.cancel()
            return data
        }
        let recorder = CallbackRecorder()
        downloader.isSuspended = true
        token.value = downloader.downloadImage(
            with: url, options: options, context: context, completed: recorder.completion())
        downloader.isSuspended = false
        #expect(await offCooperativePool { recorder.waitForTerminal(1) })
        #expect(await offCooperativePool { poll { downloader.currentDownloadCount == 0 } })
        await offCooperativePool { downloader.drainCallbacks() }
        return (seen.value, recorder.terminals.first?.error)
    }

    @Test func cancelledWhileItsTransferCompletesPostsNoFinish() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let (notifications, error) = try await cancelWhileProcessing(
            server.downloader(), server.url("/files/horse-rgba.png"), options: [])
        #expect(error?.code == .cancelled)
        #expect(notifications.contains(.imageDownloadStop))
        #expect(!notifications.contains(.imageDownloadFinish), "\(notifications)")
    }

    @Test func servedFromTheCacheAfterACancelPostsNoFinish() async throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let downloader = server.downloader { $0.urlCache = HTTPCache(directory: nil) }
        let url = server.url("/cache/max-age%3D3600/horse-rgba.png")
        let warm = CallbackRecorder()
        downloader.downloadImage(with: url, options: .useURLCache, completed: warm.completion())
        #expect(await offCooperativePool { warm.waitForTerminal(1) })
        // The warm-up's own Finish is posted on the callback queue right after its completion ran: let it
        // go out before the observers below start listening for this URL.
        await offCooperativePool { downloader.drainCallbacks() }
        let (notifications, error) = try await cancelWhileProcessing(downloader, url, options: .useURLCache)
        #expect(error?.code == .cancelled)
        #expect(!notifications.contains(.imageDownloadFinish), "\(notifications)")
    }
}
