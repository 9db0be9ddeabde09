import Foundation
import WebImageCodecs

/// The transformer that runs one request's `ResizePlan` inside the downloader's processing stage, where
/// the source's size is first known: the source's checks, upright per EXIF, `trim` (the plan follows the
/// trimmed size), then the plan, with smart gravity placed on the pixels (`ProxyTransformer+SmartGravity`).
///
/// Background (extension, padding) is transparent, as imgproxy's is before it flattens: formats with
/// alpha keep it, and the JPEG encoder flattens it onto white, imgproxy's default `background`. When the
/// format is JPEG-or-PNG by the result's alpha (`FormatChoice.jpegOrPNG`), an opaque source gets white
/// background, so the result stays a JPEG as imgproxy keeps a JPEG source's format. A `background` option
/// fills extension and padding with its colour and the result is flattened onto it (`EffectOptions`).
///
/// An animation (for a format that keeps one, `keepsAnimation`) goes through the same steps: each
/// `ImageTransformer` step maps over every frame, so all frames are cropped, resized and placed alike, and
/// their durations and the loop count ride along. Every frame must have been decoded: a source whose
/// frames the decoder cut short (its pixels or memory over the limits) is refused, never served shorter.
struct ProxyTransformer: ImageTransforming {
    /// What shows where the canvas is larger than the image.
    enum Background: String, Sendable {
        /// Transparent: the encoder keeps or flattens it.
        case transparent
        /// White for an opaque source, transparent for one with alpha.
        case whiteUnlessAlpha
    }

    let options: ProcessingOptions
    /// The largest side a result may have (`ImageProxyConfiguration.maximumResultDimension`).
    var maximumDimension = ProcessingOptions.largestScaledSide
    var background = Background.transparent
    /// The most animation frames the source may have (`ImageProxyConfiguration.maximumAnimationFrames`).
    var maximumAnimationFrames = Int.max
    /// Whether the result keeps an animation (`FormatChoice.animates`): then the source was decoded with
    /// every frame, and all of them must be there.
    var keepsAnimation = false
    /// The server's watermark, when `options` asks for one (`ImageProxyConfiguration.watermark`).
    var watermark: ProxyWatermark?

    var key: String {
        "proxy(\(options.canonical);max=\(maximumDimension);bg=\(background.rawValue);frames=\(maximumAnimationFrames)"
            + (keepsAnimation ? ";animated" : "") + (watermark.map { ";wm=\($0.identity)" } ?? "") + ")"
    }

    /// A source whose file ended early: it still decodes, to the rows that arrived, but served it would be
    /// mostly blank and cached for as long as `Cache-Control` says.
    static let truncated = ProxyError(status: 422, "the source image is truncated")
    static let tooManyFrames = ProxyError(status: 422, "the source has more animation frames than allowed")
    static let animationTooLarge = ProxyError(
        status: 422, "the source's animation has more pixels than this server processes for one image")

    func transform(_ image: Image) throws -> Image {
        try transform(image, budget: nil)
    }

    func transform(_ image: Image, budget: DecodeMemoryBudget?) throws -> Image {
        // Refused here, before anything is encoded: the downloader stores what it encodes in the result
        // cache, and a refused source must never become a stored result.
        guard image.frameCount <= maximumAnimationFrames else { throw Self.tooManyFrames }
        guard !image.isPartial else { throw Self.truncated }
        guard !keepsAnimation || image.frames.count >= image.frameCount else { throw Self.animationTooLarge }
        try checkLimits(image)
        // Decoders deliver upright frames; `fileOrientation` says what they turned.
        var current = try ImageTransformer.applyOrientation.transform(image, budget: budget)
        // The plan follows the source's own size, upright, not the (possibly shrunk-on-load) decoded one, so
        // a result never depends on how the decoder scaled.
        var upright = PixelSize(width: image.originalWidth, height: image.originalHeight)
        if (5...8).contains(image.exifOrientation) { swap(&upright.width, &upright.height) }  // turned just now
        let quarterTurned = (5...8).contains(image.fileOrientation)
        current = try ImageTrim.trimmed(
            current, options.trim, source: &upright, quarterTurned: quarterTurned, budget: budget)
        var options = options
        func makePlan() -> ResizePlan {
            ResizePlan.make(
                options: options, source: upright, quarterTurned: quarterTurned, maximumDimension: maximumDimension)
        }
        var plan = makePlan()
        var steps: [ImageTransformer] = []
        if !options.autoRotate { steps.append(.storedOrientation) }
        if let rotation = ImageRotation(rawValue: options.rotation) { steps.append(.rotate(rotation)) }
        steps += Self.flipSteps(options.effects)
        for step in steps { current = try step.transform(current, budget: budget) }

        if Self.placeSmartCrop(&options, plan: plan, in: current) { plan = makePlan() }
        if let crop = plan.crop {
            current = try ImageTransformer.crop(Self.decoded(crop, of: plan.source, in: current))
                .transform(current, budget: budget)
        }
        if Self.placeSmartResultCrop(&options, plan: plan, in: current) { plan = makePlan() }
        let whole = PixelRect(x: 0, y: 0, width: plan.scaled.width, height: plan.scaled.height)
        if plan.scaled != PixelSize(width: current.width, height: current.height) || plan.kept != whole {
            current = try ImageTransformer.resize(to: plan.scaled, keeping: plan.kept).transform(
                current, budget: budget)
        }
        current = try Self.filtered(current, options.effects, budget: budget)
        if !plan.coversCanvas {
            let color =
                options.effects.background
                ?? (background == .whiteUnlessAlpha && !current.hasAlpha ? ImageColor.white : .clear)
            current = try ImageTransformer.place(on: plan.size, x: plan.origin.x, y: plan.origin.y, color: color)
                .transform(current, budget: budget)
        }
        current = try Self.flattened(current, options.effects, budget: budget)
        try watermark?.draw(options.watermark, on: &current, dprScale: plan.dprScale, budget: budget)
        current.exif = Self.resultEXIF(image.exif, options)
        return current
    }

    /// Whether results of `choice` carry EXIF: JPEG, PNG and still WebP results do (their encoders write
    /// `Image.exif`); AVIF, JPEG XL and GIF results carry none.
    static func writesEXIF(_ choice: FormatChoice) -> Bool {
        switch choice {
        case .explicit(let format), .negotiated(let format): [.jpeg, .png, .webp].contains(format)
        case .jpegOrPNG: true
        }
    }

    /// The EXIF a result carries, from the source's: all of it with `strip_metadata:0` (its orientation set
    /// to 1, as imgproxy removes it: the pixels are turned already, or were asked not to be), else only the
    /// artist and copyright with `keep_copyright` (imgproxy's default), else none.
    static func resultEXIF(_ source: Data?, _ options: ProcessingOptions) -> Data? {
        guard let source else { return nil }
        if !options.stripMetadata { return EXIFMetadata.upright(source) }
        return options.keepCopyright ? EXIFMetadata.copyright(source) : nil
    }

    /// `rect` in `source` pixels, in the pixels of `image` (the same unless the decoder shrank it).
    static func decoded(_ rect: PixelRect, of source: PixelSize, in image: Image) -> PixelRect {
        guard image.width != source.width || image.height != source.height else { return rect }
        let x = Double(image.width) / Double(source.width)
        let y = Double(image.height) / Double(source.height)
        let left = Int((Double(rect.x) * x).rounded(.down))
        let top = Int((Double(rect.y) * y).rounded(.down))
        return PixelRect(
            x: left, y: top, width: max(1, Int((Double(rect.width) * x).rounded())),
            height: max(1, Int((Double(rect.height) * y).rounded())))
    }

    /// Shrink-on-load: the decoder (libjpeg's DCT scaling, libwebp's scaling, PNG's box averaging) needs to
    /// produce no more than covers the result. One side alone needs that side; `fit` needs the image to fit
    /// the box; every other type (fill, fill-down, force, auto) needs it to cover the box. A crop, a zoom, a
    /// minimum side, `trim` or `auto_rotate:0` decode at full size: their scale is not one of the box's.
    var minimumDecodeSize: MinimumDecodeSize? {
        // Trim needs every pixel, as imgproxy's does, and the plan then follows the trimmed size.
        guard options.crop == nil, !options.trim.isEnabled, options.zoomWidth == 1, options.zoomHeight == 1,
            options.minWidth == 0, options.minHeight == 0, options.autoRotate
        else { return nil }
        var width = options.scaledWidth
        var height = options.scaledHeight
        guard width > 0 || height > 0 else { return nil }
        // The box is for the turned frames; a quarter `rotate` comes after the decode.
        if options.rotation % 180 == 90 { swap(&width, &height) }
        let unbounded = 1 << 24
        let box = PixelSize(
            width: width > 0 ? min(width, unbounded) : unbounded,
            height: height > 0 ? min(height, unbounded) : unbounded)
        let fits = width == 0 || height == 0 || options.resizeType == .fit
        return MinimumDecodeSize(size: box, coverage: fits ? .fit : .fill)
    }
}
