import ArgumentParser
import Foundation
import WebImage

/// `--fit`, `--format` and `--quality`: how `get -o` and `convert` shape and encode the images they
/// write. Shared through `@OptionGroup`.
struct ImageOutputOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "With --thumbnail WxH: resize with Lanczos to the box: fit (inside), fill (cover, then centre crop), "
                + "pad (letterbox, transparent or white for JPEG), longest (longer side = the box's).",
            valueName: "mode"))
    var fit: FitMode?

    @Option(help: ArgumentHelp("Encode the written images as jpeg, webp, png, apng or avif.", valueName: "format"))
    var format: OutputFormat?

    @Option(help: ArgumentHelp("Quality of --format jpeg, webp or avif (1…100).", valueName: "q"))
    var quality: Int?

    @Flag(help: "With --format webp: lossless.")
    var lossless = false

    /// Checks the combination; `impliedFormat` is the format the command infers when `--format` is absent
    /// (convert's output name).
    func check(thumbnail: PixelSize?, impliedFormat: OutputFormat? = nil) throws {
        let format = self.format ?? impliedFormat
        if let quality, !(1...100).contains(quality) {
            throw ValidationError("--quality must be between 1 and 100, got \(quality).")
        }
        if quality != nil, format == nil || format == .png || format == .apng {
            throw ValidationError("--quality needs --format jpeg, webp or avif.")
        }
        if lossless && format != .webp { throw ValidationError("--lossless needs --format webp.") }
        if fit != nil && thumbnail == nil { throw ValidationError("--fit needs --thumbnail WxH.") }
    }

    /// The resize `--fit` asks for, to the `--thumbnail` box.
    func transformer(thumbnail: PixelSize?) -> ImageTransformer? {
        guard let fit, let thumbnail else { return nil }
        return fit.transformer(box: thumbnail, padFor: format)
    }

    /// The encoder for `--format` with `--quality` / `--lossless`.
    var encoder: (any ImageEncoding)? {
        format?.encoder(quality: quality, lossless: lossless)
    }
}

/// `--fit` values (and `bulk --resize-mode`).
enum FitMode: String, CaseIterable, ExpressibleByArgument {
    case fit, fill, pad, longest

    /// The Lanczos resize to `box`; padding is white for JPEG output (no alpha), transparent otherwise.
    func transformer(box: PixelSize, padFor format: OutputFormat?) -> ImageTransformer {
        let mode: ResizeMode =
            switch self {
            case .fit: .fit
            case .fill: .fill
            case .pad: .pad(format == .jpeg ? .white : .clear)
            case .longest: .longestSide
            }
        return .resize(to: box, mode: mode)
    }
}

/// `--format` values: the formats WebImage encodes.
enum OutputFormat: String, CaseIterable, ExpressibleByArgument {
    case jpeg, webp, png, avif
    /// Animated PNG: every frame of an animation (a still image is written as a plain PNG).
    case apng

    /// "jpeg, webp, png, avif, apng": the names `--format` takes, for help texts.
    static var list: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// The file extension (an APNG is a `.png` file).
    var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .apng: "png"
        default: rawValue
        }
    }

    /// The encoder with its defaults: JPEG 85, WebP 80 (lossless: effort 100), AVIF 60.
    func encoder(quality: Int?, lossless: Bool = false) -> any ImageEncoding {
        switch self {
        case .jpeg: JPEGEncoder(quality: quality ?? 85)
        case .webp: WebPEncoder(quality: quality ?? (lossless ? 100 : 80), lossless: lossless)
        case .png: PNGEncoder()
        case .avif: AVIFEncoder(quality: quality ?? 60)
        case .apng: APNGEncoder()
        }
    }

    /// The format a file name's extension names, if it is one of these.
    init?(pathExtension: String) {
        switch pathExtension.lowercased() {
        case "jpg", "jpeg": self = .jpeg
        case "webp": self = .webp
        case "png": self = .png
        case "avif": self = .avif
        case "apng": self = .apng
        default: return nil
        }
    }
}
