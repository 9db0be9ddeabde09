/// `watermark`, `wm`: `opacity[:position[:x_offset[:y_offset[:scale]]]]` (imgproxy-docs,
/// `docs/usage/processing.mdx`). The image is the server's one watermark
/// (`ImageProxyConfiguration.watermark`); without one the option is accepted and draws nothing, as imgproxy
/// without `IMGPROXY_WATERMARK_*` does.
extension ProxyURL {
    /// Applies `wm`; false when `parser` names another option.
    static func applyWatermarkOption(_ parser: OptionArguments, to options: inout ProcessingOptions)
        throws(ProxyError) -> Bool
    {
        guard parser.name == "wm" || parser.name == "watermark" else { return false }
        try parser.count(1...5)
        var watermark = options.watermark
        guard let opacity = try parser.number(0), (0...1).contains(opacity) else {
            throw parser.error("the opacity must be a number from 0 to 1")
        }
        watermark.opacity = opacity
        if parser.has(1) {
            let name = parser.arguments[1]
            guard let position = WatermarkPosition(rawValue: name) else {
                throw parser.error(
                    "unknown position \"\(name)\" (ce, no, so, ea, we, noea, nowe, soea, sowe or re)")
            }
            watermark.position = position
        }
        let limit = Double(largestPixels)
        if let x = try parser.number(2) { watermark.x = x }
        if let y = try parser.number(3) { watermark.y = y }
        guard abs(watermark.x) <= limit, abs(watermark.y) <= limit else {
            throw parser.error("an offset must be at most \(largestPixels) pixels")
        }
        // Tiles cannot overlap: imgproxy pads each tile by the spacing, and a negative padding has no
        // meaning there.
        if watermark.position == .replicate, watermark.x < 0 || watermark.y < 0 {
            throw parser.error("the spacing between tiles (re) must be 0 or more")
        }
        if let scale = try parser.number(4) {
            guard scale >= 0, scale <= largestWatermarkScale else {
                throw parser.error("the scale must be 0 (the watermark's own size) up to \(Int(largestWatermarkScale))")
            }
            watermark.scale = scale
        }
        options.watermark = watermark
        return true
    }

    /// The largest `wm` scale: a watermark 100 times the result's size shows only a sliver of itself, and
    /// only the part on the result is ever resampled.
    static let largestWatermarkScale = 100.0
}

/// `watermark`: the server's watermark drawn over the finished result, after `extend`, `padding` and the
/// background (imgproxy's pipeline order).
///
/// ```swift
/// var options = ProcessingOptions()
/// // wm:0.5:soea:10:10
/// options.watermark = WatermarkOption(opacity: 0.5, position: .gravity(.southEast), x: 10, y: 10)
/// ```
public struct WatermarkOption: Sendable, Hashable {
    /// How opaque the watermark is, 0…1, multiplied by the server's base opacity; 0 draws none. `0` by
    /// default.
    public var opacity: Double
    /// Where the watermark goes. Centre by default.
    public var position: WatermarkPosition
    /// The horizontal offset from the position's edge (pixels when its magnitude is 1 or more, multiplied by
    /// `dpr`; a fraction of the result's width below that); with `.replicate`, the spacing between tiles.
    /// `0` by default.
    public var x: Double
    /// The vertical offset, as `x`. `0` by default.
    public var y: Double
    /// The watermark's size relative to the result's: it is fitted (enlarged too) into the result's width
    /// and height times `scale`; 0 keeps the watermark's own size. `0` by default.
    public var scale: Double

    /// A watermark option; none (opacity 0) by default.
    public init(
        opacity: Double = 0, position: WatermarkPosition = .gravity(.centre), x: Double = 0, y: Double = 0,
        scale: Double = 0
    ) {
        self.opacity = opacity
        self.position = position
        self.x = x
        self.y = y
        self.scale = scale
    }

    /// Whether a watermark is drawn (when the server has one).
    public var isEnabled: Bool { opacity > 0 }

    /// `wm:opacity:position:x:y:scale`, one spelling for the canonical options; empty when nothing is drawn.
    var canonical: String { isEnabled ? "wm:\(opacity):\(position.rawValue):\(x):\(y):\(scale)" : "" }
}

/// Where `watermark` puts the watermark: one of imgproxy's nine gravities, or tiled over the whole result.
public enum WatermarkPosition: Sendable, Hashable {
    /// At an edge, a corner or the centre (`ce`, `no`, `so`, `ea`, `we`, `noea`, `nowe`, `soea`, `sowe`);
    /// never `.focusPoint`.
    case gravity(GravityType)
    /// `re`: repeated over the whole result, the middle tile centred.
    case replicate

    /// The position's URL name, nil for anything else (`fp` and `sm` included).
    public init?(rawValue: String) {
        if rawValue == "re" {
            self = .replicate
        } else if let type = GravityType(rawValue: rawValue), type != .focusPoint, type != .smart {
            self = .gravity(type)
        } else {
            return nil
        }
    }

    /// The URL name: `re` or the gravity's.
    public var rawValue: String {
        switch self {
        case .gravity(let type): type.rawValue
        case .replicate: "re"
        }
    }
}
