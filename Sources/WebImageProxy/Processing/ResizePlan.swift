import WebImageCodecs

/// What one request's resize does to a source of a given size: the `ImageTransformer.resize(to:mode:)`
/// call, or none. `ResizeType` documents the rules; this is their arithmetic.
///
/// ```swift
/// let plan = ResizePlan.make(options: options, source: PixelSize(width: 600, height: 400))
/// plan?.size   // PixelSize(width: 300, height: 200), say
/// ```
public struct ResizePlan: Sendable, Hashable {
    /// The size handed to `ImageTransformer.resize(to:mode:)`.
    public var size: PixelSize
    /// The mode handed to `ImageTransformer.resize(to:mode:)`.
    public var mode: ResizeMode

    /// Creates a plan.
    public init(size: PixelSize, mode: ResizeMode) {
        self.size = size
        self.mode = mode
    }

    /// The plan for `options` (after `dpr`) on a source of `source` pixels; nil when the image keeps its size.
    ///
    /// No side of the result passes `maximumDimension` (imgproxy's `MAX_RESULT_DIMENSION`): a result that
    /// would is scaled down as a whole, its aspect ratio kept, so the larger side is the limit. That holds
    /// for an image that keeps its size too. The arithmetic is in `Double` and saturates, so any option
    /// values and source size give a plan, never an overflow.
    public static func make(
        options: ProcessingOptions, source: PixelSize, maximumDimension: Int = ProcessingOptions.largestScaledSide
    ) -> ResizePlan? {
        guard source.width > 0, source.height > 0 else { return nil }
        let limit = Double(max(1, min(maximumDimension, ProcessingOptions.largestScaledSide)))
        guard let (width, height, mode) = unlimited(options: options, source: source) else {
            guard Double(max(source.width, source.height)) > limit else { return nil }
            let fitted = limited(Double(source.width), Double(source.height), to: limit)
            return ResizePlan(size: pixels(fitted.width, fitted.height), mode: .stretch)
        }
        let fitted = limited(width, height, to: limit)
        // Scaled down, the rounded sides are the result's exactly: `fit` would let the side rounded down
        // shrink the other (2048×102.4 → 2040×102).
        let scaledDown = fitted.width != width || fitted.height != height
        return ResizePlan(size: pixels(fitted.width, fitted.height), mode: scaledDown && mode == .fit ? .stretch : mode)
    }

    /// The plan's size before the result limit, in pixels not yet rounded.
    private static func unlimited(
        options: ProcessingOptions, source: PixelSize
    ) -> (width: Double, height: Double, mode: ResizeMode)? {
        let width = options.scaledWidth
        let height = options.scaledHeight
        guard width > 0 || height > 0 else { return nil }
        let sourceWidth = Double(source.width)
        let sourceHeight = Double(source.height)

        if options.resizeType == .force {
            var target = (
                width: width > 0 ? Double(width) : sourceWidth, height: height > 0 ? Double(height) : sourceHeight
            )
            if !options.enlarge {
                // Neither side may grow; scaling both by one factor keeps the requested (distorted) ratio.
                let growth = max(target.width / sourceWidth, target.height / sourceHeight)
                if growth > 1 { target = (target.width / growth, target.height / growth) }
            }
            return (target.width, target.height, .stretch)
        }

        // One side given: scale to it alone, keeping the aspect ratio (fit, fill and auto agree).
        guard width > 0, height > 0 else {
            var scale = width > 0 ? Double(width) / sourceWidth : Double(height) / sourceHeight
            if !options.enlarge { scale = min(scale, 1) }
            return (sourceWidth * scale, sourceHeight * scale, .fit)
        }

        let type: ResizeType =
            if options.resizeType == .auto {
                // Same orientation (a square matches either) → fill; otherwise fit.
                (source.width >= source.height) == (width >= height)
                    || source.width == source.height || width == height ? .fill : .fit
            } else {
                options.resizeType
            }
        let box = (width: Double(width), height: Double(height))
        switch type {
        case .fit:
            var scale = min(box.width / sourceWidth, box.height / sourceHeight)
            if !options.enlarge { scale = min(scale, 1) }
            return (sourceWidth * scale, sourceHeight * scale, .fit)
        case .fill, .fillDown:
            let scale = max(box.width / sourceWidth, box.height / sourceHeight)
            guard !options.enlarge, scale > 1 else { return (box.width, box.height, .fill) }
            if type == .fill {
                // Not enlarged: crop the source to what it covers of the box, at its own scale.
                return (min(box.width, sourceWidth), min(box.height, sourceHeight), .fill)
            } else {
                // fill-down: the largest box of the requested ratio inside the source.
                let shrink = min(sourceWidth / box.width, sourceHeight / box.height)
                return (box.width * shrink, box.height * shrink, .fill)
            }
        case .force, .auto:
            return nil  // force returned above; auto became fill or fit
        }
    }

    /// `width`×`height` scaled down as a whole so that neither passes `limit`.
    private static func limited(_ width: Double, _ height: Double, to limit: Double) -> (width: Double, height: Double)
    {
        let larger = max(width, height)
        guard larger > limit else { return (width, height) }
        return (min(limit, width * limit / larger), min(limit, height * limit / larger))
    }

    /// Whole pixels, at least 1 and at most `ProcessingOptions.largestScaledSide` on each side.
    private static func pixels(_ width: Double, _ height: Double) -> PixelSize {
        func side(_ value: Double) -> Int {
            let rounded = value.rounded()
            guard rounded >= 1 else { return 1 }  // NaN too
            return rounded >= Double(ProcessingOptions.largestScaledSide)
                ? ProcessingOptions.largestScaledSide : Int(rounded)
        }
        return PixelSize(width: side(width), height: side(height))
    }
}

/// The transformer that runs one request's `ResizePlan` inside the downloader's decode step, where the
/// source's size is first known: upright per EXIF first, then the plan's resize.
struct ProxyTransformer: ImageTransforming {
    let options: ProcessingOptions
    /// The largest side a result may have (`ImageProxyConfiguration.maximumResultDimension`).
    var maximumDimension = ProcessingOptions.largestScaledSide

    var key: String { "proxy(\(options.canonical);max=\(maximumDimension))" }

    func transform(_ image: Image) throws -> Image {
        try transform(image, budget: nil)
    }

    func transform(_ image: Image, budget: DecodeMemoryBudget?) throws -> Image {
        let upright = try ImageTransformer.applyOrientation.transform(image, budget: budget)
        // The plan follows the source's own size, not the (possibly shrunk-on-load) decoded one, so a
        // result never depends on how the decoder scaled.
        guard
            let plan = ResizePlan.make(
                options: options, source: PixelSize(width: upright.originalWidth, height: upright.originalHeight),
                maximumDimension: maximumDimension)
        else {
            guard upright.width != upright.originalWidth || upright.height != upright.originalHeight else {
                return upright
            }
            return try ImageTransformer.resize(
                to: PixelSize(width: upright.originalWidth, height: upright.originalHeight), mode: .stretch
            ).transform(upright, budget: budget)
        }
        return try ImageTransformer.resize(to: plan.size, mode: plan.mode).transform(upright, budget: budget)
    }

    /// Shrink-on-load: the decoder (libjpeg's DCT scaling, libwebp's scaling, PNG's box averaging) needs to
    /// produce no more than covers the result. One side alone needs that side; `fit` needs the image to fit
    /// the box; every other type (fill, fill-down, force, auto) needs it to cover the box.
    var minimumDecodeSize: MinimumDecodeSize? {
        let width = options.scaledWidth
        let height = options.scaledHeight
        guard width > 0 || height > 0 else { return nil }
        let unbounded = 1 << 24
        let box = PixelSize(
            width: width > 0 ? min(width, unbounded) : unbounded,
            height: height > 0 ? min(height, unbounded) : unbounded)
        let fits = width == 0 || height == 0 || options.resizeType == .fit
        return MinimumDecodeSize(size: box, coverage: fits ? .fit : .fill)
    }
}
