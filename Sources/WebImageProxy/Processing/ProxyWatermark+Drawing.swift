import WebImageCodecs

extension ProxyWatermark {
    /// Draws this watermark over every frame of `canvas` as `option` says (`WatermarkLayout`), its alpha
    /// times `option.opacity` times the base `opacity`; nothing when that is 0 or no mark falls on the image.
    /// The last step of the pipeline, on the finished canvas; `dprScale` is the plan's.
    ///
    /// Compositing is Porter-Duff "over" on straight alpha, as libvips composites: an opaque image stays
    /// opaque, and a transparent one gets the alpha the mark adds. Over is associative, so drawing on a
    /// transparent canvas that the JPEG encoder later flattens onto white gives what imgproxy gives by
    /// flattening first. The mark's sRGB values are drawn as they are, also on a result kept in the source's
    /// own profile (`strip_color_profile:0`), where imgproxy would convert them.
    ///
    /// - Throws: `ImageCodecError` when resampling the watermark would pass `budget`.
    func draw(
        _ option: WatermarkOption, on canvas: inout Image, dprScale: Double, budget: DecodeMemoryBudget?
    ) throws {
        let alpha = option.opacity * opacity
        guard alpha > 0,
            let layout = WatermarkLayout.make(
                option: option, mark: PixelSize(width: image.width, height: image.height),
                result: PixelSize(width: canvas.width, height: canvas.height), dprScale: dprScale)
        else { return }
        let mark = try prepared(layout, budget: budget)
        for index in canvas.frames.indices {
            Self.composite(mark, on: &canvas.frames[index], layout: layout, alpha: Float(alpha))
        }
    }

    /// The watermark's `layout.window`, resampled to `layout.size`; cut without resampling when the size is
    /// the watermark's own.
    private func prepared(_ layout: WatermarkLayout, budget: DecodeMemoryBudget?) throws -> ImageFrame {
        let whole = PixelRect(x: 0, y: 0, width: image.width, height: image.height)
        let transformer: ImageTransformer
        if layout.size == PixelSize(width: image.width, height: image.height) {
            if layout.window == whole, let frame = image.frames.first { return frame }
            transformer = .crop(layout.window)
        } else {
            transformer = .resize(to: layout.size, keeping: layout.window)
        }
        let result = try transformer.transform(image, budget: budget)
        guard let frame = result.frames.first else {
            throw ImageCodecError(.invalidParameters, "the watermark has no pixels after resampling")
        }
        return frame
    }

    /// `mark` drawn over `frame` at every place `layout` puts it, cut at the frame's edges.
    private static func composite(_ mark: ImageFrame, on frame: inout ImageFrame, layout: WatermarkLayout, alpha: Float)
    {
        let width = frame.width
        let height = frame.height
        let rowBytes = frame.bytesPerRow
        mark.pixels.withUnsafeBufferPointer { source in
            frame.pixels.withUnsafeMutableBufferPointer { target in
                for row in 0..<layout.rows {
                    let top = layout.y + row * layout.step.height
                    let y0 = max(0, top)
                    let y1 = min(height, top + mark.height)
                    guard y1 > y0 else { continue }
                    for column in 0..<layout.columns {
                        let left = layout.x + column * layout.step.width
                        let x0 = max(0, left)
                        let x1 = min(width, left + mark.width)
                        guard x1 > x0 else { continue }
                        for y in y0..<y1 {
                            let sourceRow = (y - top) * mark.bytesPerRow - left * 4
                            let targetRow = y * rowBytes
                            for x in x0..<x1 {
                                over(source, sourceRow + x * 4, target, targetRow + x * 4, alpha)
                            }
                        }
                    }
                }
            }
        }
    }

    /// One pixel of the mark at `s` over the pixel at `t`, straight alpha, the mark's alpha times `alpha`.
    @inline(__always)
    private static func over(
        _ source: UnsafeBufferPointer<UInt8>, _ s: Int, _ target: UnsafeMutableBufferPointer<UInt8>, _ t: Int,
        _ alpha: Float
    ) {
        let markAlpha = Float(source[s + 3]) / 255 * alpha
        guard markAlpha > 0 else { return }
        let below = Float(target[t + 3]) / 255
        let covered = below * (1 - markAlpha)
        let out = markAlpha + covered
        guard out > 0 else { return }
        for channel in 0..<3 {
            let value = (Float(source[s + channel]) * markAlpha + Float(target[t + channel]) * covered) / out
            target[t + channel] = UInt8(min(255, max(0, value.rounded())))
        }
        target[t + 3] = UInt8(min(255, max(0, (out * 255).rounded())))
    }
}
