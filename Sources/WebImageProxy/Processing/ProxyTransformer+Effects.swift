import WebImageCodecs

/// The effect steps of `ProxyTransformer.transform`, in imgproxy's places (`processing/processing.go`'s
/// pipeline): `flip` right after `rotate`, so crop and gravity see the flipped image as imgproxy's
/// adjusted gravity does; blur, sharpen and pixelate on the cropped result, before extension and padding;
/// the background flattened after them.
extension ProxyTransformer {
    /// The mirrors `flip` asks for, run after the rotation.
    static func flipSteps(_ effects: EffectOptions) -> [ImageTransformer] {
        (effects.flipHorizontal ? [.flip(.horizontal)] : []) + (effects.flipVertical ? [.flip(.vertical)] : [])
    }

    /// `image` blurred, sharpened and pixelated as `effects` ask; the same image when they ask nothing.
    static func filtered(_ image: Image, _ effects: EffectOptions, budget: DecodeMemoryBudget?) throws -> Image {
        let filter = ImageFilter.filters(blur: effects.blur, sharpen: effects.sharpen, pixelate: effects.pixelate)
        return filter.isIdentity ? image : try filter.transform(image, budget: budget)
    }

    /// `image` flattened onto the background when there is one.
    static func flattened(_ image: Image, _ effects: EffectOptions, budget: DecodeMemoryBudget?) throws -> Image {
        guard let background = effects.background, image.hasAlpha else { return image }
        return try ImageFilter.flatten(onto: background).transform(image, budget: budget)
    }
}
