import ArgumentParser
import WebImage

/// `webimage`: download, inspect and demonstrate images with the WebImage library.
///
/// ```
/// webimage get --concurrency 8 --progressive -o out --png https://example.com/a.webp
/// webimage info photo.jpg
/// webimage demo
/// ```
@main
struct WebImageCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webimage",
        abstract: "Download and decode images with WebImage (SDWebImage's downloader on libcurl).",
        discussion: """
            Libraries: \(LibraryVersions.all.map { "\($0.name) \($0.version)" }.joined(separator: ", "))
            """,
        version: LibraryVersions.webImage,
        subcommands: [Get.self, Info.self, Demo.self]
    )

    /// Runs the command line after giving the options whose value is optional (`--http-cache [DIR]`,
    /// `--cookies [FILE]`) an explicit empty value when none follows; swift-argument-parser has no
    /// optional-value options.
    static func main() async {
        let arguments = OptionalValueOptions.normalize(Array(CommandLine.arguments.dropFirst()))
        await main(arguments)
    }
}

/// Options that may appear with or without a value.
enum OptionalValueOptions {
    /// The long names whose value is optional.
    static let names: Set<String> = ["--http-cache", "--cookies"]
    /// The value given to an option written without one (swift-argument-parser rejects an empty value).
    static let defaultMarker = "<default>"

    /// Rewrites `--http-cache` into `--http-cache=<default>` when the next argument is missing, another
    /// option, or a URL; `--http-cache DIR` and `--http-cache=DIR` stay.
    static func normalize(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var index = 0
        var afterTerminator = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" { afterTerminator = true }
            guard !afterTerminator, names.contains(argument) else {
                result.append(argument)
                continue
            }
            let next = index < arguments.count ? arguments[index] : nil
            if let next, !next.hasPrefix("-"), !next.contains("://") {
                result.append("\(argument)=\(next)")
                index += 1
            } else {
                result.append("\(argument)=\(defaultMarker)")
            }
        }
        return result
    }
}
