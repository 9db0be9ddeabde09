import Foundation
import TestSupport
import Testing

@testable import WebImage

/// `file://` downloads (a downloader with `allowedProtocols` naming `file`) end as HTTP downloads do.
@Suite(.timeLimit(.minutes(2))) struct FileURLDownloadTests {
    @Test("a finished file:// download leaves the URL table, so nothing of it is kept per file")
    func finishedFileDownloadsLeaveTheTable() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("file-url-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var config = ImageDownloaderConfig.default
        config.allowedProtocols = ["file"]
        let downloader = ImageDownloader(config: config)
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        for index in 0..<3 {
            let file = folder.appendingPathComponent("pixel-\(index).png")
            try Fixtures.corpusFile("pixel-1x1.png").write(to: file)
            let image = try await downloader.image(for: file)
            #expect(image.image?.width == 1)
        }
        #expect(await pollAsync(seconds: 60) { downloader.tableCount == 0 }, "\(downloader.tableCount) left")
    }
}
