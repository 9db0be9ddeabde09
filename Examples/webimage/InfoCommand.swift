import ArgumentParser
import Foundation
import WebImage

extension WebImageCLI {
    /// `webimage info FILE|URL...`: what an image file holds.
    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show an image's format, dimensions, frames, alpha, EXIF orientation and size.",
            discussion: """
                Reads \(CodecLibraries.decodedFormatList).

                Examples:
                  webimage info photo.jpg
                  webimage info https://example.com/cat.webp
                """)

        @Argument(help: "Image files or http(s) URLs.")
        var sources: [String]

        @Flag(help: "Print one JSON object per source.")
        var json = false

        mutating func validate() throws {
            guard !sources.isEmpty else { throw ValidationError("Give at least one file or URL.") }
        }

        func run() async throws {
            var failed = false
            for source in sources {
                // A URL is shown without its password (`user:***@`).
                let shown = Self.isURL(source) ? URL(string: source)?.redactedString ?? source : source
                do {
                    let (data, image) = try await load(source)
                    print(json ? Self.json(source: shown, data: data, image: image) : Self.text(shown, data, image))
                } catch {
                    failed = true
                    let message = (error as? ImageDownloaderError).map(\.description) ?? String(describing: error)
                    Console.write("\(shown): \(message)\n", to: .standardError)
                }
            }
            if failed { throw ExitCode.failure }
        }

        /// Whether `source` is read as a URL rather than a file path.
        static func isURL(_ source: String) -> Bool {
            source.contains("://") && URL(string: source) != nil
        }

        private func load(_ source: String) async throws -> (Data, Image) {
            if Self.isURL(source), let url = URL(string: source) {
                let result = try await ImageDownloader.shared.image(for: url)
                guard let image = result.image else { throw CLIError("no image decoded") }
                return (result.data, image)
            }
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: source)) } catch {
                throw CLIError("cannot read the file: \(error.localizedDescription)")
            }
            return (data, try ImageDecoderRegistry.shared.decode(data, options: LocalDecoding.options()))
        }

        static func text(_ source: String, _ data: Data, _ image: Image) -> String {
            let loop =
                image.frameCount > 1
                ? " (loop count \(image.loopCount == 0 ? "forever" : String(image.loopCount)))" : ""
            let duration = image.frames.reduce(0) { $0 + $1.duration }
            let timing = image.frameCount > 1 ? String(format: ", %.2f s", duration) : ""
            return """
                \(source)
                  format       \(image.format.rawValue)\(image.isPartial ? " (partial: the data ends early)" : "")
                  dimensions   \(image.width)x\(image.height)
                  frames       \(image.frameCount)\(timing)\(loop)
                  alpha        \(image.hasAlpha ? "yes" : "no")
                  orientation  \(image.fileOrientation) (\(orientationName(image.fileOrientation))\(applied(image)))
                  bytes        \(data.count)
                """
        }

        static func json(source: String, data: Data, image: Image) -> String {
            let fields = [
                "\"source\":\(DownloadOutcome.quote(source))", "\"format\":\"\(image.format.rawValue)\"",
                "\"width\":\(image.width)", "\"height\":\(image.height)", "\"frames\":\(image.frameCount)",
                "\"loopCount\":\(image.loopCount)", "\"hasAlpha\":\(image.hasAlpha)",
                "\"exifOrientation\":\(image.fileOrientation)", "\"bytes\":\(data.count)",
                "\"partial\":\(image.isPartial)",
            ]
            return "{" + fields.joined(separator: ",") + "}"
        }

        /// How the dimensions relate to the file's orientation: the decoder turned the pixels upright.
        static func applied(_ image: Image) -> String {
            image.fileOrientation != 1 && image.exifOrientation == 1 ? ", applied: dimensions upright" : ""
        }

        /// EXIF orientation as the transform that displays it upright.
        static func orientationName(_ value: Int) -> String {
            switch value {
            case 1: "up"
            case 2: "mirrored"
            case 3: "rotate 180°"
            case 4: "mirrored vertically"
            case 5: "mirrored, rotate 90° CW"
            case 6: "rotate 90° CW"
            case 7: "mirrored, rotate 90° CCW"
            case 8: "rotate 90° CCW"
            default: "unknown"
            }
        }
    }
}
