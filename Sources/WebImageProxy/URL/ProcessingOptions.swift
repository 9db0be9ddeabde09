import WebImageCodecs

/// How the proxy fits the source image to the requested size: imgproxy's resizing types.
///
/// Each maps onto `ImageTransformer.resize(to:mode:)` once the source's size is known (see `ResizePlan`):
///
/// - `fit`: keeps the aspect ratio and fits inside `width`×`height` → `ResizeMode.fit`, to the box.
/// - `fill`: keeps the aspect ratio, covers `width`×`height` and crops what projects, around the centre →
///   `ResizeMode.fill`, to the box. Without `enlarge`, a source smaller than the box is not scaled up: the
///   box is shrunk to what the source covers (each side at most the source's), so the result is smaller
///   than asked and may have another aspect ratio.
/// - `fillDown` (`fill-down`): as `fill`, but when the source is too small the box is shrunk keeping the
///   requested aspect ratio (the largest box of that ratio inside the source) → `ResizeMode.fill`.
/// - `force`: ignores the aspect ratio, each side scaled on its own → `ResizeMode.stretch`. A side of 0
///   keeps the source's. Without `enlarge` neither side grows: when one would, both are scaled down by the
///   same factor, so the requested (distorted) aspect ratio is kept.
/// - `auto`: `fill` when the source and the box have the same orientation (both portrait or both
///   landscape; a square counts as either), otherwise `fit`. With a side of 0 there is no box orientation,
///   and `auto` is `fit`.
///
/// With one side 0 (`fit`, `fill`, `fill-down`, `auto`), the other is computed from the source's aspect
/// ratio, which is `ResizeMode.fit` to that side alone. With both 0 the image keeps its size.
public enum ResizeType: String, Sendable, Hashable, CaseIterable {
    /// Fit inside the box, aspect ratio kept.
    case fit
    /// Cover the box, aspect ratio kept, the rest cropped around the centre.
    case fill
    /// `fill`, keeping the requested aspect ratio when the source is too small.
    case fillDown = "fill-down"
    /// Exactly the box, aspect ratio not kept.
    case force
    /// `fill` when orientations match, otherwise `fit`.
    case auto
}

/// An output format the proxy can write.
public enum ProxyOutputFormat: String, Sendable, Hashable, CaseIterable {
    /// JPEG (libjpeg-turbo).
    case jpeg
    /// PNG (libpng).
    case png
    /// WebP (libwebp).
    case webp
    /// AVIF (libavif, when it was built with an AV1 encoder).
    case avif

    /// The format named by an imgproxy extension or `f:` value: `jpg`, `jpeg`, `png`, `webp`, `avif`.
    public init?(extension name: String) {
        switch name.lowercased() {
        case "jpg", "jpeg": self = .jpeg
        case "png": self = .png
        case "webp": self = .webp
        case "avif": self = .avif
        default: return nil
        }
    }

    /// The exact `Content-Type` of the format.
    public var mimeType: String { "image/\(rawValue)" }

    /// The codecs' format.
    public var imageFormat: ImageFormat {
        switch self {
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .avif: .avif
        }
    }
}

/// The processing options of one proxy URL, after parsing: what the image becomes.
///
/// `canonical` spells them in one fixed order with defaults filled in, so two URLs that ask for the same
/// thing in different words (`w:100/h:50` and `rs:fit:100:50:0`) share ETags.
public struct ProcessingOptions: Sendable, Hashable {
    /// How the image fits the box. `.fit` by default.
    public var resizeType: ResizeType = .fit
    /// The box's width in pixels before `dpr`; 0 means "from the height and the aspect ratio". `0` by default.
    public var width = 0
    /// The box's height in pixels before `dpr`; 0 means "from the width and the aspect ratio". `0` by default.
    public var height = 0
    /// Whether an image smaller than the box may be scaled up. `false` by default.
    public var enlarge = false
    /// The encoder's quality, 1…100; nil uses each format's default. nil by default.
    public var quality: Int?
    /// The output format from `f:` or the URL's extension; nil negotiates from `Accept`. nil by default.
    public var format: ProxyOutputFormat?
    /// The multiplier of `width` and `height` for high-density screens, greater than 0. `1` by default.
    public var dpr: Double = 1

    /// Creates the default options: no resize, negotiated format.
    public init() {}

    /// The largest side `scaledWidth` and `scaledHeight` report: a box larger than that asks for more than any
    /// result limit allows, so larger products stop here instead of overflowing `Int`. 2^30.
    public static let largestScaledSide = 1 << 30

    /// The box after `dpr`, rounded to whole pixels, at most `largestScaledSide`.
    public var scaledWidth: Int { Self.scaled(width, by: dpr) }
    /// The box's height after `dpr`, rounded to whole pixels, at most `largestScaledSide`.
    public var scaledHeight: Int { Self.scaled(height, by: dpr) }

    /// `side × dpr` rounded, saturating at `largestScaledSide`; 0 for a negative, NaN or zero product. The
    /// parser keeps sides at 0 or more and `dpr` in (0, 8], but a library user may set any value.
    static func scaled(_ side: Int, by dpr: Double) -> Int {
        let product = (Double(side) * dpr).rounded()
        guard product > 0 else { return 0 }  // NaN and -infinity too
        return product >= Double(largestScaledSide) ? largestScaledSide : Int(product)
    }

    /// The options in one fixed spelling, e.g. `rs:fill:300:200:0/q:80/dpr:2/g:ce` (format excluded:
    /// the ETag adds the format actually sent).
    public var canonical: String {
        var parts = ["rs:\(resizeType.rawValue):\(width):\(height):\(enlarge ? 1 : 0)"]
        if let quality { parts.append("q:\(quality)") }
        if dpr != 1 { parts.append("dpr:\(dpr)") }
        parts.append("g:ce")
        return parts.joined(separator: "/")
    }
}
