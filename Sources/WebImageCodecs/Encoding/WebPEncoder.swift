import CWebP
import Foundation

/// Encodes as WebP with libwebp: lossy at a quality or lossless, with alpha; an animation (more than one
/// frame) through libwebpmux's `WebPAnimEncoder`, keeping each frame's duration and the loop count.
///
/// Lossless encoding keeps the colour of fully transparent pixels too (`exact`), so every pixel decodes
/// back as it was. A still image's RGB ICC profile is embedded (ICCP chunk) unless `embedsICCProfile`
/// is off.
///
/// ```swift
/// let lossy = try WebPEncoder(quality: 80).encode(image)
/// let exact = try WebPEncoder(lossless: true).encode(image)
/// ```
public struct WebPEncoder: ImageEncoding {
    /// 1…100 for lossy encoding; for lossless, the effort spent on a smaller file. `80` by default.
    public var quality: Int
    /// Lossless (VP8L) instead of lossy (VP8). `false` by default.
    public var lossless: Bool
    /// libwebp's method, 0 (fastest) … 6 (smallest). `4` by default.
    public var method: Int
    /// Whether a still image's ICC profile is written. `true` by default.
    public var embedsICCProfile: Bool
    /// Asked from libwebp's progress hook while a still image encodes (every row of macroblocks); when it
    /// says stop, libwebp abandons the encode and `encode` throws `.stopped`. Not part of `key`: it
    /// changes whether bytes come out, never which. An animation is asked before each frame is added
    /// (`WebPAnimEncoder` has no progress hook of its own). nil by default.
    public var stopCheck: EncodeStopCheck?

    /// `.webp`.
    public var format: ImageFormat { .webp }
    /// Every parameter: `webp;q=80;lossless=0;method=4;icc=1`.
    public var key: String {
        "webp;q=\(quality);lossless=\(lossless ? 1 : 0);method=\(method);icc=\(embedsICCProfile ? 1 : 0)"
    }

    /// Creates an encoder.
    public init(
        quality: Int = 80, lossless: Bool = false, method: Int = 4, embedsICCProfile: Bool = true,
        stopCheck: EncodeStopCheck? = nil
    ) {
        self.quality = quality
        self.lossless = lossless
        self.method = method
        self.embedsICCProfile = embedsICCProfile
        self.stopCheck = stopCheck
    }

    public func encode(_ image: Image) throws -> Data {
        guard !image.frames.isEmpty else { throw ImageCodecError(.encodingFailed, "the image has no frame to encode") }
        for frame in image.frames { try EncodingCheck.check(frame) }
        guard image.frames.count > 1 else {
            let still = try encodeStill(image.frames[0])
            var chunks: [(name: String, data: Data)] = []
            if embedsICCProfile, let icc = image.iccProfile, !icc.isEmpty { chunks.append(("ICCP", icc)) }
            if let exif = image.exif, !exif.isEmpty { chunks.append(("EXIF", exif)) }
            return chunks.isEmpty ? still : try Self.adding(chunks, to: still)
        }
        return try encodeAnimation(image)
    }

    private func makeConfig() throws -> WebPConfig {
        var config = WebPConfig()
        guard WebPConfigInit(&config) != 0 else {
            throw ImageCodecError(.encodingFailed, "WebP: libwebp version mismatch")
        }
        config.quality = Float(EncodingCheck.quality(quality))
        config.lossless = lossless ? 1 : 0
        config.exact = lossless ? 1 : 0
        config.method = Int32(min(6, max(0, method)))
        guard WebPValidateConfig(&config) != 0 else { throw ImageCodecError(.encodingFailed, "WebP: invalid settings") }
        return config
    }

    /// A picture holding `frame`'s pixels (ARGB, as lossless and the animation encoder want).
    private static func picture(_ frame: ImageFrame) throws -> WebPPicture {
        var picture = WebPPicture()
        guard WebPPictureInit(&picture) != 0 else {
            throw ImageCodecError(.encodingFailed, "WebP: libwebp version mismatch")
        }
        picture.use_argb = 1
        picture.width = Int32(frame.width)
        picture.height = Int32(frame.height)
        let imported = frame.pixels.withUnsafeBufferPointer { pixels in
            WebPPictureImportRGBA(&picture, pixels.baseAddress, Int32(frame.bytesPerRow))
        }
        guard imported != 0 else {
            WebPPictureFree(&picture)
            throw ImageCodecError(.encodingFailed, "WebP: out of memory importing the pixels")
        }
        return picture
    }

    private func encodeStill(_ frame: ImageFrame) throws -> Data {
        var config = try makeConfig()
        var picture = try Self.picture(frame)
        defer { WebPPictureFree(&picture) }
        try stopCheck?.check("WebP")
        var writer = WebPMemoryWriter()
        WebPMemoryWriterInit(&writer)
        defer { WebPMemoryWriterClear(&writer) }
        let check = stopCheck
        let encoded = withUnsafeMutablePointer(to: &writer) { writerPointer -> Int32 in
            picture.writer = WebPMemoryWrite
            picture.custom_ptr = UnsafeMutableRawPointer(writerPointer)
            guard let check else { return WebPEncode(&config, &picture) }
            // `user_data` points at `check` only while WebPEncode runs inside this closure, and libwebp
            // reads it only from the progress hook, which it calls during WebPEncode alone.
            return withUnsafePointer(to: check) { checkPointer in
                picture.user_data = UnsafeMutableRawPointer(mutating: checkPointer)
                picture.progress_hook = { _, picture in
                    guard let pointer = picture?.pointee.user_data else { return 1 }
                    return pointer.assumingMemoryBound(to: EncodeStopCheck.self).pointee.shouldStopNow ? 0 : 1
                }
                defer { (picture.user_data, picture.progress_hook) = (nil, nil) }
                return WebPEncode(&config, &picture)
            }
        }
        if encoded == 0, picture.error_code == VP8_ENC_ERROR_USER_ABORT {
            throw EncodeStopCheck.stopped("WebP")
        }
        guard encoded != 0, let memory = writer.mem else {
            throw ImageCodecError(
                .encodingFailed, "WebP encoding failed (libwebp error \(picture.error_code.rawValue))")
        }
        return Data(bytes: memory, count: writer.size)
    }

    private func encodeAnimation(_ image: Image) throws -> Data {
        var config = try makeConfig()
        var options = WebPAnimEncoderOptions()
        guard WebPAnimEncoderOptionsInit(&options) != 0 else {
            throw ImageCodecError(.encodingFailed, "WebP: libwebpmux version mismatch")
        }
        options.anim_params.loop_count = Int32(max(0, image.loopCount))
        let first = image.frames[0]
        guard let encoder = WebPAnimEncoderNew(Int32(first.width), Int32(first.height), &options) else {
            throw ImageCodecError(.encodingFailed, "WebP: cannot create the animation encoder")
        }
        defer { WebPAnimEncoderDelete(encoder) }
        var timestamp = 0
        for frame in image.frames {
            guard frame.width == first.width, frame.height == first.height else {
                throw ImageCodecError(.encodingFailed, "WebP animation frames must share one size")
            }
            try stopCheck?.check("WebP")
            var picture = try Self.picture(frame)
            defer { WebPPictureFree(&picture) }
            guard WebPAnimEncoderAdd(encoder, &picture, Int32(timestamp), &config) != 0 else {
                throw ImageCodecError(.encodingFailed, "WebP animation: \(Self.error(encoder))")
            }
            timestamp += max(1, Int((frame.duration * 1000).rounded()))
        }
        guard WebPAnimEncoderAdd(encoder, nil, Int32(timestamp), nil) != 0 else {
            throw ImageCodecError(.encodingFailed, "WebP animation: \(Self.error(encoder))")
        }
        var data = WebPData()
        guard WebPAnimEncoderAssemble(encoder, &data) != 0, let bytes = data.bytes else {
            throw ImageCodecError(.encodingFailed, "WebP animation: \(Self.error(encoder))")
        }
        defer { WebPDataClear(&data) }
        return Data(bytes: bytes, count: data.size)
    }

    private static func error(_ encoder: OpaquePointer) -> String {
        WebPAnimEncoderGetError(encoder).map { String(cString: $0) } ?? "unknown error"
    }

    /// `still` with `chunks` (an ICCP profile, EXIF), through libwebpmux (which copies each chunk's bytes and
    /// writes the VP8X header they need).
    private static func adding(_ chunks: [(name: String, data: Data)], to still: Data) throws -> Data {
        try still.withUnsafeBytes { raw -> Data in
            var input = WebPData(bytes: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), size: raw.count)
            guard let mux = WebPMuxCreate(&input, 1) else {
                throw ImageCodecError(.encodingFailed, "WebP: cannot read the encoded image")
            }
            defer { WebPMuxDelete(mux) }
            for (name, data) in chunks {
                try data.withUnsafeBytes { payload in
                    var chunk = WebPData(
                        bytes: payload.baseAddress?.assumingMemoryBound(to: UInt8.self), size: payload.count)
                    guard WebPMuxSetChunk(mux, name, &chunk, 1) == WEBP_MUX_OK else {
                        throw ImageCodecError(.encodingFailed, "WebP: cannot add the \(name) chunk")
                    }
                }
            }
            var output = WebPData()
            guard WebPMuxAssemble(mux, &output) == WEBP_MUX_OK, let bytes = output.bytes else {
                throw ImageCodecError(.encodingFailed, "WebP: cannot assemble the image with its metadata")
            }
            defer { WebPDataClear(&output) }
            return Data(bytes: bytes, count: output.size)
        }
    }
}
