import WebImageCodecs

/// Everything one request does to the geometry of a source of a given size, computed before any pixel is
/// touched: imgproxy's `CalcParams` (`processing/prepare.go`) and the sizes of the steps after it, with its
/// rounding (`PixelSize.scaledSide(_:by:)`, half away from zero).
///
/// The steps run in imgproxy's order: orientation (`auto_rotate`) and `rotate`, `crop` (with its gravity),
/// the scale, the crop to the result (`fill`, `fill-down`, around `gravity`), `extend`, `extend_aspect_ratio`,
/// `padding`. The plan turns the image before cropping, where imgproxy crops first with the gravity turned
/// the other way; the pixels kept are the same.
///
/// ```swift
/// let plan = ResizePlan.make(options: options, source: PixelSize(width: 640, height: 427))
/// plan.size   // PixelSize(width: 300, height: 200) for w:300
/// ```
public struct ResizePlan: Sendable, Hashable {
    /// The source's size after orientation and rotation: what `crop` and the scale start from.
    public var source: PixelSize
    /// The part of `source` kept before the scale; nil keeps all of it.
    public var crop: PixelRect?
    /// The size the (cropped) image is resampled to.
    public var scaled: PixelSize
    /// The part of `scaled` kept: the result crop of `fill` and `fill-down`, and what an extension smaller
    /// than the image cuts. All of `scaled` when nothing is cut.
    public var kept: PixelRect
    /// Where the kept image's top left corner lands on the canvas (`extend`, `extend_aspect_ratio`,
    /// `padding`); the rest of the canvas is background.
    public var origin: (x: Int, y: Int)
    /// The result's size: the canvas.
    public var size: PixelSize
    /// What pixel offsets and padding are multiplied by: `dpr`, changed as imgproxy's `DprScale` is when the
    /// image cannot reach the size without `enlarge` or the result limit shrank it. Steps after the plan (the watermark) place by
    /// it; not compared by `==`, which compares the pixels the plan keeps and where.
    public var dprScale = 1.0

    /// Whether the kept image covers the whole canvas (no background shows).
    public var coversCanvas: Bool {
        origin.x == 0 && origin.y == 0 && kept.width == size.width && kept.height == size.height
    }

    /// Whether two plans do the same to an image.
    public static func == (lhs: ResizePlan, rhs: ResizePlan) -> Bool {
        lhs.source == rhs.source && lhs.crop == rhs.crop && lhs.scaled == rhs.scaled && lhs.kept == rhs.kept
            && lhs.origin == rhs.origin && lhs.size == rhs.size
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(source)
        hasher.combine(crop)
        hasher.combine(scaled)
        hasher.combine(kept)
        hasher.combine(origin.x)
        hasher.combine(origin.y)
        hasher.combine(size)
    }

    /// The plan for `options` on a source whose upright size (after its EXIF orientation, as decoders
    /// deliver it) is `source`; `quarterTurned` says whether that orientation swapped the stored sides, for
    /// `auto_rotate:0`.
    ///
    /// No side of the result, the canvas after `extend` and `padding` included, passes `maximumDimension`
    /// (imgproxy's `max_result_dimension`): as imgproxy does, the scale and `dpr` shrink until the canvas
    /// fits, and when whole-pixel rounding still leaves a side a pixel or two over, background and then
    /// image are cut from its right or bottom. The arithmetic is in `Double` and saturates, so any options
    /// and source size give a plan, never an overflow.
    public static func make(
        options: ProcessingOptions, source: PixelSize, quarterTurned: Bool = false,
        maximumDimension: Int = ProcessingOptions.largestScaledSide
    ) -> ResizePlan {
        var calculation = Calculation(options: options, source: source, quarterTurned: quarterTurned)
        calculation.limit = max(1, min(maximumDimension, ProcessingOptions.largestScaledSide))
        return calculation.plan()
    }
}

/// imgproxy's arithmetic, in its terms (shrinks are source ÷ result, scales their inverse).
private struct Calculation {
    let options: ProcessingOptions
    var limit = ProcessingOptions.largestScaledSide
    /// The source after orientation and rotation.
    var sourceWidth: Int
    var sourceHeight: Int
    /// The crop's sides (0: none) and what the scale starts from.
    var cropWidth = 0
    var cropHeight = 0
    var widthToScale = 0
    var heightToScale = 0
    var widthScale = 1.0
    var heightScale = 1.0
    var dprScale = 1.0
    var targetWidth = 0
    var targetHeight = 0
    var scaledWidth = 0
    var scaledHeight = 0
    var resultCropWidth = 0
    var resultCropHeight = 0
    var aspectWidth = 0
    var aspectHeight = 0

    init(options: ProcessingOptions, source: PixelSize, quarterTurned: Bool) {
        self.options = options
        var width = max(1, min(source.width, ProcessingOptions.largestScaledSide))
        var height = max(1, min(source.height, ProcessingOptions.largestScaledSide))
        // Without auto_rotate the stored sides count; a quarter rotation swaps them again.
        if quarterTurned && !options.autoRotate { swap(&width, &height) }
        if options.rotation % 180 == 90 { swap(&width, &height) }
        sourceWidth = width
        sourceHeight = height
    }

    mutating func plan() -> ResizePlan {
        cropWidth = Self.cropSide(sourceWidth, options.crop?.width ?? 0)
        cropHeight = Self.cropSide(sourceHeight, options.crop?.height ?? 0)
        widthToScale = minNonZero(cropWidth, sourceWidth)
        heightToScale = minNonZero(cropHeight, sourceHeight)
        calculateScale()
        calculateSizes()
        // One pass is imgproxy's; more are needed only when a side saturated at 2^30 hid how large it was.
        var passes = 0
        while passes < 4, limitScale() { passes += 1 }
        return steps()
    }

    /// imgproxy's `CalcCropSize`: 0 is none, 1 or more pixels (the fraction dropped), below 1 a fraction.
    static func cropSide(_ side: Int, _ crop: Double) -> Int {
        guard crop > 0 else { return 0 }  // NaN too
        if crop >= 1 { return crop >= Double(ProcessingOptions.largestScaledSide) ? side : Int(crop) }
        return max(1, PixelSize.scaledSide(side, by: crop))
    }

    /// imgproxy's `calcScale`.
    mutating func calculateScale() {
        var widthShrink = 1.0
        var heightShrink = 1.0
        let width = Double(widthToScale)
        let height = Double(heightToScale)
        let requestedWidth = options.width
        let requestedHeight = options.height
        let destinationWidth = requestedWidth != 0 ? Double(requestedWidth) : width
        let destinationHeight = requestedHeight != 0 ? Double(requestedHeight) : height
        if destinationWidth != width { widthShrink = width / destinationWidth }
        if destinationHeight != height { heightShrink = height / destinationHeight }

        if widthShrink != 1 || heightShrink != 1 {
            var type = options.resizeType
            if type == .auto {
                let sourceLandscape = width - height >= 0
                let destinationLandscape = destinationWidth - destinationHeight >= 0
                type = sourceLandscape == destinationLandscape ? .fill : .fit
            }
            if requestedWidth == 0 && type != .force {
                widthShrink = heightShrink
            } else if requestedHeight == 0 && type != .force {
                heightShrink = widthShrink
            } else if type == .fit {
                widthShrink = max(widthShrink, heightShrink)
                heightShrink = widthShrink
            } else if type == .fill || type == .fillDown {
                widthShrink = min(widthShrink, heightShrink)
                heightShrink = widthShrink
            }
        }

        widthShrink /= options.zoomWidth
        heightShrink /= options.zoomHeight
        dprScale = options.dpr

        if !options.enlarge {
            let smaller = min(widthShrink, heightShrink)
            if smaller < 1 {
                widthShrink /= smaller
                heightShrink /= smaller
                // The image cannot reach the size; a dpr below 1 would move it further away, so it is
                // compensated, except with extend, whose composition must not depend on the dpr.
                if !options.extend.enabled { dprScale /= smaller }
            }
            dprScale = min(dprScale, min(widthShrink, heightShrink))
        }

        if options.minWidth > 0 {
            let shrink = width / Double(options.minWidth)
            if shrink < widthShrink {
                heightShrink /= widthShrink / shrink
                widthShrink = shrink
            }
        }
        if options.minHeight > 0 {
            let shrink = height / Double(options.minHeight)
            if shrink < heightShrink {
                widthShrink /= heightShrink / shrink
                heightShrink = shrink
            }
        }

        widthShrink /= dprScale
        heightShrink /= dprScale
        widthShrink = min(widthShrink, width)
        heightShrink = min(heightShrink, height)
        widthScale = 1 / widthShrink
        heightScale = 1 / heightShrink
    }

    /// imgproxy's `calcSizes`.
    mutating func calculateSizes() {
        targetWidth = PixelSize.scaledSide(options.width, by: dprScale * options.zoomWidth)
        targetHeight = PixelSize.scaledSide(options.height, by: dprScale * options.zoomHeight)
        scaledWidth = max(1, PixelSize.scaledSide(widthToScale, by: widthScale))
        scaledHeight = max(1, PixelSize.scaledSide(heightToScale, by: heightScale))

        resultCropWidth = targetWidth
        resultCropHeight = targetHeight
        if options.resizeType == .fillDown && !options.enlarge {
            let widthGap = Double(targetWidth) / Double(scaledWidth)
            let heightGap = Double(targetHeight) / Double(scaledHeight)
            if widthGap > heightGap && widthGap > 1 {
                resultCropHeight = PixelSize.scaledSide(scaledWidth, by: Double(targetHeight) / Double(targetWidth))
                resultCropWidth = scaledWidth
            } else if heightGap > widthGap && heightGap > 1 {
                resultCropWidth = PixelSize.scaledSide(scaledHeight, by: Double(targetWidth) / Double(targetHeight))
                resultCropHeight = scaledHeight
            }
        }

        aspectWidth = 0
        aspectHeight = 0
        if options.extendAspectRatio.enabled && targetWidth > 0 && targetHeight > 0 {
            let outWidth = minNonZero(scaledWidth, resultCropWidth)
            let outHeight = minNonZero(scaledHeight, resultCropHeight)
            let widthGap = Double(targetWidth) / Double(outWidth)
            let heightGap = Double(targetHeight) / Double(outHeight)
            if heightGap > widthGap {
                aspectHeight = PixelSize.scaledSide(outWidth, by: Double(targetHeight) / Double(targetWidth))
                aspectWidth = outWidth
            } else if widthGap > heightGap {
                aspectWidth = PixelSize.scaledSide(outHeight, by: Double(targetWidth) / Double(targetHeight))
                aspectHeight = outHeight
            }
        }
    }

    /// imgproxy's `limitScale`: the canvas (extension and padding included) within `limit`. Whether it
    /// had to scale down.
    mutating func limitScale() -> Bool {
        var outWidth = minNonZero(scaledWidth, resultCropWidth)
        var outHeight = minNonZero(scaledHeight, resultCropHeight)
        if options.extend.enabled {
            outWidth = max(outWidth, targetWidth)
            outHeight = max(outHeight, targetHeight)
        } else if options.extendAspectRatio.enabled {
            outWidth = max(outWidth, aspectWidth)
            outHeight = max(outHeight, aspectHeight)
        }
        let padding = scaledPadding
        outWidth += padding.left + padding.right
        outHeight += padding.top + padding.bottom
        guard outWidth > limit || outHeight > limit else { return false }
        let downScale = Double(limit) / Double(max(outWidth, outHeight))
        widthScale = max(widthScale * downScale, 1 / Double(widthToScale))
        heightScale = max(heightScale * downScale, 1 / Double(heightToScale))
        dprScale *= downScale
        calculateSizes()
        return true
    }

    /// The padding after `dpr`, rounded half to even as imgproxy does.
    var scaledPadding: (top: Int, right: Int, bottom: Int, left: Int) {
        func side(_ value: Int) -> Int {
            let product = (Double(value) * dprScale).rounded(.toNearestOrEven)
            guard product > 0 else { return 0 }
            return product >= Double(ProcessingOptions.largestScaledSide)
                ? ProcessingOptions.largestScaledSide : Int(product)
        }
        return (
            side(options.padding.top), side(options.padding.right), side(options.padding.bottom),
            side(options.padding.left)
        )
    }

    /// The steps after the scale, image by image, as rectangles: what is kept and where it lands.
    func steps() -> ResizePlan {
        // crop: before the scale, without dpr.
        var crop: PixelRect?
        if cropWidth != 0 || cropHeight != 0 {
            let width = minNonZero(cropWidth, sourceWidth)
            let height = minNonZero(cropHeight, sourceHeight)
            if width < sourceWidth || height < sourceHeight {
                let gravity = options.crop?.gravity ?? options.gravity
                let (x, y) = Self.position(
                    outer: (sourceWidth, sourceHeight), inner: (width, height), gravity: gravity, dpr: 1)
                crop = PixelRect(x: x, y: y, width: width, height: height)
            }
        }

        // The result crop, around the gravity, with dpr.
        var kept = PixelRect(x: 0, y: 0, width: scaledWidth, height: scaledHeight)
        let keptWidth = minNonZero(resultCropWidth, scaledWidth)
        let keptHeight = minNonZero(resultCropHeight, scaledHeight)
        if keptWidth < scaledWidth || keptHeight < scaledHeight {
            let (x, y) = Self.position(
                outer: (scaledWidth, scaledHeight), inner: (keptWidth, keptHeight), gravity: options.gravity,
                dpr: dprScale)
            kept = PixelRect(x: x, y: y, width: keptWidth, height: keptHeight)
        }

        var origin = (x: 0, y: 0)
        var canvas = (width: kept.width, height: kept.height)
        if options.extend.enabled {
            extend(to: (targetWidth, targetHeight), options.extend.gravity, &kept, &origin, &canvas)
        }
        if options.extendAspectRatio.enabled && aspectWidth != 0 && aspectHeight != 0 {
            extend(to: (aspectWidth, aspectHeight), options.extendAspectRatio.gravity, &kept, &origin, &canvas)
        }
        let padding = scaledPadding
        origin.x += padding.left
        origin.y += padding.top
        canvas.width += padding.left + padding.right
        canvas.height += padding.top + padding.bottom

        // Whole-pixel rounding can leave a side a pixel or two past the limit: cut the background on the
        // right or bottom first, then the image.
        if canvas.width > limit {
            canvas.width = limit
            kept.width = max(1, min(kept.width, limit - min(origin.x, limit - 1)))
            origin.x = min(origin.x, limit - kept.width)
        }
        if canvas.height > limit {
            canvas.height = limit
            kept.height = max(1, min(kept.height, limit - min(origin.y, limit - 1)))
            origin.y = min(origin.y, limit - kept.height)
        }
        return ResizePlan(
            source: PixelSize(width: sourceWidth, height: sourceHeight), crop: crop,
            scaled: PixelSize(width: scaledWidth, height: scaledHeight), kept: kept, origin: origin,
            size: PixelSize(width: canvas.width, height: canvas.height), dprScale: dprScale)
    }

    /// imgproxy's `extendImage`: the canvas grows to `size` (a side of 0 or one not larger keeps the
    /// canvas's); a side smaller than the canvas cuts it from the left or top, as libvips's embed does.
    func extend(
        to size: (width: Int, height: Int), _ gravity: Gravity, _ kept: inout PixelRect,
        _ origin: inout (x: Int, y: Int), _ canvas: inout (width: Int, height: Int)
    ) {
        guard size.width > canvas.width || size.height > canvas.height else { return }
        let width = size.width > 0 ? size.width : canvas.width
        let height = size.height > 0 ? size.height : canvas.height
        let (x, y) = Self.position(
            outer: (width, height), inner: (canvas.width, canvas.height), gravity: gravity, dpr: dprScale)
        // Only the kept image is drawn; its part outside the new canvas goes.
        let left = origin.x + x
        let top = origin.y + y
        let visibleX0 = max(left, 0)
        let visibleY0 = max(top, 0)
        let visibleX1 = min(left + kept.width, width)
        let visibleY1 = min(top + kept.height, height)
        kept = PixelRect(
            x: kept.x + (visibleX0 - left), y: kept.y + (visibleY0 - top), width: max(1, visibleX1 - visibleX0),
            height: max(1, visibleY1 - visibleY0))
        origin = (visibleX0, visibleY0)
        canvas = (width, height)
    }

    /// imgproxy's `calcPosition` without overflow: the top left corner of an `inner` rectangle placed in
    /// `outer` by `gravity`, kept inside it. Absolute offsets are multiplied by `dpr`; fractions are of
    /// `outer`'s sides.
    static func position(
        outer: (width: Int, height: Int), inner: (width: Int, height: Int), gravity: Gravity, dpr: Double
    ) -> (x: Int, y: Int) {
        var left: Int
        var top: Int
        if gravity.type == .focusPoint {
            left = evenScaled(outer.width, gravity.x) - inner.width / 2
            top = evenScaled(outer.height, gravity.y) - inner.height / 2
        } else {
            let offsetX = abs(gravity.x) >= 1 ? evenRounded(gravity.x * dpr) : evenScaled(outer.width, gravity.x)
            let offsetY = abs(gravity.y) >= 1 ? evenRounded(gravity.y * dpr) : evenScaled(outer.height, gravity.y)
            left = evenRounded(Double(outer.width - inner.width + 1) / 2) + offsetX
            top = evenRounded(Double(outer.height - inner.height + 1) / 2) + offsetY
            if gravity.type.isNorth { top = offsetY }
            if gravity.type.isEast { left = outer.width - inner.width - offsetX }
            if gravity.type.isSouth { top = outer.height - inner.height - offsetY }
            if gravity.type.isWest { left = offsetX }
        }
        return (max(0, min(left, outer.width - inner.width)), max(0, min(top, outer.height - inner.height)))
    }

    /// Half to even, as Go's `math.RoundToEven`, within ±2^31 (offsets and sides are checked far below).
    static func evenRounded(_ value: Double) -> Int {
        let rounded = value.rounded(.toNearestOrEven)
        guard rounded.isFinite else { return 0 }
        return Int(max(-Double(1 << 31), min(Double(1 << 31), rounded)))
    }

    /// imgproxy's `ScaleToEven`: `side × factor` rounded half to even; 0 for a side of 0.
    static func evenScaled(_ side: Int, _ factor: Double) -> Int {
        side == 0 ? 0 : evenRounded(Double(side) * factor)
    }

    func minNonZero(_ a: Int, _ b: Int) -> Int {
        a == 0 ? b : b == 0 ? a : min(a, b)
    }
}
