import CJXL
import Foundation

/// Encodes as JPEG XL with libjxl's encoder: lossy at a quality, lossless at quality 100, alpha, and
/// animations (each frame's duration in milliseconds, the loop count as the animation's `num_loops`).
///
/// Quality maps to libjxl's Butteraugli distance as `cjxl -q` and libjxl 0.9's
/// `JxlEncoderDistanceFromQuality` map it (libjxl 0.7, which Debian 12 ships, has no such call): 100 is
/// lossless (distance 0, modular mode); 30…99 give `0.1 + (100 − quality) × 0.09` (90 → 1.0, visually
/// lossless; 80 → 1.9); below 30, `53/3000 × q² − 23/20 × q + 25`, capped at 15, libjxl 0.7's largest
/// distance. An image with no pixel below full alpha is written without an alpha channel. A still image's
/// RGB ICC profile is embedded unless `embedsICCProfile` is off; otherwise the pixels are labelled sRGB.
///
/// Stopping: libjxl 0.7 has no progress hook, and its encoder aborts the process when its parallel runner
/// reports a failure (`JXL_CHECK` around the runner), so a stop cannot come from inside a frame. The stop
/// check is asked before each frame is handed to libjxl and encoded, so an animation stops between frames
/// and a still image before its encode starts. One thread per encode (no parallel runner).
///
/// ```swift
/// let lossy = try JXLEncoder(quality: 80).encode(image)
/// let exact = try JXLEncoder(quality: 100).encode(image)
/// ```
public struct JXLEncoder: ImageEncoding {
    /// 1…100; 100 is lossless. `80` by default.
    public var quality: Int
    /// libjxl's effort, 1 (fastest) … 9 (smallest). `7` by default, libjxl's own.
    public var effort: Int
    /// Whether the image's ICC profile is written. `true` by default.
    public var embedsICCProfile: Bool
    /// Asked before each frame is encoded; when it says stop, `encode` throws `.stopped`. Not part of
    /// `key`. nil by default.
    public var stopCheck: EncodeStopCheck?

    /// `.jxl`.
    public var format: ImageFormat { .jxl }
    /// Every parameter: `jxl;q=80;effort=7;icc=1`.
    public var key: String { "jxl;q=\(quality);effort=\(effort);icc=\(embedsICCProfile ? 1 : 0)" }

    /// Creates an encoder.
    public init(quality: Int = 80, effort: Int = 7, embedsICCProfile: Bool = true, stopCheck: EncodeStopCheck? = nil) {
        self.quality = quality
        self.effort = effort
        self.embedsICCProfile = embedsICCProfile
        self.stopCheck = stopCheck
    }

    /// libjxl's distance for `quality` (clamped to 1…100), as described above; 0 for lossless.
    public static func distance(forQuality quality: Int) -> Float {
        let q = Float(EncodingCheck.quality(quality))
        if q >= 100 { return 0 }
        if q >= 30 { return 0.1 + (100 - q) * 0.09 }
        return min(15, 53 / 3000 * q * q - 23 / 20 * q + 25)
    }

    /// Encodes every frame of `image`.
    ///
    /// - Throws: `ImageCodecError` `.encodingFailed` when the image has no frame, its frames differ in size
    ///   or a frame's size and pixel buffer disagree, or libjxl fails; `.stopped` when `stopCheck` says stop.
    public func encode(_ image: Image) throws -> Data {
        _ = try EncodingCheck.frames(image, format: "JPEG XL")
        try stopCheck?.check("JPEG XL")
        guard let encoder = JxlEncoderCreate(nil) else {
            throw ImageCodecError(.encodingFailed, "JPEG XL: cannot create the encoder (out of memory)")
        }
        defer { JxlEncoderDestroy(encoder) }
        let alpha = image.frames.contains(where: Self.hasTransparency)
        let lossless = EncodingCheck.quality(quality) == 100
        try setHeader(of: image, alpha: alpha, lossless: lossless, encoder)
        guard let settings = JxlEncoderFrameSettingsCreate(encoder, nil) else {
            throw Self.failure("cannot create the frame settings", encoder)
        }
        try Self.check(
            JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_EFFORT, Int64(min(9, max(1, effort)))),
            encoder, "the effort")
        if lossless {
            try Self.check(JxlEncoderSetFrameLossless(settings, JXL_TRUE), encoder, "lossless mode")
        } else {
            try Self.check(
                JxlEncoderSetFrameDistance(settings, Self.distance(forQuality: quality)), encoder, "the distance")
        }
        var output = Data()
        let channels = alpha ? 4 : 3
        var pixelFormat = JxlPixelFormat(
            num_channels: UInt32(channels), data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
        for (index, frame) in image.frames.enumerated() {
            try stopCheck?.check("JPEG XL")
            if image.frames.count > 1 {
                var header = JxlFrameHeader()
                JxlEncoderInitFrameHeader(&header)
                let milliseconds = ((frame.duration.isFinite ? max(0, frame.duration) : 0) * 1000).rounded()
                header.duration = UInt32(min(milliseconds, Double(UInt32.max)))
                try Self.check(JxlEncoderSetFrameHeader(settings, &header), encoder, "a frame header")
            }
            let pixels = Self.packed(frame, channels: channels)
            try pixels.withUnsafeBytes { raw in
                try Self.check(
                    JxlEncoderAddImageFrame(settings, &pixelFormat, raw.baseAddress, raw.count), encoder, "a frame")
            }
            if index == image.frames.count - 1 { JxlEncoderCloseInput(encoder) }
            // Encoding each frame as it is added keeps a stop point between frames, wherever libjxl does
            // the work (on adding or on output).
            try Self.drain(encoder, into: &output)
        }
        return output
    }

    /// The basic info (size, channels, animation) and the colour encoding.
    private func setHeader(of image: Image, alpha: Bool, lossless: Bool, _ encoder: OpaquePointer) throws {
        let first = image.frames[0]
        var info = JxlBasicInfo()
        JxlEncoderInitBasicInfo(&info)
        info.xsize = UInt32(first.width)
        info.ysize = UInt32(first.height)
        info.bits_per_sample = 8
        info.num_color_channels = 3
        info.alpha_bits = alpha ? 8 : 0
        info.num_extra_channels = alpha ? 1 : 0
        // Lossless needs the pixels kept in their own colour space, not converted to XYB.
        info.uses_original_profile = lossless ? JXL_TRUE : JXL_FALSE
        if image.frames.count > 1 {
            info.have_animation = JXL_TRUE
            info.animation.tps_numerator = 1000  // ticks are milliseconds
            info.animation.tps_denominator = 1
            info.animation.num_loops = UInt32(clamping: max(0, image.loopCount))
        }
        try Self.check(JxlEncoderSetBasicInfo(encoder, &info), encoder, "the image header")
        if alpha {
            var channel = JxlExtraChannelInfo()
            JxlEncoderInitExtraChannelInfo(JXL_CHANNEL_ALPHA, &channel)
            channel.bits_per_sample = 8
            try Self.check(JxlEncoderSetExtraChannelInfo(encoder, 0, &channel), encoder, "the alpha channel")
        }
        if embedsICCProfile, let icc = image.iccProfile, !icc.isEmpty {
            try icc.withUnsafeBytes { raw in
                try Self.check(
                    JxlEncoderSetICCProfile(encoder, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count),
                    encoder, "the ICC profile")
            }
        } else {
            var color = JxlColorEncoding()
            JxlColorEncodingSetToSRGB(&color, JXL_FALSE)
            try Self.check(JxlEncoderSetColorEncoding(encoder, &color), encoder, "the colour encoding")
        }
    }

    /// Whether any pixel of `frame` is less than opaque.
    private static func hasTransparency(_ frame: ImageFrame) -> Bool {
        frame.pixels.withUnsafeBufferPointer { pixels in
            for y in 0..<frame.height {
                let row = y * frame.bytesPerRow
                for x in 0..<frame.width where pixels[row + x * 4 + 3] != 255 { return true }
            }
            return false
        }
    }

    /// `frame`'s pixels as tightly packed rows of `channels` (3: RGB, 4: RGBA) bytes a pixel.
    private static func packed(_ frame: ImageFrame, channels: Int) -> [UInt8] {
        if channels == 4, frame.bytesPerRow == frame.width * 4 {
            return Array(frame.pixels.prefix(frame.height * frame.bytesPerRow))
        }
        var result = [UInt8](repeating: 0, count: frame.width * frame.height * channels)
        frame.pixels.withUnsafeBufferPointer { pixels in
            var out = 0
            for y in 0..<frame.height {
                var offset = y * frame.bytesPerRow
                for _ in 0..<frame.width {
                    for channel in 0..<channels { result[out + channel] = pixels[offset + channel] }
                    out += channels
                    offset += 4
                }
            }
        }
        return result
    }

    /// Runs `JxlEncoderProcessOutput` until it has written everything added so far.
    private static func drain(_ encoder: OpaquePointer, into output: inout Data) throws {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            var written = 0
            let status = chunk.withUnsafeMutableBufferPointer { buffer -> JxlEncoderStatus in
                var next = buffer.baseAddress
                var available = buffer.count
                let status = JxlEncoderProcessOutput(encoder, &next, &available)
                written = buffer.count - available
                return status
            }
            output.append(contentsOf: chunk.prefix(written))
            switch status {
            case JXL_ENC_SUCCESS: return
            case JXL_ENC_NEED_MORE_OUTPUT: continue
            default: throw failure("the encode failed", encoder)
            }
        }
    }

    private static func check(_ status: JxlEncoderStatus, _ encoder: OpaquePointer, _ what: String) throws {
        guard status == JXL_ENC_SUCCESS else { throw failure("cannot set \(what)", encoder) }
    }

    private static func failure(_ what: String, _ encoder: OpaquePointer) -> ImageCodecError {
        let code = JxlEncoderGetError(encoder)
        let reason =
            switch code {
            case JXL_ENC_ERR_OOM: "out of memory"
            case JXL_ENC_ERR_BAD_INPUT: "bad input"
            case JXL_ENC_ERR_NOT_SUPPORTED: "not supported"
            case JXL_ENC_ERR_API_USAGE: "API misuse"
            default: "libjxl error \(code.rawValue)"
            }
        return ImageCodecError(.encodingFailed, "JPEG XL: \(what): \(reason)")
    }
}
