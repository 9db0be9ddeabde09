import WebImageCodecs

/// Where a watermark's pixels go on one result, computed before any pixel is touched: imgproxy's
/// `processing/watermark.go` and `calcPosition`, with its half-to-even rounding.
///
/// The watermark is fitted (enlarged too) into the result's sides times `scale`, or keeps its own size. A
/// positioned mark sits by its gravity, offsets in pixels multiplied by the plan's `dprScale` (fractions of
/// the result's side below 1), and may hang past the edges by all but one pixel. A tiled one (`re`) is
/// padded by the spacing, half before and half after, and repeated an odd number of times each way with
/// the middle tile centred on the result.
///
/// Only `window`, the part of the resampled watermark that falls on the result, is ever made, so a
/// watermark scaled far past the result costs no more than the result.
struct WatermarkLayout: Hashable {
    /// The size the watermark is resampled to.
    var size: PixelSize
    /// The part of `size` drawn: what any mark shows of it on the result.
    var window: PixelRect
    /// Where `window`'s top left corner lands for the top left mark; it may be off the result.
    var x: Int
    var y: Int
    /// How far apart the marks are, across and down (tiles only).
    var step: PixelSize
    /// How many marks across and down: 1 and 1 unless tiled.
    var columns: Int
    var rows: Int

    /// The layout of `option` for a `mark`-sized watermark on a `result`-sized image; nil when nothing of it
    /// falls on the result.
    static func make(option: WatermarkOption, mark: PixelSize, result: PixelSize, dprScale: Double)
        -> WatermarkLayout?
    {
        guard mark.width > 0, mark.height > 0, result.width > 0, result.height > 0 else { return nil }
        let size = scaledSize(of: mark, on: result, scale: option.scale)
        switch option.position {
        case .gravity(let gravity):
            let (left, top) = position(
                result: result, mark: size, gravity: Gravity(gravity, x: option.x, y: option.y), dpr: dprScale)
            let across = visible(length: size.width, first: left, last: left, on: result.width)
            let down = visible(length: size.height, first: top, last: top, on: result.height)
            guard let across, let down else { return nil }
            return WatermarkLayout(
                size: size,
                window: PixelRect(
                    x: across.lowerBound, y: down.lowerBound, width: across.count,
                    height: down.count),
                x: left + across.lowerBound, y: top + down.lowerBound, step: size, columns: 1, rows: 1)
        case .replicate:
            let horizontal = tiles(of: size.width, spacing: option.x, on: result.width, dpr: dprScale)
            let vertical = tiles(of: size.height, spacing: option.y, on: result.height, dpr: dprScale)
            let lastX = horizontal.first + (horizontal.count - 1) * horizontal.step
            let lastY = vertical.first + (vertical.count - 1) * vertical.step
            guard
                let across = visible(
                    length: size.width, first: horizontal.first, last: lastX, on: result.width),
                let down = visible(
                    length: size.height, first: vertical.first, last: lastY, on: result.height)
            else { return nil }
            return WatermarkLayout(
                size: size,
                window: PixelRect(
                    x: across.lowerBound, y: down.lowerBound, width: across.count,
                    height: down.count),
                x: horizontal.first + across.lowerBound, y: vertical.first + down.lowerBound,
                step: PixelSize(width: horizontal.step, height: vertical.step), columns: horizontal.count,
                rows: vertical.count)
        }
    }

    /// The watermark's size: its own with a scale of 0, else fitted (enlarged too) into the result's sides
    /// times `scale` by the proxy's own resize arithmetic, as imgproxy resizes it with `fit` and `enlarge`.
    static func scaledSize(of mark: PixelSize, on result: PixelSize, scale: Double) -> PixelSize {
        guard scale > 0 else { return mark }
        var options = ProcessingOptions()
        options.resizeType = .fit
        options.enlarge = true
        options.width = max(1, min(evenScaled(result.width, scale), ProcessingOptions.largestScaledSide))
        options.height = max(1, min(evenScaled(result.height, scale), ProcessingOptions.largestScaledSide))
        return ResizePlan.make(options: options, source: mark).scaled
    }

    /// The part, in the mark's own coordinates, that any of the marks from `first` to `last` (their left or
    /// top edges, `length` long) shows on a side of `side` pixels; nil when none shows.
    static func visible(length: Int, first: Int, last: Int, on side: Int) -> Range<Int>? {
        let lower = max(0, -last)
        let upper = min(length, side - first)
        return lower < upper ? lower..<upper : nil
    }

    /// imgproxy's tiling along one side: the mark padded by the spacing (pixels times `dpr`, or a fraction
    /// of the side), as many tiles as cover the side made odd, the middle one centred. The left (top) edge
    /// of the first tile's mark, the distance between marks, and their count.
    static func tiles(of length: Int, spacing: Double, on side: Int, dpr: Double) -> (
        first: Int, step: Int, count: Int
    ) {
        let padding = max(0, abs(spacing) >= 1 ? evenRounded(spacing * dpr) : evenScaled(side, spacing))
        let step = length + padding
        var count = (side + step - 1) / step
        if count % 2 == 0 { count += 1 }
        let start = (count * step - side) / 2
        return (padding / 2 - start, step, count)
    }

    /// imgproxy's `calcPosition` with overflow allowed: the top left corner of the mark, at least one pixel
    /// of it on the result.
    static func position(result: PixelSize, mark: PixelSize, gravity: Gravity, dpr: Double) -> (Int, Int) {
        let type = gravity.type
        let offsetX = abs(gravity.x) >= 1 ? evenRounded(gravity.x * dpr) : evenScaled(result.width, gravity.x)
        let offsetY = abs(gravity.y) >= 1 ? evenRounded(gravity.y * dpr) : evenScaled(result.height, gravity.y)
        var left = evenRounded(Double(result.width - mark.width + 1) / 2) + offsetX
        var top = evenRounded(Double(result.height - mark.height + 1) / 2) + offsetY
        if type.isNorth { top = offsetY }
        if type.isEast { left = result.width - mark.width - offsetX }
        if type.isSouth { top = result.height - mark.height - offsetY }
        if type.isWest { left = offsetX }
        return (
            max(1 - mark.width, min(left, result.width - 1)), max(1 - mark.height, min(top, result.height - 1))
        )
    }

    /// Half to even, as Go's `math.RoundToEven`, within ±2^31 (offsets and sides are far below).
    static func evenRounded(_ value: Double) -> Int {
        let rounded = value.rounded(.toNearestOrEven)
        guard rounded.isFinite else { return 0 }
        return Int(max(-Double(1 << 31), min(Double(1 << 31), rounded)))
    }

    /// imgproxy's `ScaleToEven`: `side × factor` rounded half to even; 0 for a side of 0.
    static func evenScaled(_ side: Int, _ factor: Double) -> Int {
        side == 0 ? 0 : evenRounded(Double(side) * factor)
    }
}
