/// The processing options the proxy knows, with imgproxy's names and argument forms
/// (imgproxy-docs, `docs/usage/processing.mdx`). An empty argument leaves that setting as it was.
///
/// | Option | Arguments |
/// |---|---|
/// | `resize`, `rs` | `type:width:height:enlarge:extend[:gravity:x:y]` |
/// | `size`, `s` | `width:height:enlarge:extend[:gravity:x:y]` |
/// | `resizing_type`, `rt` | `fit`, `fill`, `fill-down`, `force` or `auto` |
/// | `width`, `w`; `height`, `h` | pixels |
/// | `min-width`, `mw`; `min-height`, `mh` | pixels |
/// | `zoom`, `z` | `factor` or `width_factor:height_factor` |
/// | `dpr` | a factor in (0, 8] |
/// | `enlarge`, `el` | a boolean (`1`, `t`, `true`, `0`, `f`, `false`) |
/// | `extend`, `ex`; `extend_aspect_ratio`, `extend_ar`, `exar` | `boolean[:gravity:x:y]` (no `sm`) |
/// | `gravity`, `g` | `type[:x:y]`, `fp:x:y`, `sm` |
/// | `crop`, `c` | `width:height[:gravity:x:y]` (`sm` too) |
/// | `trim`, `t` | `threshold[:color[:equal_hor[:equal_ver]]]` (`ProxyURL+Trim.swift`) |
/// | `padding`, `pd` | `top[:right[:bottom[:left]]]`, as CSS |
/// | `auto_rotate`, `ar` | a boolean |
/// | `rotate`, `rot` | a multiple of 90, clockwise |
/// | `quality`, `q` | 0…100 (0: the format's default) |
/// | `format`, `f`, `ext` | `jpg`, `png`, `webp`, `avif`, `gif` or `jxl` (`gif`, `webp` and `jxl` keep an animation) |
/// | `background`, `bg` | `R:G:B`, `rrggbb` or `rgb`; empty for none (`EffectOptions`) |
/// | `blur`, `bl` | a sigma, 0…100 (0: none) |
/// | `sharpen`, `sh` | a sigma, 0…100 (0: none) |
/// | `pixelate`, `pix` | a block side in pixels (0 or 1: none) |
/// | `flip`, `fl` | `horizontal[:vertical]`, booleans, after `rotate` |
/// | `watermark`, `wm` | `opacity[:position:x:y:scale]` (`ProxyURL+Watermark.swift`) |
/// | `max_src_resolution`, `msr` | megapixels (`ProxyURL+Limits.swift`) |
/// | `max_src_file_size`, `msfs` | bytes |
/// | `max_animation_frames`, `maf` | frames, 1 or more |
/// | `max_animation_frame_resolution`, `mafr` | megapixels |
/// | `max_result_dimension`, `mrd` | pixels |
/// | `preserve_hdr`, `ph` | a boolean: a 16-bit PNG source gives a 16-bit PNG result |
///
/// `ProxyURL+OutputOptions.swift` has the output, handling and request options and presets.
///
/// Every number is range-checked here, so the plan's arithmetic never meets one it cannot hold.
extension ProxyURL {
    /// The largest size or padding a URL's number is held at, and the largest crop side or absolute offset
    /// it may ask for: 2^30 pixels, far past any result limit, so that sums of a few stay far inside `Int`.
    static let largestPixels = ProcessingOptions.largestScaledSide
    /// The largest `zoom` factor.
    static let largestZoom = 1000.0

    /// Applies one `name:arg…` segment; `pr:` names presets of `presets`, `applying` the presets this
    /// segment is part of (so a preset naming itself ends).
    static func apply(
        _ segment: Substring, to options: inout ProcessingOptions, presets: ProxyPresets = ProxyPresets(),
        applying: [String] = []
    ) throws(ProxyError) {
        let parts = segment.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let parser = OptionArguments(name: parts[0], arguments: Array(parts.dropFirst()))
        if parser.name == "pr" || parser.name == "preset" {
            guard parser.arguments.allSatisfy({ !$0.isEmpty }) else { throw parser.error("a preset name is empty") }
            try presets.apply(parser.arguments, to: &options, applying: applying)
            return
        }
        if try applySizeOption(parser, to: &options) { return }
        if try applyPlacementOption(parser, to: &options) { return }
        if try applyEffectOption(parser, to: &options) { return }
        if try applyWatermarkOption(parser, to: &options) { return }
        if try applyTrimOption(parser, to: &options) { return }
        if try applyLimitOption(parser, to: &options) { return }
        guard try applyOutputOption(parser, to: &options) else {
            throw .badRequest("unknown option \"\(parser.name)\"")
        }
    }

    /// Applies one option of the result's size (`rs`, `s`, `rt`, `w`, `h`, `mw`, `mh`, `z`, `dpr`, `el`, `q`,
    /// `f`); false when `parser` names none of them.
    private static func applySizeOption(_ parser: OptionArguments, to options: inout ProcessingOptions)
        throws(ProxyError) -> Bool
    {
        let arguments = parser.arguments
        switch parser.name {
        case "rs", "resize":
            try parser.count(1...8)
            if let type = try parser.resizeType(0) { options.resizeType = type }
            try applySize(parser, from: 1, to: &options)
        case "s", "size":
            try parser.count(1...7)
            try applySize(parser, from: 0, to: &options)
        case "rt", "resizing_type":
            try parser.count(1...1)
            guard let type = try parser.resizeType(0) else { throw parser.error("the resizing type is empty") }
            options.resizeType = type
        case "w", "width":
            try parser.count(1...1)
            options.width = try parser.requiredPixels(0)
        case "h", "height":
            try parser.count(1...1)
            options.height = try parser.requiredPixels(0)
        case "mw", "min-width":
            try parser.count(1...1)
            options.minWidth = try parser.requiredPixels(0)
        case "mh", "min-height":
            try parser.count(1...1)
            options.minHeight = try parser.requiredPixels(0)
        case "z", "zoom":
            try parser.count(1...2)
            let width = try parser.factor(0, largest: largestZoom)
            options.zoomWidth = width
            options.zoomHeight = arguments.count > 1 ? try parser.factor(1, largest: largestZoom) : width
        case "dpr":
            try parser.count(1...1)
            options.dpr = try parser.factor(0, largest: 8)
        case "el", "enlarge":
            try parser.count(1...1)
            options.enlarge = try parser.requiredBoolean(0, "enlarge")
        case "q", "quality":
            try parser.count(1...1)
            options.quality = try parser.quality(0)
        case "f", "format", "ext":
            try parser.count(1...1)
            options.format = try extensionFormat(arguments[0][...])
        default:
            return false
        }
        return true
    }

    /// Applies one option of where the image sits (`ex`, `exar`, `g`, `c`, `pd`, `ar`, `rot`); false when
    /// `parser` names none of them.
    private static func applyPlacementOption(_ parser: OptionArguments, to options: inout ProcessingOptions)
        throws(ProxyError) -> Bool
    {
        let arguments = parser.arguments
        switch parser.name {
        case "ex", "extend":
            try parser.count(1...4)
            try applyExtend(parser, from: 0, to: &options.extend)
        case "exar", "extend_ar", "extend_aspect_ratio":
            try parser.count(1...4)
            try applyExtend(parser, from: 0, to: &options.extendAspectRatio)
        case "g", "gravity":
            try parser.count(1...3)
            options.gravity = try parser.gravity(from: 0, smart: true)
        case "c", "crop":
            try parser.count(1...5)
            let width = try parser.cropSide(0)
            let height = arguments.count > 1 ? try parser.cropSide(1) : 0
            let gravity = arguments.count > 2 ? try parser.gravity(from: 2, smart: true) : nil
            options.crop = CropOption(width: width, height: height, gravity: gravity)
        case "pd", "padding":
            try parser.count(1...4)
            try applyPadding(parser, to: &options.padding)
        case "ar", "auto_rotate":
            try parser.count(1...1)
            options.autoRotate = try parser.requiredBoolean(0, "auto_rotate")
        case "rot", "rotate":
            try parser.count(1...1)
            guard let angle = Int(arguments[0]), angle % 90 == 0 else {
                throw parser.error("the angle must be a whole multiple of 90")
            }
            options.rotation = (angle % 360 + 360) % 360
        default:
            return false
        }
        return true
    }

    /// `width:height:enlarge:extend[:gravity:x:y]` from argument `first` on (`size`, and `resize` after its
    /// type).
    private static func applySize(
        _ parser: OptionArguments, from first: Int, to options: inout ProcessingOptions
    ) throws(ProxyError) {
        if let width = try parser.pixels(first) { options.width = width }
        if let height = try parser.pixels(first + 1) { options.height = height }
        if let enlarge = try parser.boolean(first + 2, "enlarge") { options.enlarge = enlarge }
        if parser.has(first + 3) { try applyExtend(parser, from: first + 3, to: &options.extend) }
    }

    /// `enabled[:gravity:x:y]` from argument `first` on.
    private static func applyExtend(
        _ parser: OptionArguments, from first: Int, to extend: inout ExtendOption
    ) throws(ProxyError) {
        if let enabled = try parser.boolean(first, "extend") { extend.enabled = enabled }
        if parser.has(first + 1) { extend.gravity = try parser.gravity(from: first + 1) }
    }

    /// CSS's shorthand: a missing right is the top, a missing bottom the top, a missing left the right.
    private static func applyPadding(_ parser: OptionArguments, to padding: inout PaddingOption)
        throws(ProxyError)
    {
        if let top = try parser.pixels(0) { padding.top = top }
        padding.right = try parser.pixels(1) ?? padding.top
        padding.bottom = try parser.pixels(2) ?? padding.top
        padding.left = try parser.pixels(3) ?? padding.right
    }
}

/// One option's arguments and the checks on them; every error names the option as the URL spelled it.
struct OptionArguments {
    let name: String
    let arguments: [String]

    func error(_ sentence: String) -> ProxyError { .badRequest("option \(name): \(sentence)") }

    func count(_ range: ClosedRange<Int>) throws(ProxyError) {
        guard range.contains(arguments.count) else {
            let counts =
                range.lowerBound == range.upperBound
                ? "\(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
            throw .badRequest("option \(name) takes \(counts) argument(s)")
        }
    }

    /// Whether argument `index` is there and not empty.
    func has(_ index: Int) -> Bool { index < arguments.count && !arguments[index].isEmpty }

    /// Argument `index` as a resizing type; nil when it is missing or empty.
    func resizeType(_ index: Int) throws(ProxyError) -> ResizeType? {
        guard has(index) else { return nil }
        guard let type = ResizeType(rawValue: arguments[index]) else {
            throw error("unknown resizing type \"\(arguments[index])\" (fit, fill, fill-down, force or auto)")
        }
        return type
    }

    /// Argument `index` as whole pixels, any `Int` from 0 (as imgproxy takes), held at 2^30 at most: no
    /// result reaches that, so a larger value asks for the same image; nil when it is missing or empty.
    func pixels(_ index: Int) throws(ProxyError) -> Int? {
        guard has(index) else { return nil }
        guard let value = Int(arguments[index]), value >= 0 else {
            throw error("a size must be a whole number of pixels, 0 or more")
        }
        return min(value, ProxyURL.largestPixels)
    }

    func requiredPixels(_ index: Int) throws(ProxyError) -> Int {
        guard let value = try pixels(index) else { throw error("the size is empty") }
        return value
    }

    /// Argument `index` as a boolean (Go's `strconv.ParseBool` forms); nil when it is missing or empty.
    /// imgproxy reads anything else as false with a warning; here it is an error, so a typo is seen.
    func boolean(_ index: Int, _ what: String) throws(ProxyError) -> Bool? {
        guard has(index) else { return nil }
        switch arguments[index] {
        case "1", "t", "T", "true", "TRUE", "True": return true
        case "0", "f", "F", "false", "FALSE", "False": return false
        default: throw error("\(what) must be 1, t, true, 0, f or false, not \"\(arguments[index])\"")
        }
    }

    func requiredBoolean(_ index: Int, _ what: String) throws(ProxyError) -> Bool {
        guard let value = try boolean(index, what) else { throw error("\(what) is empty") }
        return value
    }

    /// Argument `index` as a decimal number (no hexadecimal, `inf` or `nan`); nil when it is missing or
    /// empty.
    func number(_ index: Int) throws(ProxyError) -> Double? {
        guard has(index) else { return nil }
        let text = arguments[index]
        guard text.allSatisfy({ "0123456789.+-eE".contains($0) }), let value = Double(text), value.isFinite else {
            throw error("\"\(text)\" is not a decimal number")
        }
        return value
    }

    /// Argument `index` as a factor in (0, `largest`].
    func factor(_ index: Int, largest: Double) throws(ProxyError) -> Double {
        guard let value = try number(index), value > 0, value <= largest else {
            throw error("the value must be a number greater than 0 and at most \(largest.formatted)")
        }
        return value
    }

    /// Argument `index` as a crop side: 0, a fraction in (0, 1) or pixels up to 2^30.
    func cropSide(_ index: Int) throws(ProxyError) -> Double {
        guard has(index) else { return 0 }
        guard let value = try number(index), value >= 0, value <= Double(ProxyURL.largestPixels) else {
            throw error("a crop side must be 0, a fraction below 1 or pixels up to \(ProxyURL.largestPixels)")
        }
        return value
    }

    /// `type[:x:y]` from argument `first` on. Focus points take exactly two offsets in 0…1; other offsets
    /// are fractions below 1 or pixels up to 2^30 either way. Smart gravity (`sm`), without offsets, only
    /// where `smart` allows it: imgproxy takes it for crops, not for placing an image on a larger canvas.
    func gravity(from first: Int, smart: Bool = false) throws(ProxyError) -> Gravity {
        let text = first < arguments.count ? arguments[first] : ""
        let offsets = arguments.count - first - 1
        if text == GravityType.smart.rawValue {
            guard smart else { throw error("smart gravity (sm) is only for crops (g, c)") }
            guard offsets == 0 else { throw error("smart gravity (sm) takes no offsets") }
            return Gravity(.smart)
        }
        guard let type = GravityType(rawValue: text) else {
            let known = smart ? "sowe, fp or sm" : "sowe or fp"
            throw error("unknown gravity \"\(text)\" (ce, no, so, ea, we, noea, nowe, soea, \(known))")
        }
        if type == .focusPoint {
            guard offsets == 2, let x = try number(first + 1), let y = try number(first + 2), (0...1).contains(x),
                (0...1).contains(y)
            else { throw error("a focus point is fp:x:y, each from 0 to 1") }
            return Gravity(type, x: x, y: y)
        }
        guard offsets <= 2 else { throw error("a gravity takes at most two offsets") }
        let limit = Double(ProxyURL.largestPixels)
        let x = try number(first + 1) ?? 0
        let y = try number(first + 2) ?? 0
        guard abs(x) <= limit, abs(y) <= limit else {
            throw error("an offset must be at most \(limit.formatted) pixels")
        }
        return Gravity(type, x: x, y: y)
    }
}

extension Double {
    /// Without a fraction when it has none: `8`, not `8.0`.
    fileprivate var formatted: String { self == rounded() && abs(self) < 1e15 ? "\(Int(self))" : "\(self)" }
}
