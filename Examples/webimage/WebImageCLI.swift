import ArgumentParser
import Foundation
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

    /// Parses and runs the command line, after rewriting img2dataset's option names for `bulk`
    /// (``Img2datasetArguments``): swift-argument-parser takes one spelling per option, and scripts written
    /// for img2dataset use its own.
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "bulk" {
            do {
                arguments = ["bulk"] + (try Img2datasetArguments.rewrite(Array(arguments.dropFirst())))
            } catch {
                Console.write("webimage bulk: \(error.description)\n", to: .standardError)
                // As for an unknown option: a usage error.
                Foundation.exit(64)
            }
        }
        await main(arguments)
    }
}
