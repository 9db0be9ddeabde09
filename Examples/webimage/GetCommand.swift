import ArgumentParser
import Foundation
import WebImage

extension WebImageCLI {
    /// `webimage get URL...`: downloads and decodes images, with every downloader option reachable.
    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Download and decode images.",
            discussion: """
                Shows a bar per running download and a total bar on a terminal, plain lines otherwise, \
                then a summary table. Exits with 1 when any download failed.

                Examples:
                  webimage get https://example.com/a.webp https://example.com/b.jpg
                  webimage get --input urls.txt --concurrency 16 -o out --png --thumbnail 256x256
                  cat urls.txt | webimage get --input - --json
                """)

        @Argument(help: "Image URLs (http or https).")
        var urls: [String] = []

        @Option(
            help: ArgumentHelp(
                "Read URLs from FILE, one per line ('-' for stdin; # starts a comment).",
                valueName: "file"))
        var input: String?

        @Option(name: .customShort("o"), help: ArgumentHelp("Save each downloaded file into DIR.", valueName: "dir"))
        var outputDirectory: String?

        @Flag(help: "With -o: also save the decoded first frame as <name>.png.")
        var png = false

        @Flag(help: "Print one JSON object per result on stdout (the summary goes to stderr).")
        var json = false

        @OptionGroup(title: "Downloader options")
        var download: DownloadOptions

        mutating func validate() throws {
            guard !urls.isEmpty || input != nil else {
                throw ValidationError("Give at least one URL, or --input FILE ('-' for stdin).")
            }
            for text in urls where Self.parseURL(text) == nil {
                throw ValidationError("'\(text)' is not an http or https URL.")
            }
            if let input, input != "-", !FileManager.default.fileExists(atPath: input) {
                throw ValidationError("--input file '\(input)' does not exist.")
            }
            if png && outputDirectory == nil { throw ValidationError("--png needs -o DIR.") }
        }

        /// `text` as an http(s) URL with a host, or nil.
        static func parseURL(_ text: String) -> URL? {
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
                scheme == "http" || scheme == "https",
                url.host?.isEmpty == false
            else { return nil }
            return url
        }

        func run() async throws {
            let list = try urls.compactMap(Self.parseURL) + readInput()
            guard !list.isEmpty else { throw CLIError("no URLs to download") }
            let output = try outputDirectory.map(OutputFolder.init)

            let cookieJar = download.makeCookieJar()
            let downloader = ImageDownloader(config: try download.makeConfig(cookieJar: cookieJar))
            let display = ProgressDisplay(resultLines: json ? .json : .plain)
            display.begin(total: list.count)
            let options = download.downloaderOptions
            let context = download.context
            let requests = list.map { BatchDownload.Request(url: $0, options: options, context: context) }
            let outcomes = await BatchDownload(downloader: downloader).run(requests, display: display)
            display.end()
            downloader.invalidate(cancelPendingDownloads: false)
            do {
                try cookieJar?.save()
            } catch {
                Console.write("webimage: \(error.message)\n", to: .standardError)
            }

            if let output {
                for outcome in outcomes { try output.save(outcome, decodedPNG: png) }
            }
            let table = SummaryTable(outcomes: outcomes).render()
            Console.write("\n" + table, to: json ? .standardError : .standardOutput)
            // Exit only once the transport has closed its connections (TLS state included).
            downloader.waitUntilInvalidated()
            if outcomes.contains(where: { !$0.ok }) { throw ExitCode.failure }
        }

        /// The URLs of `--input`; a line that is not a URL is an error naming its line number.
        private func readInput() throws -> [URL] {
            guard let input else { return [] }
            let data: Data
            if input == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                do { data = try Data(contentsOf: URL(fileURLWithPath: input)) } catch {
                    throw CLIError("cannot read --input '\(input)': \(error.localizedDescription)")
                }
            }
            var urls: [URL] = []
            for (number, rawLine) in String(decoding: data, as: UTF8.self).split(
                separator: "\n", omittingEmptySubsequences: false
            ).enumerated() {
                let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
                if line.isEmpty || line.hasPrefix("#") { continue }
                guard let url = Self.parseURL(line) else {
                    throw CLIError(
                        "\(input == "-" ? "stdin" : input) line \(number + 1): '\(line)' is not an http or https URL")
                }
                urls.append(url)
            }
            return urls
        }
    }
}

/// The `-o` folder: original bytes under the URL's file name (made unique), decoded PNGs next to them.
final class OutputFolder {
    let directory: URL
    private var usedNames: Set<String> = []

    init(path: String) throws {
        directory = URL(fileURLWithPath: path, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw CLIError("cannot create output directory '\(path)': \(error.localizedDescription)")
        }
    }

    /// Writes what `outcome` holds; failures save nothing.
    func save(_ outcome: DownloadOutcome, decodedPNG: Bool) throws {
        guard outcome.ok, let data = outcome.data else { return }
        let name = uniqueName(for: outcome.url)
        try write(data, name: name)
        if decodedPNG, let image = outcome.image {
            do {
                try write(try PNGEncoder().encode(image), name: name + ".png")
            } catch let error as ImageEncodingError {
                throw CLIError("cannot encode \(outcome.url.absoluteString) as PNG: \(error.message)")
            }
        }
    }

    private func write(_ data: Data, name: String) throws {
        let file = directory.appendingPathComponent(name)
        do { try data.write(to: file) } catch {
            throw CLIError("cannot write \(file.path): \(error.localizedDescription)")
        }
    }

    private func uniqueName(for url: URL) -> String {
        let last = url.lastPathComponent
        let safe = String(last.map { $0.isLetter || $0.isNumber || "._-".contains($0) ? $0 : "_" })
        let base = safe.isEmpty || safe == "." || safe == ".." || safe == "_" ? "download" : safe
        var name = base
        var counter = 2
        while usedNames.contains(name) {
            name = "\(counter)-\(base)"
            counter += 1
        }
        usedNames.insert(name)
        return name
    }
}
