import WebImageCodecs

/// imgproxy's effect options: `background`, `blur`, `sharpen`, `pixelate` and `flip`
/// (`ProxyURL+Effects.swift` parses them).
///
/// The filters run on the result after its crop, before extension and padding, as imgproxy's do; their
/// sigmas and block size are in result pixels and, as in imgproxy, `dpr` does not scale them. The
/// background is the colour extension and padding fill with, and the result is flattened onto it after
/// them, so it has no alpha; without one, a format with alpha keeps it and JPEG is flattened onto white.
///
/// ```swift
/// var effects = EffectOptions()
/// effects.background = ImageColor(red: 255, green: 0, blue: 0)  // bg:255:0:0
/// effects.blur = 2  // bl:2
/// ```
public struct EffectOptions: Sendable, Hashable {
    /// The colour to flatten onto and fill with (`background`); nil for none. nil by default.
    public var background: ImageColor?
    /// The Gaussian blur's sigma (`blur`), libvips' `gaussblur` mask; 0 for none. `0` by default.
    public var blur: Double = 0
    /// The unsharp mask's sigma (`sharpen`); 0 for none. `0` by default.
    public var sharpen: Double = 0
    /// The side of pixelation's blocks in pixels (`pixelate`); 1 or less for none. `0` by default.
    public var pixelate = 0
    /// Whether left and right swap (`flip`'s first argument), after `rotate`. `false` by default.
    public var flipHorizontal = false
    /// Whether top and bottom swap (`flip`'s second argument), after `rotate`. `false` by default.
    public var flipVertical = false

    /// Creates the defaults: no effect.
    public init() {}

    /// The largest `blur` and `sharpen` sigma a URL may ask for. The direct convolution's cost grows with
    /// the sigma (about 3.6σ taps a pixel and pass); at 100 a 4-megapixel result costs seconds of CPU.
    public static let largestSigma = 100.0

    /// The effects not at their defaults, in one fixed spelling, for `ProcessingOptions.canonical`.
    var canonical: [String] {
        var parts: [String] = []
        if let background { parts.append("bg:\(background.red):\(background.green):\(background.blue)") }
        if blur > 0 { parts.append("bl:\(blur)") }
        if sharpen > 0 { parts.append("sh:\(sharpen)") }
        if pixelate > 1 { parts.append("pix:\(pixelate)") }
        if flipHorizontal || flipVertical { parts.append("fl:\(flipHorizontal ? 1 : 0):\(flipVertical ? 1 : 0)") }
        return parts
    }
}
