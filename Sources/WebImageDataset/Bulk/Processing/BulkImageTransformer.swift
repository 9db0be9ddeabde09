import WebImage

/// What the bulk engine does to one row's image: the resize (``BulkResize``), if any, and the blur of
/// the row's boxes (``BlurBox``, ``BoundingBoxBlur``), if any. The downloader runs it on the decoded image
/// (`ImageDownloadContext.transformer`).
///
/// As img2dataset does, the boxes are blurred after the scaling and before the crop or the border, so
/// the boxes (fractions of the image) and the blur's strength follow the scaled image; an image the
/// resize leaves alone is blurred at its size.
///
/// ```swift
/// var context = ImageDownloadContext()
/// context.transformer = BulkImageTransformer(
///     resize: BulkResize(mode: .centerCrop, size: 256), boxes: [BlurBox(x0: 0.1, y0: 0.2, x1: 0.3, y1: 0.5)])
/// ```
public struct BulkImageTransformer: ImageTransforming {
    /// The resize; nil keeps the decoded size.
    public var resize: BulkResize?
    /// The regions to blur; none by default.
    public var boxes: [BlurBox]
    /// Says, from the file's width and height, that the image will be thrown away (a size filter): it is
    /// then handed back untouched, as img2dataset filters before it resizes. None by default.
    var leavesAlone: (@Sendable (_ width: Int, _ height: Int) -> Bool)?

    /// A transformer that resizes with `resize` and blurs `boxes`.
    public init(resize: BulkResize?, boxes: [BlurBox] = []) {
        self.resize = resize
        self.boxes = boxes
    }

    public var key: String {
        let blur = boxes.map { "\($0.x0),\($0.y0),\($0.x1),\($0.y1)" }.joined(separator: ";")
        return "bulk(" + (resize?.key ?? "-") + (boxes.isEmpty ? "" : ",blur(\(blur))") + ")"
    }

    public var minimumDecodeSize: MinimumDecodeSize? { resize?.minimumDecodeSize }

    public func transform(_ image: Image) throws -> Image { try transform(image, budget: nil) }

    public func transform(_ image: Image, budget: DecodeMemoryBudget?) throws -> Image {
        if let leavesAlone, leavesAlone(image.originalWidth, image.originalHeight) { return image }
        guard let resize,
            let plan = resize.plan(
                original: PixelSize(width: image.originalWidth, height: image.originalHeight),
                decoded: PixelSize(width: image.width, height: image.height))
        else { return blurred(image) }
        let side = resize.size
        if plan.finish == .crop, boxes.isEmpty {
            // The centre square straight from the resampler: `fill` scales to the same size (the shorter side
            // to `side`, the other rounded alike) and resamples only the square, the pixels scaling all of
            // it and cropping would give.
            return try ImageTransformer.resize(to: PixelSize(width: side, height: side), mode: .fill).transform(
                image, budget: budget)
        }
        var result = image
        if plan.scaled != PixelSize(width: image.width, height: image.height) {
            result = try ImageTransformer.resize(to: plan.scaled, mode: .stretch).transform(result, budget: budget)
        }
        result = blurred(result)
        switch plan.finish {
        case .none:
            return result
        case .crop:
            let rect = PixelRect(
                x: (result.width - min(side, result.width)) / 2, y: (result.height - min(side, result.height)) / 2,
                width: min(side, result.width), height: min(side, result.height))
            guard rect.width != result.width || rect.height != result.height else { return result }
            return try ImageTransformer.crop(rect).transform(result, budget: budget)
        case .border:
            guard result.width < side || result.height < side else { return result }
            result.frames = result.frames.map { Self.bordered($0, side: side, color: resize.borderColor) }
            result.width = max(side, result.width)
            result.height = max(side, result.height)
            if resize.borderColor.alpha < 255 { result.hasAlpha = true }
            return result
        }
    }

    /// `image` with ``boxes`` blurred in every frame.
    private func blurred(_ image: Image) -> Image {
        guard !boxes.isEmpty else { return image }
        var result = image
        result.frames = image.frames.map { BoundingBoxBlur.blur($0, boxes: boxes) }
        return result
    }

    /// `frame` centred on a square of `side` pixels (at least the frame's size) filled with `color`; the
    /// odd pixel of a margin goes to the bottom or right one, as img2dataset's `PadIfNeeded` does.
    static func bordered(_ frame: ImageFrame, side: Int, color: ImageColor) -> ImageFrame {
        let width = max(side, frame.width)
        let height = max(side, frame.height)
        let row = Array(repeatElement([color.red, color.green, color.blue, color.alpha], count: width).joined())
        var pixels = Array(repeatElement(row, count: height).joined())
        let left = (width - frame.width) / 2
        let top = (height - frame.height) / 2
        for y in 0..<frame.height {
            let source = y * frame.bytesPerRow
            let target = ((top + y) * width + left) * 4
            pixels.replaceSubrange(
                target..<(target + frame.width * 4), with: frame.pixels[source..<(source + frame.width * 4)])
        }
        return ImageFrame(
            width: width, height: height, bytesPerRow: width * 4, pixels: pixels, duration: frame.duration)
    }
}
