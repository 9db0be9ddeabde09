import Foundation
import WebImage

/// The README's quick start, compiled with this test target: `make test-readme` checks that the README's block
/// is these lines, imports aside. It is not run: it names hosts that do not exist.
enum READMEQuickStartExample {
    static func main() async throws {
        // README: begin
        let downloader = ImageDownloader()  // or ImageDownloader.shared
        let url = URL(string: "https://example.com/cat.webp")

        // Callback API (SDWebImage's shape). Completions run on a private serial queue, not the main queue.
        downloader.downloadImage(with: url) { image, data, error, finished in
            guard finished else { return }  // a progressive partial image, with .progressiveLoad
            if let image { print(image.format, image.width, image.height, image.frameCount) }
            if let error = error as? ImageDownloaderError { print(error.code, error.message) }
        }

        // async API: cancelling the Task cancels exactly this caller; it throws ImageDownloaderError.
        let bigURL = URL(string: "https://example.com/big.jpg")!
        var context = ImageDownloadContext()
        context.thumbnailPixelSize = PixelSize(width: 256, height: 256)
        let result = try await downloader.image(
            for: bigURL, options: [.useURLCache, .scaleDownLargeImages],
            context: context)
        if let image = result.image {
            try PNGEncoder().encode(image).write(to: URL(fileURLWithPath: "thumb.png"))
        }
        print(result.isFromCache, result.metrics?.totalTime ?? 0)

        // Progress and partial images as a stream:
        for try await event in downloader.events(for: bigURL, options: [.progressiveLoad]) {
            if case .partialImage(let partial) = event { print("partial", partial.width, partial.height) }
        }

        // A handle: events, a priority that can change while the download waits, cancel().
        let task = downloader.imageTask(for: bigURL, priority: .low)
        task.priority = .high  // moves it ahead of the downloads waiting with it
        for await event in task.events {
            if case .completed(.failure(let error)) = event { print(error.code) }  // exactly one .completed
        }

        await downloader.invalidate()  // lets running downloads finish, then stops the downloader
        // README: end
    }
}
