import CWebP
import Foundation

/// Decodes WebP with libwebp: lossy, lossless, alpha, and animations through libwebpdemux's
/// `WebPAnimDecoder`, straight to RGBA8 (unpremultiplied).
///
/// Still images decode straight into the final buffer and scale while decoding (`use_scaling`) for
/// thumbnails and scale-down, so the full-size bitmap is never allocated. Animated frames come composed on
/// the canvas; their duration is the difference between consecutive end timestamps (10 ms or less shows
/// as 0.1 s, as browsers do). The orientation in a VP8X file's EXIF chunk (else its XMP chunk's
/// `tiff:Orientation`) is applied unless `ImageDecodingOptions.preserveOrientation` is set. Truncated still
/// images give the rows that arrived with `isPartial == true`. Its incremental decoder is libwebp's
/// `WebPIDecoder`; the EXIF chunk follows the image data, so its partial images show the pixels as stored,
/// and an oriented file's final image is decoded again in one shot.
///
/// Colour: an ICC profile in the ICCP chunk is applied as `ImageDecodingOptions.colorSpace` asks.
///
/// This file is the only one that calls libwebp.
public struct WebPDecoder: ImageDecoding {
    /// Creates the decoder; it holds no state.
    public init() {}

    /// Whether `data` is a RIFF container of form type WEBP.
    public func canDecode(_ data: Data) -> Bool { ImageFormat.detect(data) == .webp }

    /// Decodes `data`.
    public func decode(_ data: Data, options: ImageDecodingOptions) throws -> Image {
        guard !data.isEmpty else { throw DecodingFailure.emptyData() }
        let orientation = Self.exifOrientation(data)
        var image = try decodePixels(data, options: options, orientation: orientation)
        ColorManagement.apply(Self.iccProfile(data).map { .icc($0) }, to: &image, options: options)
        image.orient(orientation, options: options)
        return image
    }

    private func decodePixels(_ data: Data, options: ImageDecodingOptions, orientation: Int) throws -> Image {
        return try data.withUnsafeBytes { raw -> Image in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                throw DecodingFailure.emptyData()
            }
            var features = WebPBitstreamFeatures()
            let status = WebPGetFeatures(base, raw.count, &features)
            guard status == VP8_STATUS_OK else {
                throw DecodingFailure.badImageData("WebP header unreadable: \(Self.describe(status))")
            }
            let sizing = try DecodeSizing(
                width: Int(features.width), height: Int(features.height), format: .webp, options: options,
                orientation: orientation)
            if features.has_animation != 0 {
                return try decodeAnimation(
                    base, raw.count, sizing: sizing, hasAlpha: features.has_alpha != 0, options: options)
            }
            return try decodeStill(
                base, raw.count, sizing: sizing, hasAlpha: features.has_alpha != 0, options: options)
        }
    }

    /// libwebp's `WebPIDecoder`, fed the new bytes of each update.
    public func makeIncrementalDecoder(options: ImageDecodingOptions) -> any ImageIncrementalDecoding {
        WebPIncrementalDecoder(options: options)
    }

    private func decodeStill(
        _ base: UnsafePointer<UInt8>, _ length: Int, sizing: DecodeSizing, hasAlpha: Bool,
        options: ImageDecodingOptions
    ) throws -> Image {
        var config = WebPDecoderConfig()
        guard WebPInitDecoderConfig(&config) != 0 else {
            throw DecodingFailure.badImageData("WebP: libwebp version mismatch")
        }
        let size = sizing.target
        let bytes = PixelMemory.bytes(size)
        let claim = try PixelMemory.claim(bytes, largest: bytes, options: options, for: "WebP \(sizing.original)")
        defer { claim.release() }
        Self.configure(&config, output: size, original: sizing.original)
        let stride = size.width * 4
        var status = VP8_STATUS_OK
        do {
            let pixels = [UInt8](unsafeUninitializedCapacity: stride * size.height) { buffer, count in
                config.output.u.RGBA.rgba = buffer.baseAddress
                config.output.u.RGBA.size = buffer.count
                status = WebPDecode(base, length, &config)
                count = status == VP8_STATUS_OK ? stride * size.height : 0
            }
            WebPFreeDecBuffer(&config.output)
            if status == VP8_STATUS_OK {
                let frame = ImageFrame(width: size.width, height: size.height, bytesPerRow: stride, pixels: pixels)
                return Self.image(
                    frame, sizing: sizing, hasAlpha: hasAlpha, isPartial: false)
            }
        }
        guard status == VP8_STATUS_NOT_ENOUGH_DATA else {
            throw DecodingFailure.badImageData("WebP undecodable: \(Self.describe(status))")
        }
        // Truncated: the incremental decoder tells how many rows the bytes that did arrive hold. Its bitmap
        // takes the place of the one above (freed with its scope); the copy handed out needs a second claim,
        // which does not wait, since this decode already holds memory.
        let copyClaim = try PixelMemory.claim(
            bytes, largest: bytes, options: options.forPartialDecode, for: "WebP \(sizing.original)")
        defer { copyClaim.release() }
        guard let partial = WebPIncrementalState(output: size, original: sizing.original) else {
            throw DecodingFailure.badImageData("WebP: out of memory")
        }
        _ = partial.append(base, length)
        guard partial.rowsDecoded > 0 else {
            throw DecodingFailure.badImageData("WebP data ends before any row (\(length) bytes)")
        }
        let frame = ImageFrame(
            width: size.width, height: size.height, bytesPerRow: stride, pixels: partial.copyPixels())
        return Self.image(frame, sizing: sizing, hasAlpha: hasAlpha, isPartial: true)
    }

    private func decodeAnimation(
        _ base: UnsafePointer<UInt8>, _ length: Int, sizing: DecodeSizing, hasAlpha: Bool,
        options: ImageDecodingOptions
    ) throws -> Image {
        var animationOptions = WebPAnimDecoderOptions()
        guard WebPAnimDecoderOptionsInit(&animationOptions) != 0 else {
            throw DecodingFailure.badImageData("WebP: libwebpdemux version mismatch")
        }
        animationOptions.color_mode = MODE_RGBA
        animationOptions.use_threads = 0
        var webpData = WebPData(bytes: base, size: length)
        // libwebp's two canvases (current and previous frame) and the copy each frame is taken from, unless
        // that copy is the frame kept.
        let final = sizing.target
        let plan = sizing.animationPlan(
            declaredFrames: Self.frameCount(base, length), canvases: final == sizing.original ? 2 : 3,
            options: options)
        let claim = try PixelMemory.claim(
            plan.bytes, largest: PixelMemory.bytes(sizing.original), options: options,
            for: "WebP animation \(sizing.original) × \(plan.frames) frames")
        defer { claim.release() }
        // The canvas size was checked against the limits (DecodeSizing) and claimed before the decoder
        // allocates it.
        guard let decoder = WebPAnimDecoderNew(&webpData, &animationOptions) else {
            throw DecodingFailure.badImageData("WebP animation unreadable")
        }
        defer { WebPAnimDecoderDelete(decoder) }
        var info = WebPAnimInfo()
        guard WebPAnimDecoderGetInfo(decoder, &info) != 0 else {
            throw DecodingFailure.badImageData("WebP animation info unreadable")
        }
        let canvas = PixelSize(width: Int(info.canvas_width), height: Int(info.canvas_height))
        guard canvas == sizing.original else {
            throw DecodingFailure.badImageData("WebP animation canvas disagrees with its header")
        }
        var frames: [ImageFrame] = []
        var previousTimestamp: Int32 = 0
        while WebPAnimDecoderHasMoreFrames(decoder) != 0 {
            if frames.count >= plan.frames { break }
            var buffer: UnsafeMutablePointer<UInt8>?
            var timestamp: Int32 = 0
            guard WebPAnimDecoderGetNext(decoder, &buffer, &timestamp) != 0, let buffer else { break }
            let milliseconds = Int(timestamp) - Int(previousTimestamp)
            previousTimestamp = timestamp
            let pixels = Array(UnsafeBufferPointer(start: buffer, count: canvas.width * canvas.height * 4))
            let frame = ImageFrame(
                width: canvas.width, height: canvas.height, bytesPerRow: canvas.width * 4, pixels: pixels,
                duration: milliseconds <= 10 ? 0.1 : Double(milliseconds) / 1000)
            frames.append(PixelResampler.resample(frame, to: final))
        }
        guard !frames.isEmpty else { throw DecodingFailure.badImageData("WebP animation has no decodable frame") }
        let frameCount = Int(info.frame_count)
        let isPartial = frames.count < min(frameCount, plan.frames)
        return Image(
            format: .webp, width: final.width, height: final.height, originalWidth: sizing.original.width,
            originalHeight: sizing.original.height, frames: frames, frameCount: frameCount,
            loopCount: Int(info.loop_count), hasAlpha: hasAlpha, isPartial: isPartial)
    }

    /// The frame count a WebP file's header declares (0 when its chunks cannot be read), without decoding.
    fileprivate static func frameCount(_ base: UnsafePointer<UInt8>, _ length: Int) -> Int {
        var webpData = WebPData(bytes: base, size: length)
        var state = WEBP_DEMUX_PARSING_HEADER
        guard let demux = WebPDemuxPartial(&webpData, &state) else { return 0 }
        defer { WebPDemuxDelete(demux) }
        return Int(WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT))
    }

    /// RGBA output into caller memory, scaled while decoding when `output` differs from `original`.
    fileprivate static func configure(_ config: inout WebPDecoderConfig, output: PixelSize, original: PixelSize) {
        config.output.colorspace = MODE_RGBA
        config.output.is_external_memory = 1
        config.output.u.RGBA.stride = Int32(output.width * 4)
        if output != original {
            config.options.use_scaling = 1
            config.options.scaled_width = Int32(output.width)
            config.options.scaled_height = Int32(output.height)
        }
    }

    fileprivate static func image(
        _ frame: ImageFrame, sizing: DecodeSizing, hasAlpha: Bool, isPartial: Bool
    ) -> Image {
        Image(
            format: .webp, width: frame.width, height: frame.height, originalWidth: sizing.original.width,
            originalHeight: sizing.original.height, frames: [frame], hasAlpha: hasAlpha, isPartial: isPartial)
    }

    /// The ICC profile in the ICCP chunk of a VP8X file; nil when absent.
    fileprivate static func iccProfile(_ data: Data) -> Data? {
        data.withUnsafeBytes { raw -> Data? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var webpData = WebPData(bytes: base, size: raw.count)
            var state = WEBP_DEMUX_PARSING_HEADER
            guard let demux = WebPDemuxPartial(&webpData, &state) else { return nil }
            defer { WebPDemuxDelete(demux) }
            guard WebPDemuxGetI(demux, WEBP_FF_FORMAT_FLAGS) & ICCP_FLAG.rawValue != 0 else { return nil }
            var iterator = WebPChunkIterator()
            guard WebPDemuxGetChunk(demux, "ICCP", 1, &iterator) != 0 else { return nil }
            defer { WebPDemuxReleaseChunkIterator(&iterator) }
            guard let bytes = iterator.chunk.bytes, iterator.chunk.size > 0 else { return nil }
            return Data(bytes: bytes, count: iterator.chunk.size)
        }
    }

    /// The orientation in the EXIF chunk of a VP8X file, else in its XMP chunk; 1 when absent.
    fileprivate static func exifOrientation(_ data: Data) -> Int {
        data.withUnsafeBytes { raw -> Int in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return 1 }
            var webpData = WebPData(bytes: base, size: raw.count)
            guard let demux = WebPDemux(&webpData) else { return 1 }
            defer { WebPDemuxDelete(demux) }
            let flags = WebPDemuxGetI(demux, WEBP_FF_FORMAT_FLAGS)
            func chunk(_ fourCC: String) -> Data? {
                var iterator = WebPChunkIterator()
                guard WebPDemuxGetChunk(demux, fourCC, 1, &iterator) != 0 else { return nil }
                defer { WebPDemuxReleaseChunkIterator(&iterator) }
                guard let bytes = iterator.chunk.bytes else { return nil }
                return Data(bytes: bytes, count: iterator.chunk.size)
            }
            if flags & EXIF_FLAG.rawValue != 0, let exif = chunk("EXIF"),
                let value = EXIFOrientation.tiffOrientation(exif)
            {
                return value
            }
            if flags & XMP_FLAG.rawValue != 0, let xmp = chunk("XMP "), let value = EXIFOrientation.fromXMP(xmp) {
                return value
            }
            return 1
        }
    }

    fileprivate static func describe(_ status: VP8StatusCode) -> String {
        switch status {
        case VP8_STATUS_OUT_OF_MEMORY: "out of memory"
        case VP8_STATUS_INVALID_PARAM: "invalid parameter"
        case VP8_STATUS_BITSTREAM_ERROR: "bitstream error"
        case VP8_STATUS_UNSUPPORTED_FEATURE: "unsupported feature"
        case VP8_STATUS_SUSPENDED: "suspended"
        case VP8_STATUS_USER_ABORT: "aborted"
        case VP8_STATUS_NOT_ENOUGH_DATA: "not enough data (truncated)"
        default: "status \(status.rawValue)"
        }
    }
}

/// Memory libwebp's incremental decoder points into: it keeps pointers to the config's output buffer and
/// options, so both live at a fixed address for as long as the decoder does, and are freed in `deinit`.
private final class WebPIncrementalState {
    let output: PixelSize
    private let config: UnsafeMutablePointer<WebPDecoderConfig>
    private let pixels: UnsafeMutablePointer<UInt8>
    private let byteCount: Int
    private let decoder: OpaquePointer

    init?(output: PixelSize, original: PixelSize) {
        byteCount = output.width * output.height * 4
        // calloc, not `allocate`: a bitmap the allocator cannot provide is a nil here (an error to the
        // caller), not a trap.
        guard let pixels = calloc(byteCount, 1)?.assumingMemoryBound(to: UInt8.self) else { return nil }
        let config = UnsafeMutablePointer<WebPDecoderConfig>.allocate(capacity: 1)
        config.initialize(to: WebPDecoderConfig())
        guard WebPInitDecoderConfig(config) != 0 else {
            config.deallocate()
            free(pixels)
            return nil
        }
        WebPDecoder.configure(&config.pointee, output: output, original: original)
        config.pointee.output.u.RGBA.rgba = pixels
        config.pointee.output.u.RGBA.size = byteCount
        guard let decoder = WebPIDecode(nil, 0, config) else {
            config.deallocate()
            free(pixels)
            return nil
        }
        self.output = output
        self.config = config
        self.pixels = pixels
        self.decoder = decoder
    }

    deinit {
        WebPIDelete(decoder)
        WebPFreeDecBuffer(&config.pointee.output)
        config.deallocate()
        free(pixels)
    }

    /// Appends bytes (libwebp copies them). OK once the image is complete, SUSPENDED while more is needed.
    func append(_ base: UnsafePointer<UInt8>, _ length: Int) -> VP8StatusCode {
        WebPIAppend(decoder, base, length)
    }

    /// Rows complete so far, from the top.
    var rowsDecoded: Int {
        var lastRow: Int32 = 0
        var width: Int32 = 0
        var height: Int32 = 0
        var stride: Int32 = 0
        guard WebPIDecGetRGB(decoder, &lastRow, &width, &height, &stride) != nil else { return 0 }
        return max(0, Int(lastRow))
    }

    func copyPixels() -> [UInt8] { Array(UnsafeBufferPointer(start: pixels, count: byteCount)) }
}

/// Progressive WebP decoding with `WebPIDecoder`. Used from one thread at a time (see
/// `ImageIncrementalDecoding`); each update appends only the bytes not appended before. Animated files
/// give one partial image, their first frame, once it has fully arrived (found with `WebPDemuxPartial`);
/// their final decode is a one-shot decode.
final class WebPIncrementalDecoder: ImageIncrementalDecoding {
    private let options: ImageDecodingOptions
    private var state: WebPIncrementalState?
    /// The incremental bitmap and the copy each partial image takes, claimed without waiting.
    private var claim: DecodeMemoryBudget.Claim?
    private var sizing: DecodeSizing?
    private var hasAlpha = false
    private var unsupported = false
    private var animated = false
    private var firstFrameShown = false
    private var bytesFed = 0
    private var rowsShown = 0
    private var status = VP8_STATUS_SUSPENDED

    init(options: ImageDecodingOptions) { self.options = options }

    private func feed(_ data: Data) {
        if state == nil && !unsupported { start(data) }
        guard let state, data.count > bytesFed else { return }
        let start = data.startIndex + bytesFed
        data[start...].withUnsafeBytes { raw in
            if let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) {
                status = state.append(base, raw.count)
            }
        }
        bytesFed = data.count
    }

    private func start(_ data: Data) {
        var features = WebPBitstreamFeatures()
        let status = data.withUnsafeBytes { raw -> VP8StatusCode in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                return VP8_STATUS_NOT_ENOUGH_DATA
            }
            return WebPGetFeatures(base, raw.count, &features)
        }
        guard status != VP8_STATUS_NOT_ENOUGH_DATA else { return }
        if status == VP8_STATUS_OK, features.has_animation != 0 { animated = true }
        guard status == VP8_STATUS_OK, features.has_animation == 0,
            let sizing = try? DecodeSizing(
                width: Int(features.width), height: Int(features.height), format: .webp, options: options),
            let claim = try? PixelMemory.claim(
                PixelMemory.bytes(sizing.target, count: 2), largest: PixelMemory.bytes(sizing.target),
                options: options.forPartialDecode, for: "WebP \(sizing.original)"),
            let state = WebPIncrementalState(output: sizing.target, original: sizing.original)
        else {
            unsupported = true
            return
        }
        self.claim = claim
        self.sizing = sizing
        self.state = state
        hasAlpha = features.has_alpha != 0
    }

    /// The rows decoded so far, when more arrived since the last call.
    func decodePartial(_ data: Data) -> Image? {
        guard var image = partialPixels(data) else { return nil }
        ColorManagement.apply(WebPDecoder.iccProfile(data).map { .icc($0) }, to: &image, options: options)
        return image
    }

    private func partialPixels(_ data: Data) -> Image? {
        feed(data)
        if animated { return firstFramePartial(data) }
        guard let state, let sizing, status == VP8_STATUS_OK || status == VP8_STATUS_SUSPENDED else { return nil }
        let rows = state.rowsDecoded
        guard rows > rowsShown else { return nil }
        rowsShown = rows
        return image(state, sizing: sizing, isPartial: status != VP8_STATUS_OK)
    }

    /// The incrementally decoded image when it completed; otherwise a one-shot decode of `data`.
    func decodeFinal(_ data: Data) throws -> Image {
        feed(data)
        // An oriented file is decoded again: its size was chosen before the EXIF chunk arrived.
        if let state, let sizing, status == VP8_STATUS_OK,
            options.preserveOrientation || WebPDecoder.exifOrientation(data) == 1
        {
            var image = image(state, sizing: sizing, isPartial: false)
            ColorManagement.apply(WebPDecoder.iccProfile(data).map { .icc($0) }, to: &image, options: options)
            image.orient(WebPDecoder.exifOrientation(data), options: options)
            return image
        }
        // The one-shot decode claims its own memory; give this decoder's back first, so it never waits
        // while holding memory.
        state = nil
        claim?.release()
        return try WebPDecoder().decode(data, options: options)
    }

    /// The first frame of an animation, placed on its transparent canvas, once all its bytes are there.
    private func firstFramePartial(_ data: Data) -> Image? {
        guard !firstFrameShown else { return nil }
        return data.withUnsafeBytes { raw -> Image? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var webpData = WebPData(bytes: base, size: raw.count)
            var demuxState = WEBP_DEMUX_PARSING_HEADER
            guard let demux = WebPDemuxPartial(&webpData, &demuxState) else { return nil }
            defer { WebPDemuxDelete(demux) }
            var iterator = WebPIterator()
            guard WebPDemuxGetFrame(demux, 1, &iterator) != 0 else { return nil }
            defer { WebPDemuxReleaseIterator(&iterator) }
            guard iterator.complete != 0, let fragment = iterator.fragment.bytes,
                let sizing = try? DecodeSizing(
                    width: Int(WebPDemuxGetI(demux, WEBP_FF_CANVAS_WIDTH)),
                    height: Int(WebPDemuxGetI(demux, WEBP_FF_CANVAS_HEIGHT)), format: .webp, options: options)
            else { return nil }
            let frameSize = PixelSize(width: Int(iterator.width), height: Int(iterator.height))
            let left = Int(iterator.x_offset)
            let top = Int(iterator.y_offset)
            guard frameSize.width > 0, frameSize.height > 0, left + frameSize.width <= sizing.original.width,
                top + frameSize.height <= sizing.original.height
            else { return nil }
            var config = WebPDecoderConfig()
            guard WebPInitDecoderConfig(&config) != 0,
                let claim = try? PixelMemory.claim(
                    PixelMemory.sum(PixelMemory.bytes(sizing.original), PixelMemory.bytes(sizing.target)),
                    largest: PixelMemory.bytes(sizing.original), options: options.forPartialDecode,
                    for: "WebP animation \(sizing.original)")
            else { return nil }
            defer { claim.release() }
            let canvasStride = sizing.original.width * 4
            var canvas = [UInt8](repeating: 0, count: canvasStride * sizing.original.height)
            // The frame decodes straight into its rectangle of the canvas (stride = canvas row).
            let status = canvas.withUnsafeMutableBytes { buffer -> VP8StatusCode in
                guard let start = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                    return VP8_STATUS_OUT_OF_MEMORY
                }
                config.output.colorspace = MODE_RGBA
                config.output.is_external_memory = 1
                config.output.u.RGBA.rgba = start + top * canvasStride + left * 4
                config.output.u.RGBA.stride = Int32(canvasStride)
                config.output.u.RGBA.size = buffer.count - top * canvasStride - left * 4
                return WebPDecode(fragment, iterator.fragment.size, &config)
            }
            WebPFreeDecBuffer(&config.output)
            guard status == VP8_STATUS_OK else { return nil }
            firstFrameShown = true
            let frame = ImageFrame(
                width: sizing.original.width, height: sizing.original.height, bytesPerRow: canvasStride, pixels: canvas,
                duration: 0)
            let scaled = PixelResampler.resample(frame, to: sizing.target)
            return Image(
                format: .webp, width: scaled.width, height: scaled.height, originalWidth: sizing.original.width,
                originalHeight: sizing.original.height, frames: [scaled],
                frameCount: Int(WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT)),
                loopCount: Int(WebPDemuxGetI(demux, WEBP_FF_LOOP_COUNT)), hasAlpha: hasAlpha, isPartial: true)
        }
    }

    private func image(_ state: WebPIncrementalState, sizing: DecodeSizing, isPartial: Bool) -> Image {
        let size = state.output
        let frame = ImageFrame(
            width: size.width, height: size.height, bytesPerRow: size.width * 4, pixels: state.copyPixels())
        return WebPDecoder.image(frame, sizing: sizing, hasAlpha: hasAlpha, isPartial: isPartial)
    }
}
