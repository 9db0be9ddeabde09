import WebImageCodecs

/// `trim`: the background around the image cut off before anything else (imgproxy's `trim`,
/// imgproxy-docs `docs/usage/processing.mdx`); `ImageTrim` finds what to keep.
///
/// ```swift
/// var trim = TrimOption(threshold: 10)  // t:10, the top left pixel's colour is the background
/// trim.color = ImageColor(red: 255, green: 0, blue: 255)  // t:10:ff00ff, transparent background
/// ```
public struct TrimOption: Sendable, Hashable {
    /// How far a channel may be from the background colour and still be background, 0…255 (a pixel is
    /// kept when the median of its 3×3 neighbourhood is further than this in any channel); nil turns trim
    /// off. nil by default.
    public var threshold: Double?
    /// The background colour (opaque); nil takes the colour of the top left pixel. Transparent pixels are
    /// magenta (`ff00ff`) for the comparison, as imgproxy flattens them. nil by default.
    public var color: ImageColor?
    /// Whether the left and right cuts are made equal, the smaller of the two. `false` by default.
    public var equalHorizontal: Bool
    /// Whether the top and bottom cuts are made equal, the smaller of the two. `false` by default.
    public var equalVertical: Bool

    /// A trim; off by default.
    public init(
        threshold: Double? = nil, color: ImageColor? = nil, equalHorizontal: Bool = false, equalVertical: Bool = false
    ) {
        self.threshold = threshold
        self.color = color
        self.equalHorizontal = equalHorizontal
        self.equalVertical = equalVertical
    }

    /// Whether the step runs: imgproxy trims when a threshold is given.
    public var isEnabled: Bool { threshold != nil }

    /// `t:threshold:rrggbb:h:v` (an empty colour for the top left pixel's), or nil when off.
    var canonical: String? {
        guard let threshold else { return nil }
        let color = self.color.map { String($0.description.dropFirst().prefix(6)) } ?? ""
        return "t:\(threshold):\(color):\(equalHorizontal ? 1 : 0):\(equalVertical ? 1 : 0)"
    }
}

/// `trim`/`t`: `threshold[:color[:equal_hor[:equal_ver]]]`, the threshold 0…255, the colour `rgb` or
/// `rrggbb` in hexadecimal, the two others booleans.
extension ProxyURL {
    /// Applies `trim`; false when `parser` names another option. An empty threshold turns trim off and an
    /// empty colour takes the top left pixel's, as in imgproxy.
    static func applyTrimOption(_ parser: OptionArguments, to options: inout ProcessingOptions)
        throws(ProxyError) -> Bool
    {
        guard parser.name == "t" || parser.name == "trim" else { return false }
        try parser.count(1...4)
        var trim = options.trim
        if parser.has(0) {
            // imgproxy takes any number; past 0…255 every pixel or none would count as background.
            guard let threshold = try parser.number(0), (0...255).contains(threshold) else {
                throw parser.error("the threshold must be a number from 0 to 255")
            }
            trim.threshold = threshold
        } else {
            trim.threshold = nil
        }
        trim.color = parser.has(1) ? try parser.hexColor(1) : nil
        if let equal = try parser.boolean(2, "equal_hor") { trim.equalHorizontal = equal }
        if let equal = try parser.boolean(3, "equal_ver") { trim.equalVertical = equal }
        options.trim = trim
        return true
    }
}

extension OptionArguments {
    /// Argument `index` as an opaque colour in hexadecimal, `rgb` or `rrggbb` (imgproxy's forms).
    func hexColor(_ index: Int) throws(ProxyError) -> ImageColor {
        let text = arguments[index]
        let digits = text.compactMap(\.hexDigitValue)
        guard digits.count == text.count, text.allSatisfy(\.isASCII), digits.count == 3 || digits.count == 6 else {
            throw error("\"\(text)\" is not a colour in hexadecimal (rgb or rrggbb)")
        }
        var channels: [UInt8] = []
        if digits.count == 3 {
            for digit in digits { channels.append(UInt8(digit * 17)) }
        } else {
            for index in stride(from: 0, to: 6, by: 2) {
                channels.append(UInt8(digits[index] * 16 + digits[index + 1]))
            }
        }
        return ImageColor(red: channels[0], green: channels[1], blue: channels[2])
    }
}
