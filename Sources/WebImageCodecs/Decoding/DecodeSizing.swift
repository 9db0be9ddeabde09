import Foundation

/// Decides, from the size a file declares and the options, what size to decode at — before any pixel
/// memory is allocated.
///
/// `target` is what the caller wants: the declared size, fitted inside `thumbnailPixelSize` and, with
/// `scaleDownLargeImages`, shrunk to `scaleDownLimitBytes`. Decoders that can shrink while decoding (JPEG
/// DCT scaling, PNG box averaging) offer their possible sizes to `nativeSize(among:)`, decode at the one
/// chosen, and average down to `finalSize(native:)` when it differs.
struct DecodeSizing {
    /// The size the file declares.
    let original: PixelSize
    /// The size the caller asked for (never larger than `original`).
    let target: PixelSize
    /// The most pixels a decoded bitmap may hold under `scaleDownLargeImages`; `nil` without it.
    let budgetPixels: Int?
    /// Whether `target` must be met exactly (thumbnails, scale-down), or is only the least a transformer
    /// needs (`minimumDecodeSize`): then a native size that covers it is delivered as it is.
    let isExact: Bool

    /// Checks the declared size and computes the target.
    ///
    /// `orientation` is the file's (EXIF 1…8): when the decode turns the pixels a quarter, the sizes the
    /// options ask for describe the turned image, so the target is worked out upright and turned back to
    /// the stored layout, which is what `original` and `target` describe.
    ///
    /// - Throws: `badImageData` for a 0-pixel size or one above `options.maximumImagePixels`.
    init(width: Int, height: Int, format: ImageFormat, options: ImageDecodingOptions, orientation: Int = 1) throws {
        guard width > 0, height > 0 else {
            throw DecodingFailure.badImageData("\(format.rawValue) header declares an empty \(width)×\(height) image")
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard !overflow, pixels <= options.maximumImagePixels else {
            throw DecodingFailure.badImageData(
                "\(format.rawValue) header declares \(width)×\(height) pixels, more than maximumImagePixels "
                    + "(\(options.maximumImagePixels)); refused before allocating", limit: .maximumImagePixels)
        }
        original = PixelSize(width: width, height: height)
        let turns = options.turnsQuarter(orientation)
        let upright = turns ? PixelSize(width: height, height: width) : original
        var target = upright
        if let box = options.thumbnailPixelSize, box.width > 0, box.height > 0 {
            target = Self.fit(upright, inside: box)
        }
        if options.scaleDownLargeImages {
            let limit = max(1, options.scaleDownLimitBytes / 4)
            budgetPixels = limit
            if target.width * target.height > limit { target = Self.shrink(target, toPixels: limit) }
        } else {
            budgetPixels = nil
        }
        var isExact = true
        if let needed = options.minimumDecodeSize?.required(for: upright),
            needed.width * needed.height < target.width * target.height
        {
            target = needed
            isExact = false
        }
        self.target = turns ? PixelSize(width: target.height, height: target.width) : target
        self.isExact = isExact
    }

    /// Whether the caller wants the declared size.
    var isFullSize: Bool { target == original }

    /// Picks which of `candidates` (sizes a decoder can produce natively, largest first) to decode at: the
    /// smallest that still covers `target` and fits the budget; failing that the largest that fits the
    /// budget; failing that the smallest.
    func nativeSize(among candidates: [PixelSize]) -> Int {
        func fitsBudget(_ size: PixelSize) -> Bool { budgetPixels.map { size.width * size.height <= $0 } ?? true }
        func covers(_ size: PixelSize) -> Bool { size.width >= target.width && size.height >= target.height }
        if let index = candidates.indices.last(where: { covers(candidates[$0]) && fitsBudget(candidates[$0]) }) {
            return index
        }
        if let index = candidates.indices.first(where: { fitsBudget(candidates[$0]) }) { return index }
        return max(0, candidates.count - 1)
    }

    /// The size to deliver when decoding at `native`: `target` when `native` covers it (`native` itself
    /// when the target is not exact), else `native`.
    func finalSize(native: PixelSize) -> PixelSize {
        native.width >= target.width && native.height >= target.height && isExact ? target : native
    }

    /// How many frames of an animation to decode, and the pixel memory they and the decoder's full-size
    /// canvases take together.
    ///
    /// Frames are composed on the full canvas, so the work is canvas pixels × frames: at most
    /// `maximumImagePixels` of it, and at most `maximumAnimationFrames` frames. Each frame is counted with
    /// its bookkeeping (`PixelMemory.frameOverhead`), not only its pixels. With a memory budget, the frames kept are also cut to what fits in the
    /// budget's whole limit beside `canvases` full-size buffers (a plan that depends on the limit, never
    /// on what other decodes hold, so the same file always gives the same frames). At least one frame.
    func animationPlan(
        declaredFrames: Int, canvases: Int, options: ImageDecodingOptions
    ) -> (frames: Int, bytes: Int) {
        let canvasPixels = max(1, original.width * original.height)
        var frames = options.decodeFirstFrameOnly ? 1 : max(1, min(declaredFrames, options.maximumAnimationFrames))
        frames = min(frames, max(1, options.maximumImagePixels / canvasPixels))
        let canvasBytes = PixelMemory.bytes(original, count: canvases)
        let frameBytes = PixelMemory.sum(PixelMemory.bytes(target), PixelMemory.frameOverhead)
        if let budget = options.memoryBudget, budget.limit > canvasBytes {
            frames = min(frames, max(1, (budget.limit - canvasBytes) / frameBytes))
        }
        return (frames, PixelMemory.sum(canvasBytes, PixelMemory.frameBytes(target, count: frames)))
    }

    /// `size` scaled to fit inside `box`, aspect kept, never enlarged, at least 1×1.
    static func fit(_ size: PixelSize, inside box: PixelSize) -> PixelSize {
        guard size.width > box.width || size.height > box.height else { return size }
        let scale = min(Double(box.width) / Double(size.width), Double(box.height) / Double(size.height))
        return PixelSize(
            width: min(box.width, max(1, Int((Double(size.width) * scale).rounded()))),
            height: min(box.height, max(1, Int((Double(size.height) * scale).rounded()))))
    }

    /// `size` scaled down, aspect kept, to at most `pixels` pixels, at least 1×1.
    static func shrink(_ size: PixelSize, toPixels pixels: Int) -> PixelSize {
        let scale = (Double(pixels) / (Double(size.width) * Double(size.height))).squareRoot()
        var width = max(1, Int(Double(size.width) * scale))
        var height = max(1, Int(Double(size.height) * scale))
        while width * height > pixels && (width > 1 || height > 1) {
            if width >= height { width -= 1 } else { height -= 1 }
        }
        return PixelSize(width: width, height: height)
    }
}
