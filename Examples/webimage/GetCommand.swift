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
                then a summary: the whole table for up to 20 URLs; for more, the count of each result, the \
                failed rows (the first 100) and the totals. Exits with 1 when any download failed; an image decoded from data that ends \
                early ("partial": true) is a failure unless --allow-partial.

                Examples:
                  webimage get https://example.com/a.webp https://example.com/b.jpg
                  webimage get --input urls.txt --concurrency 16 -o out --png --thumbnail 256x256
                  webimage get -o thumbs --thumbnail 256x256 --fit fill --format jpeg --quality 85 URL...
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

        @Flag(help: "With -o: replace files that exist (otherwise the next free name, name-1.ext, is used).")
        var force = false

        @Flag(help: "Print one JSON object per result on stdout (the summary goes to stderr).")
        var json = false

        @Flag(
            help: """
                Count an image decoded from data that ends early ("partial": true) as a success, and save it \
                with -o; by default it is a failure (exit 1) and is not saved.
                """)
        var allowPartial = false

        @OptionGroup(title: "Downloader options")
        var download: DownloadOptions

        @OptionGroup(title: "Output options (with -o)")
        var image: ImageOutputOptions

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
            if force && outputDirectory == nil { throw ValidationError("--force needs -o DIR.") }
            if image.format != nil && outputDirectory == nil { throw ValidationError("--format needs -o DIR.") }
            if image.format != nil && png { throw ValidationError("--png and --format exclude each other.") }
            try image.check(thumbnail: download.thumbnail)
            if input == "-" && download.passwordStdin {
                throw ValidationError("--input - and --password-stdin cannot both read stdin.")
            }
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
            let list = URLList(arguments: urls.compactMap(Self.parseURL), input: try readInput())
            guard list.count > 0 else { throw CLIError("no URLs to download") }
            let output = try outputDirectory.map { try OutputFolder(path: $0, overwrite: force) }

            let cookieJar = download.makeCookieJar()
            let downloader = ImageDownloader(config: try download.makeConfig(cookieJar: cookieJar))
            let display = ProgressDisplay(resultLines: json ? .json : .plain)
            display.begin(total: list.count)
            let options = download.downloaderOptions
            var context = download.context
            if let transformer = image.transformer(thumbnail: download.thumbnail) {
                // The resize is the transformer's (Lanczos, to the mode asked); the decoder only shrinks on load.
                var withTransformer = ImageDownloadContext()
                withTransformer.transformer = transformer
                context = withTransformer
            }
            let requests = list.lazy.map { BatchDownload.Request(url: $0, options: options, context: context) }
            // Streamed: a few downloads per slot are queued at a time, and each image is kept only until its
            // line is printed and its file written.
            let savePNG = png
            let encoder = image.encoder
            let allowsPartial = allowPartial
            let rows = await BatchDownload(downloader: downloader).stream(
                requests, window: 4 * download.concurrency, display: display
            ) { outcome in
                var outcome = outcome
                outcome.allowsPartial = allowsPartial
                guard outcome.ok else { return outcome }
                return output?.save(outcome, decodedPNG: savePNG, encoder: encoder) ?? outcome
            }
            display.end()
            downloader.invalidate(cancelPendingDownloads: false)
            do {
                try cookieJar?.save()
            } catch {
                Console.write("webimage: \(error.message)\n", to: .standardError)
            }

            let stream: FileHandle = json ? .standardError : .standardOutput
            Console.write("\n", to: stream)
            SummaryTable(rows: rows).writeSummary { Console.write($0, to: stream) }
            // Exit only once the transport has closed its connections (TLS state included); awaited, so no
            // thread of the shared pool is held meanwhile.
            await downloader.invalidate()
            if rows.contains(where: { !$0.ok }) { throw ExitCode.failure }
        }

        /// The lines of `--input`, each checked to be a URL (an error names the first that is not); the
        /// URLs themselves are made again one at a time while downloading (see `URLList`).
        private func readInput() throws -> URLList.Lines? {
            guard let input else { return nil }
            let data: Data
            if input == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                do { data = try Data(contentsOf: URL(fileURLWithPath: input)) } catch {
                    throw CLIError("cannot read --input '\(input)': \(error.localizedDescription)")
                }
            }
            let lines = URLList.Lines(data: data)
            if let (number, line) = lines.first(where: { Self.parseURL($0) == nil }) {
                throw CLIError(
                    "\(input == "-" ? "stdin" : input) line \(number + 1): '\(line)' is not an http or https URL")
            }
            return lines
        }
    }
}

/// The URLs to download: those from the command line, then those of `--input`, which stay as the file's
/// bytes and become `URL`s one at a time as the downloads reach them (a `URL` costs far more memory
/// than its line).
struct URLList: Sequence {
    /// The URL lines of an input file: blank lines and `#` comments skipped, whitespace trimmed.
    struct Lines {
        let data: Data
        let count: Int

        init(data: Data) {
            self.data = data
            var count = 0
            Self.forEachLine(data) { _, _ in
                count += 1
                return true
            }
            self.count = count
        }

        /// The first URL line for which `predicate` holds, with its 0-based line number in the file.
        func first(where predicate: (String) -> Bool) -> (Int, String)? {
            var found: (Int, String)?
            Self.forEachLine(data) { number, line in
                if predicate(line) { found = (number, line) }
                return found == nil
            }
            return found
        }

        /// Calls `body` for each URL line with its line number; stops when it returns false.
        private static func forEachLine(_ data: Data, _ body: (Int, String) -> Bool) {
            var number = 0
            var start = data.startIndex
            while let (text, next) = line(in: data, at: start) {
                if isURLLine(text) && !body(number, text) { return }
                number += 1
                start = next
            }
        }

        /// The line starting at `start`, trimmed, and where the next one begins; nil at the end.
        fileprivate static func line(in data: Data, at start: Data.Index) -> (text: String, next: Data.Index)? {
            guard start < data.endIndex else { return nil }
            let end = data[start...].firstIndex(of: UInt8(ascii: "\n")) ?? data.endIndex
            let text = String(decoding: data[start..<end], as: UTF8.self).trimmingCharacters(
                in: .whitespacesAndNewlines)
            return (text, end < data.endIndex ? data.index(after: end) : end)
        }

        /// Blank lines and `#` comments are not URLs.
        fileprivate static func isURLLine(_ text: String) -> Bool { !text.isEmpty && !text.hasPrefix("#") }
    }

    let arguments: [URL]
    let input: Lines?

    init(arguments: [URL], input: Lines?) {
        self.arguments = arguments
        self.input = input
    }

    var count: Int { arguments.count + (input?.count ?? 0) }
    var underestimatedCount: Int { count }

    struct Iterator: IteratorProtocol {
        fileprivate var arguments: IndexingIterator<[URL]>
        fileprivate let data: Data?
        fileprivate var offset: Data.Index?

        mutating func next() -> URL? {
            if let url = arguments.next() { return url }
            guard let data, let start = offset else { return nil }
            offset = nil
            var position = start
            while let (text, next) = Lines.line(in: data, at: position) {
                position = next
                // Checked when the list was read.
                if Lines.isURLLine(text), let url = WebImageCLI.Get.parseURL(text) {
                    offset = next
                    return url
                }
            }
            return nil
        }
    }

    func makeIterator() -> Iterator {
        Iterator(arguments: arguments.makeIterator(), data: input?.data, offset: input?.data.startIndex)
    }
}
