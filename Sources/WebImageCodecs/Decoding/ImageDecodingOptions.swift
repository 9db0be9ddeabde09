import Foundation

/// A size in pixels.
public struct PixelSize: Sendable, Hashable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// Creates a size.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// "640×480".
    public var description: String { "\(width)×\(height)" }
}

/// What a decoder does with the colour space a file declares (an ICC profile; PNG's gAMA and cHRM; CMYK).
public enum ImageColorSpace: String, Sendable, Hashable, CaseIterable {
    /// Convert the pixels to sRGB with LittleCMS (the default), so every image's numbers mean the same
    /// colours. `Image.iccProfile` is then nil.
    case sRGB
    /// Keep the pixels as stored and the file's RGB ICC profile on `Image.iccProfile` (for an encoder to
    /// embed). CMYK files are still converted to sRGB (RGBA cannot hold CMYK), and gray profiles, which
    /// do not describe RGBA pixels, are dropped.
    case preserve
}

/// How a decoder turns bytes into an `Image`: size limits, thumbnailing and which frames to decode.
///
/// Declared dimensions are always checked against `maximumImagePixels` before any pixel memory is
/// allocated; a file that declares more is refused with `badImageData`.
///
/// ```swift
/// var options = ImageDecodingOptions()
/// options.thumbnailPixelSize = PixelSize(width: 256, height: 256)
/// let image = try ImageDecoderRegistry.shared.decode(data, options: options)
/// ```
public struct ImageDecodingOptions: Sendable, Hashable {
    // MARK: - Size

    /// Decode to a size that fits inside this one, aspect ratio kept (never enlarged). `nil` by default.
    ///
    /// JPEG uses libjpeg's DCT scaling to the nearest larger size and then averages down; WebP scales
    /// while decoding (`use_scaling`); PNG and GIF decode and then average down.
    public var thumbnailPixelSize: PixelSize?
    /// Decode the file's embedded thumbnail instead of its main image, when it has one: the image and its
    /// original size are the thumbnail's (imgproxy's `enforce_thumbnail`). HEIC only (libheif exposes the
    /// thumbnails); other formats, and a HEIC without one, decode as usual. `false` by default.
    public var prefersEmbeddedThumbnail = false
    /// Decode images whose RGBA pixels would exceed `scaleDownLimitBytes` at a smaller size, aspect kept,
    /// without allocating the full-size bitmap where the format allows. `false` by default.
    ///
    /// JPEG picks the largest DCT scale (1/2, 1/4, 1/8) whose output fits; WebP scales while decoding;
    /// non-interlaced PNG averages boxes of rows while reading. Interlaced PNG and GIF need one
    /// full-size buffer (within `maximumImagePixels`) and are averaged down afterwards. For animations
    /// the limit applies to each frame.
    public var scaleDownLargeImages: Bool
    /// The most bytes of RGBA pixels (4 per pixel) a decode may produce with `scaleDownLargeImages`.
    /// 60 MB (60 × 1024 × 1024) by default, about 15.7 megapixels.
    public var scaleDownLimitBytes: Int
    /// The default `scaleDownLimitBytes` (also `ImageDownloaderConfig`'s).
    public static let defaultScaleDownLimitBytes = 60 * 1024 * 1024
    /// The most pixels a file may declare; larger files are refused with `badImageData` before anything
    /// is allocated. It also bounds the work of an animation: frames are composed on the full canvas, so an
    /// animation stops adding frames once canvas pixels × frames decoded would exceed it (`frameCount`
    /// still tells how many the file holds). 16384 × 16384 by default.
    public var maximumImagePixels: Int
    /// The default `maximumImagePixels` (also `ImageDownloaderConfig`'s).
    public static let defaultMaximumImagePixels = 16_384 * 16_384

    /// Shrink-on-load for a transformer (`ImageTransforming.minimumDecodeSize`): when the image needs no
    /// more than this, JPEG decodes at the smallest DCT scale that still covers it (and keeps that size),
    /// WebP scales to it while decoding, PNG averages boxes down to it, the others average down after
    /// decoding. `thumbnailPixelSize` and scale-down still apply when they ask for less. nil by default.
    public var minimumDecodeSize: MinimumDecodeSize?

    // MARK: - Colour

    /// What happens to the colours of a file that says which colour space it is in. `.sRGB` by default.
    public var colorSpace: ImageColorSpace = .sRGB
    /// The largest ICC profile a decode uses. A larger one is ignored, as browsers ignore oversized
    /// profiles: the pixels are kept as stored and a warning is logged (label `WebImage.ColorManagement`).
    /// Real profiles are a few kilobytes, large LUT-based ones under 1 MB. 4 MiB by default.
    public var maximumColorProfileBytes: Int = defaultMaximumColorProfileBytes
    /// The default `maximumColorProfileBytes` (also `ImageDownloaderConfig`'s).
    public static let defaultMaximumColorProfileBytes = 4 << 20

    // MARK: - Orientation

    /// Keep the pixels as stored instead of turning them upright. `false` by default.
    ///
    /// By default a decoder applies the orientation the file declares, as browsers and SDWebImage show
    /// images: the EXIF orientation tag (JPEG, WebP, PNG's `eXIf`), else XMP's `tiff:Orientation`, AVIF's
    /// and HEIC's `irot` and `imir`, JPEG XL's header. The image is then upright, its sizes are the upright ones, and
    /// `Image.exifOrientation` is 1. With `true` the frames are as stored, `exifOrientation` is the file's
    /// orientation, and `ImageTransformer.applyOrientation` turns them later. Either way
    /// `Image.fileOrientation` tells what the file declares, and `thumbnailPixelSize` and
    /// `minimumDecodeSize` describe the image as delivered.
    public var preserveOrientation: Bool = false
    /// Keep 16 bits a channel where the file has them: a 16-bit PNG decoded at its full size (no
    /// shrink-on-load, no `thumbnailPixelSize` or scale-down reduction) gets `ImageFrame.deepPixels` beside its
    /// 8-bit `pixels`, converted to sRGB at 16 bits when `colorSpace` asks for sRGB. Other formats and
    /// depths decode as without it. `false` by default: the frames then take 4 bytes a pixel, not 12.
    public var keepsSixteenBits: Bool = false
    /// Keep the file's EXIF block in `Image.exif` (JPEG, PNG and WebP files; at most
    /// `EXIFMetadata.maximumBytes`). `false` by default.
    public var keepsEXIF: Bool = false

    // MARK: - Memory

    /// The budget this decode claims its pixel memory from, shared with other decodes (see
    /// `DecodeMemoryBudget`). `nil` (no budget) by default; the downloader sets its own, sized by
    /// `ImageDownloaderConfig.maximumDecodeMemory`. Not part of equality or hashing: options that differ
    /// only in their budget decode to the same image.
    public var memoryBudget: DecodeMemoryBudget?
    /// Whether a claim on `memoryBudget` waits for room; progressive decodes do not wait.
    var waitsForMemory = true

    // MARK: - Frames

    /// Decode only the first frame of an animation (GIF, WebP). `false` by default.
    ///
    /// `Image.frameCount` still tells how many frames the file holds.
    public var decodeFirstFrameOnly: Bool
    /// Decode every frame of an animation up front. `false` by default.
    ///
    /// On Linux there is no lazily decoding image source: every frame of an animation is decoded eagerly
    /// unless `decodeFirstFrameOnly` is set, with or without this flag. It is accepted (and takes part in
    /// equality, so callers with and without it are decoded separately) to keep SDWebImage's option set.
    public var preloadAllFrames: Bool
    /// The most frames of an animation a decode keeps; later frames are not decoded (`frameCount` still
    /// tells how many the file holds). Each frame costs bookkeeping beside its pixels, so a file of
    /// millions of tiny frames would otherwise take memory out of all proportion to its pixels.
    /// 10,000 by default.
    public var maximumAnimationFrames: Int = defaultMaximumAnimationFrames
    /// The default `maximumAnimationFrames` (also `ImageDownloaderConfig`'s).
    public static let defaultMaximumAnimationFrames = 10_000

    /// Creates options; every parameter has the default its property documents.
    public init(
        thumbnailPixelSize: PixelSize? = nil, scaleDownLargeImages: Bool = false,
        scaleDownLimitBytes: Int = defaultScaleDownLimitBytes, maximumImagePixels: Int = defaultMaximumImagePixels,
        decodeFirstFrameOnly: Bool = false, preloadAllFrames: Bool = false
    ) {
        self.thumbnailPixelSize = thumbnailPixelSize
        self.scaleDownLargeImages = scaleDownLargeImages
        self.scaleDownLimitBytes = scaleDownLimitBytes
        self.maximumImagePixels = maximumImagePixels
        self.decodeFirstFrameOnly = decodeFirstFrameOnly
        self.preloadAllFrames = preloadAllFrames
    }

    /// Full size, all frames, default limits.
    public static let `default` = ImageDecodingOptions()

    /// Equal when every option that shapes the decoded image is equal (the budget does not).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.thumbnailPixelSize == rhs.thumbnailPixelSize && lhs.scaleDownLargeImages == rhs.scaleDownLargeImages
            && lhs.scaleDownLimitBytes == rhs.scaleDownLimitBytes && lhs.maximumImagePixels == rhs.maximumImagePixels
            && lhs.decodeFirstFrameOnly == rhs.decodeFirstFrameOnly && lhs.preloadAllFrames == rhs.preloadAllFrames
            && lhs.colorSpace == rhs.colorSpace && lhs.minimumDecodeSize == rhs.minimumDecodeSize
            && lhs.maximumColorProfileBytes == rhs.maximumColorProfileBytes
            && lhs.maximumAnimationFrames == rhs.maximumAnimationFrames
            && lhs.preserveOrientation == rhs.preserveOrientation && lhs.keepsSixteenBits == rhs.keepsSixteenBits
            && lhs.keepsEXIF == rhs.keepsEXIF
    }

    /// Hashes the options `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(thumbnailPixelSize)
        hasher.combine(scaleDownLargeImages)
        hasher.combine(scaleDownLimitBytes)
        hasher.combine(maximumImagePixels)
        hasher.combine(decodeFirstFrameOnly)
        hasher.combine(preloadAllFrames)
        hasher.combine(colorSpace)
        hasher.combine(minimumDecodeSize)
        hasher.combine(maximumColorProfileBytes)
        hasher.combine(maximumAnimationFrames)
        hasher.combine(preserveOrientation)
        hasher.combine(keepsSixteenBits)
        hasher.combine(keepsEXIF)
    }

    /// These options for a progressive decode: a claim on the budget that does not fit fails at once.
    var forPartialDecode: Self {
        var options = self
        options.waitsForMemory = false
        return options
    }
}
