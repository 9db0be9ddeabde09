import Foundation

/// Turns a decoded image into another: a thumbnail, a crop, upright pixels, rounded corners.
///
/// Set one on `ImageDownloadContext.transformer` and every caller of that context gets the transformed
/// image; its `key` joins the image-cache key, so transformed and plain images are cached apart. Like
/// SDWebImage's `SDImageTransformer` and Nuke's processors. Implementations must be thread-safe.
///
/// ```swift
/// struct Grayscale: ImageTransforming {
///     var key: String { "grayscale" }
///     func transform(_ image: Image) throws -> Image { ... }
/// }
/// context.transformer = ImageTransformer.pipeline([.resize(to: .init(width: 256, height: 256), mode: .fill), Grayscale()])
/// ```
public protocol ImageTransforming: Sendable {
    /// Identifies what the transformer does, parameters included (two transformers with the same key must
    /// give the same result); part of the image-cache key.
    var key: String { get }
    /// The transformed image. Throw to fail the download with `badImageData`.
    func transform(_ image: Image) throws -> Image
    /// The transformed image, with the bitmaps the transformation makes claimed from `budget` before they
    /// are made (`budget` is the downloader's `maximumDecodeMemory`, or nil for none): a claim that can
    /// never fit fails with `badImageData` instead of allocating. The downloader calls this one. The
    /// default calls `transform(_:)` and claims nothing; the built-in `ImageTransformer` claims every
    /// frame it makes and its working buffers.
    func transform(_ image: Image, budget: DecodeMemoryBudget?) throws -> Image
    /// The smallest decode this transformer can start from, for shrink-on-load: the decoder then uses
    /// libjpeg's DCT scaling, libwebp's scaling or PNG's box averaging to produce no more than needed.
    /// nil (the default) decodes at full size.
    var minimumDecodeSize: MinimumDecodeSize? { get }
}

extension ImageTransforming {
    /// Full size.
    public var minimumDecodeSize: MinimumDecodeSize? { nil }

    /// `transform(_:)`, claiming nothing.
    public func transform(_ image: Image, budget: DecodeMemoryBudget?) throws -> Image { try transform(image) }
}

/// How much of an image a transformer needs, as a function of the size the file declares.
public struct MinimumDecodeSize: Sendable, Hashable {
    /// How the decoded size must relate to `size`.
    public enum Coverage: String, Sendable, Hashable {
        /// At least as large as the image scaled to fit inside `size`.
        case fit
        /// At least as large as the image scaled to cover `size`.
        case fill
    }

    /// The box.
    public var size: PixelSize
    /// Fit or cover.
    public var coverage: Coverage

    /// Creates a requirement.
    public init(size: PixelSize, coverage: Coverage) {
        self.size = size
        self.coverage = coverage
    }

    /// The size `original` needs to be decoded at (never larger than `original`).
    public func required(for original: PixelSize) -> PixelSize {
        guard original.width > 0, original.height > 0, size.width > 0, size.height > 0 else { return original }
        let scaleX = Double(size.width) / Double(original.width)
        let scaleY = Double(size.height) / Double(original.height)
        let scale = min(1, coverage == .fit ? min(scaleX, scaleY) : max(scaleX, scaleY))
        return PixelSize(
            width: min(original.width, max(1, Int((Double(original.width) * scale).rounded(.up)))),
            height: min(original.height, max(1, Int((Double(original.height) * scale).rounded(.up)))))
    }
}

extension PixelSize {
    /// The largest side `scaledSide(_:by:)` returns: 2^30, past any image a decoder or a limit lets through.
    public static let largestSide = 1 << 30

    /// `side × factor` rounded half away from zero, as imgproxy (`imath.Scale`) and libvips size a scaled
    /// side; 0 for a side of 0, a negative or NaN product, at most `largestSide`. The proxy's plan and
    /// `ImageTransformer.resize` both size with it, so one box gives the same pixels in `webimage serve` and
    /// `webimage convert`.
    public static func scaledSide(_ side: Int, by factor: Double) -> Int {
        guard side != 0 else { return 0 }
        let product = (Double(side) * factor).rounded()
        guard product > 0 else { return 0 }  // NaN too
        return product >= Double(largestSide) ? largestSide : Int(product)
    }
}

/// An RGBA8 colour (straight alpha), for padding.
public struct ImageColor: Sendable, Hashable, CustomStringConvertible {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8
    public var alpha: UInt8

    /// Creates a colour.
    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        self.red = red
        self.green = green
        self.blue = blue
        self.alpha = alpha
    }

    public static let black = ImageColor(red: 0, green: 0, blue: 0)
    public static let white = ImageColor(red: 255, green: 255, blue: 255)
    public static let clear = ImageColor(red: 0, green: 0, blue: 0, alpha: 0)

    /// "#rrggbbaa".
    public var description: String {
        "#" + [red, green, blue, alpha].map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }
}

/// A rectangle of pixels.
public struct PixelRect: Sendable, Hashable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    /// Creates a rectangle.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

/// How `ImageTransformer.resize(to:mode:)` fits an image to a size.
public enum ResizeMode: Sendable, Hashable {
    /// Scaled, aspect kept, to fit inside the size (one side reaches it).
    case fit
    /// Scaled, aspect kept, to cover the size, then cropped around the centre to exactly the size.
    case fill
    /// Fitted inside the size, then centred on a canvas of exactly the size filled with the colour
    /// (letterboxing).
    case pad(ImageColor)
    /// Scaled, aspect kept, so that the longer side equals the larger of the size's two sides.
    case longestSide
    /// Scaled to exactly the size, each axis on its own: the aspect ratio changes when the size's differs
    /// from the image's (imgproxy's `force`).
    case stretch

    var keyComponent: String {
        switch self {
        case .fit: "fit"
        case .fill: "fill"
        case .pad(let color): "pad\(color)"
        case .longestSide: "longest"
        case .stretch: "stretch"
        }
    }
}

/// Clockwise quarter turns.
public enum ImageRotation: Int, Sendable, Hashable {
    case degrees90 = 90
    case degrees180 = 180
    case degrees270 = 270
}

/// Mirror axes.
public enum FlipDirection: String, Sendable, Hashable {
    /// Left and right swap.
    case horizontal
    /// Top and bottom swap.
    case vertical
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
