import WebImageCodecs

/// Smart gravity in the plan: `ResizePlan` computes sizes before any pixel is seen and places a smart
/// crop in the middle; once the image is at hand, the window `AttentionCrop` picks becomes a focus point
/// and the plan is made again. The sizes do not depend on gravity, so the new plan cuts the same size at
/// the chosen place. An animation's window is chosen on its first frame and cut from every frame.
extension ProxyTransformer {
    /// Turns a smart gravity of `crop` into the focus point of `image`'s most interesting window of the
    /// crop's size; `image` is the source after orientation and rotation, as `plan.source` measures it.
    /// Whether `options` changed so that the plan must be made again.
    static func placeSmartCrop(_ options: inout ProcessingOptions, plan: ResizePlan, in image: Image) -> Bool {
        guard var crop = options.crop, (crop.gravity ?? options.gravity).type == .smart else { return false }
        guard let rect = plan.crop, let frame = image.frames.first else {
            // Nothing is cut: any gravity does, but an inherited smart one must not follow a later change.
            crop.gravity = Gravity()
            options.crop = crop
            return false
        }
        let window = decoded(rect, of: plan.source, in: image)
        let corner = AttentionCrop.window(PixelSize(width: window.width, height: window.height), in: frame)
        crop.gravity = focus(corner, window: (window.width, window.height), of: (image.width, image.height))
        options.crop = crop
        return true
    }

    /// Turns a smart `gravity` into the focus point of `image`'s most interesting window of the size the
    /// result crop keeps; `image` is what the scale starts from (after `crop`).
    static func placeSmartResultCrop(_ options: inout ProcessingOptions, plan: ResizePlan, in image: Image) -> Bool {
        guard options.gravity.type == .smart,
            plan.kept.width < plan.scaled.width || plan.kept.height < plan.scaled.height,
            let frame = image.frames.first
        else { return false }
        // The result crop's size in the pixels of `image`, before the scale.
        let window = PixelSize(
            width: Self.side(plan.kept.width, of: plan.scaled.width, in: image.width),
            height: Self.side(plan.kept.height, of: plan.scaled.height, in: image.height))
        let corner = AttentionCrop.window(window, in: frame)
        options.gravity = focus(corner, window: (window.width, window.height), of: (image.width, image.height))
        return true
    }

    /// `part` of `whole` as a side of 1…`side` pixels.
    static func side(_ part: Int, of whole: Int, in side: Int) -> Int {
        max(1, min(side, Int((Double(part) * Double(side) / Double(max(1, whole))).rounded())))
    }

    /// The focus point that centres a `window` with its top left corner at `corner` in an image of `size`.
    static func focus(_ corner: (x: Int, y: Int), window: (width: Int, height: Int), of size: (width: Int, height: Int))
        -> Gravity
    {
        let x = (Double(corner.x) + Double(window.width / 2)) / Double(max(1, size.width))
        let y = (Double(corner.y) + Double(window.height / 2)) / Double(max(1, size.height))
        return Gravity(.focusPoint, x: min(1, max(0, x)), y: min(1, max(0, y)))
    }
}
