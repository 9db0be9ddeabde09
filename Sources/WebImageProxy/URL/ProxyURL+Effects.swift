import WebImageCodecs

extension ProxyURL {
    /// Applies one effect option (`bg`, `bl`, `sh`, `pix`, `fl`; imgproxy-docs, `docs/usage/processing.mdx`);
    /// false when `parser` names none of them.
    static func applyEffectOption(_ parser: OptionArguments, to options: inout ProcessingOptions)
        throws(ProxyError) -> Bool
    {
        switch parser.name {
        case "bg", "background":
            try parser.count(1...3)
            options.effects.background = try parser.backgroundColour()
        case "bl", "blur":
            try parser.count(1...1)
            options.effects.blur = try parser.sigma(0)
        case "sh", "sharpen":
            try parser.count(1...1)
            options.effects.sharpen = try parser.sigma(0)
        case "pix", "pixelate":
            try parser.count(1...1)
            guard let size = Int(parser.arguments[0]), size >= 0 else {
                throw parser.error("the block size must be a whole number of pixels, 0 or more")
            }
            // A block is cut to the result's longer side, so a larger one asks for the same image.
            options.effects.pixelate = min(size, ProxyURL.largestPixels)
        case "fl", "flip":
            try parser.count(1...2)
            if let horizontal = try parser.boolean(0, "horizontal") { options.effects.flipHorizontal = horizontal }
            if let vertical = try parser.boolean(1, "vertical") { options.effects.flipVertical = vertical }
        default:
            return false
        }
        return true
    }
}

extension OptionArguments {
    /// `R:G:B` (each 0…255) or a hex colour (`rgb` or `rrggbb`); nil for one empty argument, which turns the
    /// background off.
    func backgroundColour() throws(ProxyError) -> ImageColor? {
        if arguments.count == 1 {
            let text = arguments[0]
            if text.isEmpty { return nil }
            guard text.count == 3 || text.count == 6, text.allSatisfy(\.isHexDigit), let value = Int(text, radix: 16)
            else { throw error("\"\(text)\" is not a hex colour (rgb or rrggbb)") }
            if text.count == 3 {
                return ImageColor(
                    red: UInt8((value >> 8) * 17), green: UInt8((value >> 4 & 15) * 17), blue: UInt8((value & 15) * 17))
            }
            return ImageColor(red: UInt8(value >> 16), green: UInt8(value >> 8 & 255), blue: UInt8(value & 255))
        }
        guard arguments.count == 3 else { throw error("the colour is R:G:B or a hex colour") }
        var channels: [UInt8] = []
        for (index, name) in ["R", "G", "B"].enumerated() {
            let text = arguments[index]
            guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let value = UInt8(text) else {
                throw error("\(name) must be a whole number from 0 to 255, not \"\(text)\"")
            }
            channels.append(value)
        }
        return ImageColor(red: channels[0], green: channels[1], blue: channels[2])
    }

    /// Argument `index` as a blur or sharpen sigma: 0 (off) up to `EffectOptions.largestSigma`.
    func sigma(_ index: Int) throws(ProxyError) -> Double {
        guard let value = try number(index), value >= 0, value <= EffectOptions.largestSigma else {
            throw error("the sigma must be a number from 0 to \(Int(EffectOptions.largestSigma))")
        }
        return value
    }
}
