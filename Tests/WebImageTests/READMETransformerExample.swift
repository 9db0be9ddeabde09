import Foundation
import WebImage

/// The README's transformer example, compiled with this test target: `make test-readme` checks that the
/// README's block is these lines, imports aside. The block continues the quick start, so the two names it uses
/// (`downloader` and `url`) are defined first, outside the markers. It is not run: it names a host that does
/// not exist.
enum READMETransformerExample {
    static func main() async throws {
        let downloader = ImageDownloader()
        let url = URL(string: "https://example.com/cat.webp")!
        // README: begin
        var context = ImageDownloadContext()
        context.transformer = ImageTransformer.pipeline([
            .applyOrientation, .resize(to: PixelSize(width: 256, height: 256), mode: .fill), .roundCorners(radius: 12),
        ])
        let thumbnail = try await downloader.image(for: url, context: context).image
        // README: end
        _ = thumbnail
    }
}
