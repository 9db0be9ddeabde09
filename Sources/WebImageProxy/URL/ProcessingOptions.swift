import Foundation
import WebImageCodecs

/// How the proxy fits the source image to the requested size: imgproxy's resizing types, with its arithmetic
/// (`ResizePlan` computes it; the numbers are imgproxy's, `processing/prepare.go`).
///
/// - `fit`: keeps the aspect ratio and fits inside `width`×`height`.
/// - `fill`: keeps the aspect ratio, covers `width`×`height` and crops what projects, around `gravity`.
///   Without `enlarge` a source smaller than the box is not scaled up, and the crop keeps what it has of
///   the box (each side at most the box's).
/// - `fillDown` (`fill-down`): as `fill`, but when the source is too small the crop keeps the requested
///   aspect ratio (the largest box of that ratio inside the scaled image).
/// - `force`: ignores the aspect ratio, each side scaled on its own; a side of 0 keeps the source's.
///   Without `enlarge` neither side grows: both shrink factors are divided by the smaller one.
/// - `auto`: `fill` when the source and the box have the same orientation (a side difference of 0 counts as
///   landscape), otherwise `fit`.
///
/// With one side 0 (all but `force`), the other follows the aspect ratio. With both 0 the image keeps its
/// size (before `zoom`, `dpr` and `min-width`/`min-height`).
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
///
/// WebP, GIF and JPEG XL keep an animated source's animation (every frame processed alike, with its delay
/// and the loop count); JPEG, PNG and AVIF get its first frame, as imgproxy gives them (imgproxy animates
/// GIF and WebP results only; its PNG results are never APNG).
public enum ProxyOutputFormat: String, Sendable, Hashable, CaseIterable {
    /// JPEG (libjpeg-turbo).
    case jpeg
    /// PNG (libpng).
    case png
    /// WebP (libwebp).
    case webp
    /// AVIF (libavif, when it was built with an AV1 encoder).
    case avif
    /// GIF (giflib; at most 256 colours a frame, see `GIFEncoder`). Only when the URL names it: `Accept`
    /// never chooses it.
    case gif
    /// JPEG XL (libjxl). Only when the URL names it: `Accept` never chooses it, as imgproxy's
    /// `IMGPROXY_ENABLE_JXL_DETECTION` is off by default.
    case jxl

    /// The format named by an imgproxy extension or `f:` value: `jpg`, `jpeg`, `png`, `webp`, `avif`, `gif`,
    /// `jxl`.
    public init?(extension name: String) {
        switch name.lowercased() {
        case "jpg", "jpeg": self = .jpeg
        case "png": self = .png
        case "webp": self = .webp
        case "avif": self = .avif
        case "gif": self = .gif
        case "jxl": self = .jxl
        default: return nil
        }
    }

    /// The names `init(extension:)` takes, for error messages.
    static let names = "jpg, png, webp, avif, gif or jxl"

    /// The exact `Content-Type` of the format.
    public var mimeType: String { "image/\(rawValue)" }

    /// Whether a result in this format keeps an animated source's frames.
    public var animates: Bool {
        switch self {
        case .webp, .gif, .jxl: true
        case .jpeg, .png, .avif: false
        }
    }

    /// The codecs' format.
    public var imageFormat: ImageFormat {
        switch self {
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .avif: .avif
        case .gif: .gif
        case .jxl: .jxl
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
    /// The smallest width the result is scaled to, even past `width` (the excess is cropped by `fill`),
    /// before `dpr`; 0 for none. `0` by default.
    public var minWidth = 0
    /// The smallest height the result is scaled to, before `dpr`; 0 for none. `0` by default.
    public var minHeight = 0
    /// The multiplier of the width after the resize (`zoom`), greater than 0. `1` by default.
    public var zoomWidth: Double = 1
    /// The multiplier of the height after the resize (`zoom`), greater than 0. `1` by default.
    public var zoomHeight: Double = 1
    /// Where `fill` and `fill-down` crop, and `crop` when it has no gravity of its own. Centre by default.
    public var gravity = Gravity()
    /// `extend`: the result enlarged to `width`×`height` with background. Off by default.
    public var extend = ExtendOption()
    /// `extend_aspect_ratio`: the result enlarged to the aspect ratio of `width`×`height`. Off by default.
    public var extendAspectRatio = ExtendOption()
    /// `crop`: the part of the (upright, rotated) source kept before the resize. nil by default.
    public var crop: CropOption?
    /// `padding`: background around the result, in pixels before `dpr`. None by default.
    public var padding = PaddingOption()
    /// Whether the source is turned upright by its EXIF orientation (`auto_rotate`). `true` by default, as
    /// imgproxy's `IMGPROXY_AUTO_ROTATE` is.
    public var autoRotate = true
    /// The clockwise turn after orientation (`rotate`): 0, 90, 180 or 270. `0` by default.
    public var rotation = 0
    /// `background`, `blur`, `sharpen`, `pixelate` and `flip`. None by default.
    public var effects = EffectOptions()
    /// `watermark`: the server's watermark over the result. None (opacity 0) by default.
    public var watermark = WatermarkOption()
    /// `trim`: the background around the image cut off first. Off by default.
    public var trim = TrimOption()
    /// `msr`, `msfs`, `maf`, `mafr` and `mrd`: the URL's own bounds under the server's. None by default.
    public var limits = LimitOptions()

    // MARK: Output

    /// The quality per output format (`format_quality`), used when `quality` is nil. Empty by default.
    public var formatQuality: [ProxyOutputFormat: Int] = [:]
    /// The most bytes a JPEG, WebP or AVIF result should have (`max_bytes`): it is encoded again at lower
    /// quality until it fits or the quality is 10 or less, as imgproxy does; 0 for no limit. `0` by default.
    public var maximumBytes = 0
    /// `strip_metadata`: false writes the source's EXIF (JPEG, PNG and WebP sources) into a JPEG, PNG or still
    /// WebP result, its orientation set to 1, as imgproxy keeps metadata and drops the orientation. XMP and
    /// IPTC are not carried. `true` by default, as imgproxy's `IMGPROXY_STRIP_METADATA` is.
    public var stripMetadata = true
    /// `keep_copyright`: when metadata is stripped, the source's EXIF artist and copyright are still written
    /// (in a new EXIF block of those two fields), as imgproxy keeps the copyright fields. `true` by default,
    /// as imgproxy's `IMGPROXY_KEEP_COPYRIGHT` is.
    public var keepCopyright = true
    /// `strip_color_profile`: true converts the pixels to sRGB and writes no ICC profile; false keeps the
    /// source's RGB profile and embeds it in the result. `true` by default, as imgproxy's
    /// `IMGPROXY_STRIP_COLOR_PROFILE` is.
    public var stripColorProfile = true
    /// `enforce_thumbnail`: a HEIC source with an embedded thumbnail is processed from that thumbnail, as if
    /// the file held only it (its size is the source size), as imgproxy does; other sources, and a HEIC
    /// without one, are processed from their main image. (imgproxy also reads AVIF's; libavif 0.11 exposes
    /// none.) `false` by default.
    public var enforceThumbnail = false
    /// `preserve_hdr`: a source with more than 8 bits a channel keeps them where the result's format can. Here
    /// that is a 16-bit PNG source and a PNG result: decoded at 16 bits, cropped, turned, resized, extended
    /// and padded at 16 bits, and written as a 16-bit PNG, as imgproxy keeps such a source RGB16. The
    /// effects (blur, sharpen, pixelate, background flattening, watermark) and trim's colour checks work at
    /// 8 bits; after an effect the result is 8 bits. Other formats and sources are 8 bits either way (JPEG,
    /// WebP and GIF results are 8 bits in imgproxy too; imgproxy also keeps AVIF, JPEG XL and TIFF deep).
    /// `false` by default, as imgproxy's `IMGPROXY_PRESERVE_HDR` is.
    public var preserveHDR = false
    /// Source formats answered with the source's bytes, unprocessed (`skip_processing`). Empty by default.
    public var skipProcessing: Set<ImageFormat> = []
    /// `raw`: the source's bytes answered unprocessed whatever their format (the source's size, pixel and
    /// frame limits still hold, unlike imgproxy's raw streaming). `false` by default.
    public var raw = false

    // MARK: Request

    /// `cachebuster`: no effect on the image, but part of the ETag and the result cache's key, so a new
    /// value asks for a new result. Empty by default.
    public var cacheBuster = ""
    /// `expires`: a Unix time after which the URL is answered 404; 0 or less for never. `0` by default.
    public var expires: Int64 = 0
    /// `filename`: the name in `Content-Disposition` without extension; empty takes the source URL's last
    /// path segment without its extension (`image` when it has none). Empty by default.
    public var filename = ""
    /// `return_attachment`: `Content-Disposition: attachment` instead of `inline`. `false` by default.
    public var returnAttachment = false
    /// The presets applied (`preset`), in order, the `default` preset first when there is one. Empty by
    /// default.
    public var presets: [String] = []

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

    /// The output and request options that are not at their defaults, in one fixed spelling. Presets are
    /// spelled by what they set, not by name; `expires` changes no result.
    private var outputCanonical: [String] {
        var parts: [String] = []
        for format in ProxyOutputFormat.allCases {
            if let quality = formatQuality[format] { parts.append("fq:\(format.rawValue):\(quality)") }
        }
        if maximumBytes != 0 { parts.append("mb:\(maximumBytes)") }
        if !stripMetadata { parts.append("sm:0") }
        if !keepCopyright { parts.append("kcr:0") }
        if !stripColorProfile { parts.append("scp:0") }
        if enforceThumbnail { parts.append("eth:1") }
        if !skipProcessing.isEmpty {
            parts.append("skp:" + skipProcessing.map(\.rawValue).sorted().joined(separator: ":"))
        }
        if raw { parts.append("raw:1") }
        if preserveHDR { parts.append("ph:1") }
        // Free text is Base64: a `/` or `:` in it cannot make two options spell the same.
        if !cacheBuster.isEmpty { parts.append("cb:" + Data(cacheBuster.utf8).base64EncodedString()) }
        if !filename.isEmpty { parts.append("fn:" + Data(filename.utf8).base64EncodedString()) }
        if returnAttachment { parts.append("att:1") }
        return parts
    }

    /// The options in one fixed spelling, e.g. `rs:fill:300:200:0/q:80/dpr:2/g:ce` (format excluded:
    /// the ETag adds the format actually sent). Geometry options at their defaults are left out, so the
    /// spelling of a URL without them is what it was before they existed.
    public var canonical: String {
        var parts = ["rs:\(resizeType.rawValue):\(width):\(height):\(enlarge ? 1 : 0)"]
        if let quality { parts.append("q:\(quality)") }
        if dpr != 1 { parts.append("dpr:\(dpr)") }
        if minWidth != 0 { parts.append("mw:\(minWidth)") }
        if minHeight != 0 { parts.append("mh:\(minHeight)") }
        if zoomWidth != 1 || zoomHeight != 1 { parts.append("z:\(zoomWidth):\(zoomHeight)") }
        if extend.enabled { parts.append("ex:1:\(extend.gravity.canonical)") }
        if extendAspectRatio.enabled { parts.append("exar:1:\(extendAspectRatio.gravity.canonical)") }
        if let crop { parts.append("c:\(crop.width):\(crop.height)" + (crop.gravity.map { ":\($0.canonical)" } ?? "")) }
        if padding.isEnabled {
            parts.append("pd:\(padding.top):\(padding.right):\(padding.bottom):\(padding.left)")
        }
        if !autoRotate { parts.append("ar:0") }
        if rotation != 0 { parts.append("rot:\(rotation)") }
        if let trim = trim.canonical { parts.append(trim) }
        parts.append("g:\(gravity.canonical)")
        parts += effects.canonical
        if watermark.isEnabled { parts.append(watermark.canonical) }
        parts += outputCanonical
        parts += limits.canonical
        return parts.joined(separator: "/")
    }
}
