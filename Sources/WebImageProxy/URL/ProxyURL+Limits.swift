/// imgproxy's per-URL security options (imgproxy-docs `docs/usage/processing.mdx`, "Max src resolution" to
/// "Max result dimension"): a URL's own bounds on its source and result, in place of the server's
/// `--max-…` flags. They redefine a security restriction, so the proxy answers a URL using any of them with
/// 403 unless `ImageProxyConfiguration.allowsSecurityOptions` is on (imgproxy's
/// `IMGPROXY_ALLOW_SECURITY_OPTIONS`), presets included.
///
/// Unlike imgproxy's, these only tighten: each is held at the server's own limit, which stays the bound
/// every request's memory is planned by (the README's per-job memory bound), so a URL may ask for a smaller
/// source, fewer frames or a smaller result, never for more. A value at or over the server's changes
/// nothing; imgproxy's `0` for "no limit" (`msfs`, `mrd`, `mafr`) is the server's limit here.
///
/// ```swift
/// var limits = LimitOptions()
/// limits.maximumSourceBytes = 1 << 20  // msfs:1048576
/// limits.resultDimension(under: 8192)  // 8192: mrd is not set
/// ```
public struct LimitOptions: Sendable, Hashable {
    /// `max_src_resolution`: the most pixels the source may declare (imgproxy's megapixels, as pixels),
    /// all frames together for a result that keeps an animation, as the server's limit counts them; `0`
    /// refuses every source, as imgproxy's does. nil (the server's) by default.
    public var maximumSourcePixels: Int?
    /// `max_src_file_size`: the largest source body in bytes; the download stops there. nil or `0` (the
    /// server's) by default.
    public var maximumSourceBytes: Int64?
    /// `max_animation_frames`: the most frames an animated source may have, 1 or more; a source with more
    /// is answered 422, as the server's `--max-animation-frames` does (imgproxy instead keeps the first
    /// frames, which here would be a silently shorter animation). nil (the server's) by default.
    public var maximumAnimationFrames: Int?
    /// `max_animation_frame_resolution`: the most pixels one frame of an animation may have when the result
    /// keeps the animation (imgproxy's megapixels, as pixels); a larger one is answered 422. It is checked
    /// besides the source pixel limit, never instead of it (imgproxy checks it instead). nil or `0` (no
    /// such check, as imgproxy's default) by default.
    public var maximumAnimationFramePixels: Int?
    /// `max_result_dimension`: the largest side of a result; a larger one is scaled down as a whole, as the
    /// server's `--max-result-dimension` does. nil or `0` (the server's) by default.
    public var maximumResultDimension: Int?

    /// No per-URL limits.
    public init() {}

    /// Whether the URL set any of them: the options `allowsSecurityOptions` must allow.
    public var isSet: Bool { self != LimitOptions() }

    /// The largest result side under the server's `limit`.
    public func resultDimension(under limit: Int) -> Int { Self.lower(maximumResultDimension, under: limit) }

    /// The most animation frames under the server's `limit`.
    public func animationFrames(under limit: Int) -> Int { Self.lower(maximumAnimationFrames, under: limit) }

    /// The most source pixels under the server's `limit`; `0` stays `0`.
    public func sourcePixels(under limit: Int) -> Int { min(limit, maximumSourcePixels ?? limit) }

    /// The largest source body under the server's `limit`.
    public func sourceBytes(under limit: Int64) -> Int64 {
        guard let bytes = maximumSourceBytes, bytes > 0 else { return limit }
        return min(limit, bytes)
    }

    /// `value` when it is set, above 0 and below `limit`, else `limit`.
    private static func lower(_ value: Int?, under limit: Int) -> Int {
        guard let value, value > 0 else { return limit }
        return min(limit, value)
    }

    /// The limits that are set, spelled as their short options (`msr:16800000/msfs:1048576`), for the
    /// canonical options: a URL's limits change what it may answer, so they are part of its ETag and its
    /// result cache key.
    var canonical: [String] {
        var parts: [String] = []
        if let maximumSourcePixels { parts.append("msr:\(maximumSourcePixels)") }
        if let maximumSourceBytes { parts.append("msfs:\(maximumSourceBytes)") }
        if let maximumAnimationFrames { parts.append("maf:\(maximumAnimationFrames)") }
        if let maximumAnimationFramePixels { parts.append("mafr:\(maximumAnimationFramePixels)") }
        if let maximumResultDimension { parts.append("mrd:\(maximumResultDimension)") }
        return parts
    }
}

/// The limit options and `preserve_hdr`, with imgproxy's names and argument forms:
///
/// | Option | Argument |
/// |---|---|
/// | `max_src_resolution`, `msr`; `max_animation_frame_resolution`, `mafr` | megapixels, a decimal, 0 or more |
/// | `max_src_file_size`, `msfs` | bytes, 0 or more |
/// | `max_animation_frames`, `maf` | frames, 1 or more |
/// | `max_result_dimension`, `mrd` | pixels, 0 or more |
/// | `preserve_hdr`, `ph` | a boolean |
extension ProxyURL {
    /// Applies one limit option or `preserve_hdr`; false when `parser` names another option. An empty or
    /// missing argument is an error, as in imgproxy; a number past what the server could ever allow is
    /// held at a bound far above any limit, so it asks for the same as the server's.
    static func applyLimitOption(_ parser: OptionArguments, to options: inout ProcessingOptions)
        throws(ProxyError) -> Bool
    {
        var limits = options.limits
        switch parser.name {
        case "msr", "max_src_resolution":
            limits.maximumSourcePixels = try parser.megapixels()
        case "msfs", "max_src_file_size":
            limits.maximumSourceBytes = Int64(try parser.wholeNumber(from: 0))
        case "maf", "max_animation_frames":
            limits.maximumAnimationFrames = try parser.wholeNumber(from: 1)
        case "mafr", "max_animation_frame_resolution":
            limits.maximumAnimationFramePixels = try parser.megapixels()
        case "mrd", "max_result_dimension":
            limits.maximumResultDimension = try parser.wholeNumber(from: 0)
        case "ph", "preserve_hdr":
            try parser.count(1...1)
            options.preserveHDR = try parser.requiredBoolean(0, "preserve_hdr")
        default:
            return false
        }
        options.limits = limits
        return true
    }

    /// The largest number a limit option keeps: 2^50, past every byte, pixel and frame count a server
    /// could be configured to allow, and small enough that a megapixel count times a million stays exact.
    static let largestLimit = 1 << 50
}

extension OptionArguments {
    /// The one argument as a whole number of at least `smallest`, held at `ProxyURL.largestLimit`.
    fileprivate func wholeNumber(from smallest: Int) throws(ProxyError) -> Int {
        try count(1...1)
        let text = arguments[0]
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw error("the value must be a whole number, \(smallest) or more")
        }
        // All digits: only a number past `Int` fails to convert.
        let value = Int(text) ?? Int.max
        guard value >= smallest else { throw error("the value must be a whole number, \(smallest) or more") }
        return min(value, ProxyURL.largestLimit)
    }

    /// The one argument as megapixels (a decimal, 0 or more), in pixels, rounded down as imgproxy's
    /// `int(f*1000000)` does, held at `ProxyURL.largestLimit`.
    fileprivate func megapixels() throws(ProxyError) -> Int {
        try count(1...1)
        guard let value = try number(0), value >= 0 else {
            throw error("the value must be megapixels, a decimal number 0 or more")
        }
        return Int(min(value * 1_000_000, Double(ProxyURL.largestLimit)))
    }
}
