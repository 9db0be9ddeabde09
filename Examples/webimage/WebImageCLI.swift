import ArgumentParser
import WebImage
import WebImageDataset

/// `webimage`: download, inspect and demonstrate images with the WebImage library.
///
/// ```
/// webimage get --concurrency 8 --progressive -o out --png https://example.com/a.webp
/// webimage info photo.jpg
/// webimage convert photo.avif photo.jpg --quality 90
/// webimage serve --key $KEY --salt $SALT --port 8080
/// webimage demo
/// ```
@main
struct WebImageCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webimage",
        abstract: "Download and decode images with WebImage (SDWebImage's downloader on libcurl).",
        discussion: """
            Decodes: \(CodecLibraries.decodedFormatList). Encodes: \(OutputFormat.list).
            Libraries: \((LibraryVersions.all + ParquetLibraries.versions).map { "\($0.name) \($0.version)" }.joined(separator: ", "))
            """,
        version: LibraryVersions.webImage,
        subcommands: [Get.self, Info.self, Convert.self, Bulk.self, BulkStats.self, Serve.self, Demo.self]
    )
}
