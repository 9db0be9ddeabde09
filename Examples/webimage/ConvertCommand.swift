import ArgumentParser
import Foundation
import WebImage

extension WebImageCLI {
    /// `webimage convert IN OUT`: decodes a file and writes it in another format.
    struct Convert: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Convert an image file to JPEG, WebP, PNG or AVIF.",
            discussion: """
                Reads any format WebImage decodes (\(CodecLibraries.decodedFormatList)); writes \
                \(OutputFormat.list), from --format or OUT's extension. Colours are converted to sRGB unless --keep-profile \
                keeps the ICC profile (embedded in the output). Animations stay animated as WebP and \
                APNG (--format apng); the other formats take the first frame.

                Examples:
                  webimage convert photo.avif photo.jpg --quality 90
                  webimage convert big.jpg thumb.webp --thumbnail 256x256 --fit fill
                  webimage convert animated.gif small.png --format apng --thumbnail 128x128
                """)

        @Argument(help: "The image file to read.")
        var input: String

        @Argument(help: "The file to write (its extension picks the format unless --format is given).")
        var output: String

        @Option(
            help: ArgumentHelp("Resize to this box (fit inside unless --fit says otherwise).", valueName: "WxH"),
            transform: DownloadOptions.parseSize)
        var thumbnail: PixelSize?

        @Flag(help: "Keep the colours as stored and embed the input's ICC profile.")
        var keepProfile = false

        @Flag(help: "Replace OUT if it exists.")
        var force = false

        @OptionGroup(title: "Output options")
        var image: ImageOutputOptions

        mutating func validate() throws {
            if image.format == nil, OutputFormat(pathExtension: (output as NSString).pathExtension) == nil {
                throw ValidationError(
                    "cannot tell the output format from '\(output)': use a .jpg, .webp, .png or .avif name, or --format."
                )
            }
            try image.check(
                thumbnail: thumbnail, impliedFormat: OutputFormat(pathExtension: (output as NSString).pathExtension))
        }

        func run() async throws {
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: input)) } catch {
                throw CLIError("cannot read '\(input)': \(error.localizedDescription)")
            }
            var options = LocalDecoding.options()
            options.colorSpace = keepProfile ? .preserve : .sRGB
            var outputOptions = image
            if outputOptions.format == nil {
                outputOptions.format = OutputFormat(pathExtension: (output as NSString).pathExtension)
            }
            let transformer: ImageTransformer? =
                thumbnail.map { outputOptions.transformer(thumbnail: $0) ?? .resize(to: $0, mode: .fit) }
            options.minimumDecodeSize = transformer?.minimumDecodeSize
            var decoded: Image
            do {
                decoded = try ImageDecoderRegistry.shared.decode(data, options: options)
                if let transformer { decoded = try transformer.transform(decoded, budget: options.memoryBudget) }
            } catch let error as ImageCodecError {
                throw CLIError("\(input): \(error.message)")
            }
            guard let encoder = outputOptions.encoder else { throw CLIError("no output format") }
            let encoded: Data
            do { encoded = try encoder.encode(decoded) } catch let error as ImageCodecError {
                throw CLIError("cannot encode as \(encoder.format.rawValue): \(error.message)")
            }
            let url = URL(fileURLWithPath: output)
            if !force, FileManager.default.fileExists(atPath: url.path) {
                throw CLIError("'\(output)' exists; --force replaces it.")
            }
            do { try encoded.write(to: url, options: .atomic) } catch {
                throw CLIError("cannot write '\(output)': \(error.localizedDescription)")
            }
            print(
                "\(input) (\(decoded.format == .unknown ? "?" : ImageFormat.detect(data).rawValue) "
                    + "\(decoded.originalWidth)x\(decoded.originalHeight)) -> \(output) (\(encoder.format.rawValue) "
                    + "\(decoded.width)x\(decoded.height), \(encoded.count) bytes)")
        }
    }
}
