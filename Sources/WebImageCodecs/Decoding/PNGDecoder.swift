import CPNG
import Foundation

/// Decodes PNG with libpng: every color type and bit depth, palette with tRNS, gray + alpha, 16-bit
/// (high byte kept), Adam7 interlaced — to RGBA8. Colour: a cICP chunk (ITU-T H.273 code points, PNG's
/// third edition), else an iCCP profile, or gAMA (with cHRM) when there is neither a profile nor an sRGB
/// chunk, is applied as `ImageDecodingOptions.colorSpace` asks
/// (gAMA 1/2.2, alone or with sRGB's cHRM, counts as sRGB, as browsers take it). A 16-bit image decoded
/// at full size is converted to sRGB from its 16-bit samples, before they are rounded to 8 bits, so the
/// conversion does not stretch 8-bit steps into bands (scaled-down decodes still convert after).
///
/// Scale-down of non-interlaced images averages boxes of rows while reading, so the full-size bitmap is
/// never allocated; interlaced images are decoded at full size and then averaged down. Truncated data
/// gives the rows that arrived with `isPartial == true`. Its incremental decoder is libpng's progressive
/// reader (`png_process_data`): rows, or interlace passes, appear as bytes arrive.
///
/// An animated PNG (an `acTL` chunk before the image data) decodes to its frames: see `APNGDecoder`.
///
/// The orientation of an `eXIf` chunk (else of XMP's `tiff:Orientation` in an `iTXt` chunk) is applied
/// unless `ImageDecodingOptions.preserveOrientation` is set, as browsers apply `eXIf`.
///
/// libpng is reached only through the CPNG shim (here and in `PNGEncoder`), which keeps its `longjmp` in C.
public struct PNGDecoder: ImageDecoding {
    /// The largest box-averaging factor tried when scaling down non-interlaced images.
    static let maximumBoxFactor = 64

    /// Creates the decoder; it holds no state.
    public init() {}

    /// Whether `data` starts with the PNG signature.
    public func canDecode(_ data: Data) -> Bool { ImageFormat.detect(data) == .png }

    /// Decodes `data`.
    public func decode(_ data: Data, options: ImageDecodingOptions) throws -> Image {
        guard !data.isEmpty else { throw DecodingFailure.emptyData() }
        // Frames past those a decode may keep are checked and counted, not kept.
        let limit = options.decodeFirstFrameOnly ? 1 : max(1, options.maximumAnimationFrames)
        if let container = try APNGContainer.parse(data, limit: limit) {
            return try APNGDecoder.decode(data, container: container, options: options)
        }
        return try data.withUnsafeBytes { raw -> Image in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                throw DecodingFailure.emptyData()
            }
            // The reader reads `raw` in place; it is destroyed before `withUnsafeBytes` returns.
            guard let reader = PNGReader(base, raw.count) else {
                throw DecodingFailure.badImageData("PNG: out of memory creating the reader")
            }
            return try reader.decode(
                options: options, orientation: EXIFOrientation.fromPNG(data), cicp: PNGDecoder.cicp(in: data))
        }
    }

    /// libpng's progressive reader, fed the new bytes of each update.
    public func makeIncrementalDecoder(options: ImageDecodingOptions) -> any ImageIncrementalDecoding {
        PNGIncrementalDecoder(options: options)
    }
}

/// Owns one libpng read struct for one one-shot decode (of a PNG, or of one APNG frame's stream).
final class PNGReader {
    let handle: OpaquePointer

    init?(_ data: UnsafePointer<UInt8>, _ length: Int) {
        guard let handle = wi_png_create(data, length) else { return nil }
        self.handle = handle
    }

    deinit { wi_png_destroy(handle) }

    var message: String { String(cString: wi_png_error_message(handle)) }

    func decode(options: ImageDecodingOptions, orientation: Int, cicp: EmbeddedColorSpace?) throws -> Image {
        var header = wi_png_header()
        guard wi_png_read_header(handle, &header) == 0 else {
            throw DecodingFailure.badImageData("PNG header unreadable: \(message)")
        }
        let sizing = try DecodeSizing(
            width: Int(header.width), height: Int(header.height), format: .png, options: options,
            orientation: orientation)
        // 16 bits kept (`keepsSixteenBits`) only at full size, and not where a cICP chunk's conversion (at 8
        // bits, HDR tone mapping included) applies.
        let deepWanted = options.keepsSixteenBits && header.bitDepth == 16 && cicp == nil
        let factors =
            header.interlaced != 0 || sizing.isFullSize || deepWanted ? [1] : Array(1...PNGDecoder.maximumBoxFactor)
        let candidates = factors.map {
            PixelSize(
                width: (sizing.original.width + $0 - 1) / $0, height: (sizing.original.height + $0 - 1) / $0)
        }
        let choice = sizing.nativeSize(among: candidates)
        let native = candidates[choice]
        let final = sizing.finalSize(native: native)
        let wide = factors[choice] == 1 ? PNGDecoder.sRGBTransform16(header, cicp: cicp, options: options) : nil
        let keepsDeep = deepWanted && final == native
        let samples16 = wide != nil || keepsDeep
        let claim = try PixelMemory.claim(
            PixelMemory.sum(
                PixelMemory.bytes(native), final == native ? 0 : PixelMemory.bytes(final),
                samples16 ? PixelMemory.bytes(native, count: 2) : 0),
            largest: PixelMemory.bytes(native, count: samples16 ? 2 : 1), options: options,
            for: "PNG \(sizing.original)")
        defer { claim.release() }
        let stride = native.width * 4
        var rows: UInt32 = 0
        var status: Int32 = 0
        let frame: ImageFrame
        var converted = false
        if samples16 {
            let samples = readSixteenBits(native, status: &status, rows: &rows)
            if keepsDeep {
                // Converted at 16 bits in and out. Should LittleCMS fail to make that transform, the samples stay
                // as stored and the 8-bit conversion in `image` then makes `pixels` differ from them, so they no
                // longer count.
                let deep =
                    wide == nil ? nil : PNGDecoder.sRGBTransform16(header, cicp: cicp, options: options, output16: true)
                converted = deep != nil
                frame = ImageFrame(
                    width: native.width, height: native.height,
                    deepPixels: deep.map {
                        ColorManagement.convert16(samples, width: native.width, height: native.height, to: $0)
                    } ?? samples)
            } else {
                converted = wide != nil
                frame = ImageFrame(
                    width: native.width, height: native.height, bytesPerRow: stride,
                    pixels: wide.map {
                        ColorManagement.convert16(samples, width: native.width, height: native.height, with: $0)
                    } ?? [])
            }
        } else {
            let pixels = [UInt8](unsafeUninitializedCapacity: stride * native.height) { buffer, count in
                if let base = buffer.baseAddress {
                    // wi_png_decode writes every row: decoded pixels or zeros.
                    status = wi_png_decode(
                        handle, Int32(factors[choice]), base, stride, UInt32(native.width), UInt32(native.height),
                        &rows)
                    count = stride * native.height
                } else {
                    status = -1
                    count = 0
                }
            }
            frame = ImageFrame(width: native.width, height: native.height, bytesPerRow: stride, pixels: pixels)
        }
        guard status == 0 || rows > 0 else { throw DecodingFailure.badImageData("PNG undecodable: \(message)") }
        return PNGDecoder.image(
            frame, sizing: sizing, header: header, cicp: cicp, isPartial: status != 0,
            convertedToSRGB: converted, orientation: orientation, options: options)
    }
}

extension PNGReader {
    /// The whole image as RGBA16 samples in native byte order (`wi_png_decode16` writes every row: decoded
    /// samples or zeros), with its status and the rows decoded.
    fileprivate func readSixteenBits(_ size: PixelSize, status: inout Int32, rows: inout UInt32) -> [UInt16] {
        let count = size.width * 4 * size.height
        var result: Int32 = 0
        var decoded: UInt32 = 0
        let samples = [UInt16](unsafeUninitializedCapacity: count) { buffer, initialized in
            if let base = buffer.baseAddress {
                result = wi_png_decode16(
                    handle, base, size.width * 8, UInt32(size.width), UInt32(size.height), &decoded)
                initialized = count
            } else {
                result = -1
                initialized = 0
            }
        }
        status = result
        rows = decoded
        return samples
    }
}

extension PNGDecoder {
    /// The image for `frame`, averaged down to the size `sizing` asks for, in the colour space the options
    /// ask for, turned upright as they ask.
    fileprivate static func image(
        _ frame: ImageFrame, sizing: DecodeSizing, header: wi_png_header, cicp: EmbeddedColorSpace?, isPartial: Bool,
        convertedToSRGB: Bool = false, orientation: Int, options: ImageDecodingOptions
    ) -> Image {
        let final = sizing.finalSize(native: PixelSize(width: frame.width, height: frame.height))
        let frame = PixelResampler.resample(frame, to: final)
        var image = Image(
            format: .png, width: final.width, height: final.height, originalWidth: sizing.original.width,
            originalHeight: sizing.original.height, frames: [frame], hasAlpha: header.hasAlpha != 0,
            isPartial: isPartial)
        if !convertedToSRGB { ColorManagement.apply(cicp ?? colorSpace(of: header), to: &image, options: options) }
        image.orient(orientation, options: options)
        return image
    }

    /// The transform that converts a 16-bit image's samples to sRGB before they are reduced to 8 bits, so
    /// the conversion (a gAMA of 1.0 brightens dark tones several times) does not stretch 8-bit steps into
    /// bands; nil for other depths and wherever no conversion to sRGB is made.
    static func sRGBTransform16(
        _ header: wi_png_header, cicp: EmbeddedColorSpace?, options: ImageDecodingOptions, output16: Bool = false
    ) -> ColorManagement.Transform? {
        // A cICP chunk wins over the others; its conversion (and an HDR one's tone mapping) is made at 8 bits.
        guard header.bitDepth == 16, cicp == nil, let space = colorSpace(of: header) else { return nil }
        return ColorManagement.sRGBTransform16(for: space, options: options, output16: output16)
    }

    /// The colour a `cICP` chunk before the image data declares (PNG's third edition: ITU-T H.273 colour
    /// primaries and transfer characteristics, matrix coefficients 0 and full range, as RGB needs), which
    /// takes precedence over iCCP, sRGB and gAMA; nil without one, or with one that is not for RGB.
    static func cicp(in data: Data) -> EmbeddedColorSpace? {
        let bytes = ByteReader(data)
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = bytes.uint32(at: offset, bigEndian: true)
            let start = offset + 8
            if bytes.matches(Array("IDAT".utf8), at: offset + 4) || bytes.matches(Array("IEND".utf8), at: offset + 4) {
                return nil
            }
            if bytes.matches(Array("cICP".utf8), at: offset + 4) {
                guard length == 4, start + 4 <= bytes.count, bytes[start + 2] == 0, bytes[start + 3] == 1
                else { return nil }
                return .cicp(primaries: Int(bytes[start]), transfer: Int(bytes[start + 1]))
            }
            guard length <= bytes.count else { return nil }
            offset = start + length + 4
        }
        return nil
    }

    /// The colour space the chunks declare: iCCP first, then sRGB (nothing to do), then gAMA with cHRM.
    /// (A `cICP` chunk, read from the file's bytes by ``cicp(in:)``, comes before all of them.)
    static func colorSpace(of header: wi_png_header) -> EmbeddedColorSpace? {
        if let profile = header.iccProfile, header.iccProfileLength > 0 {
            return .icc(Data(bytes: profile, count: Int(header.iccProfileLength)))
        }
        guard header.hasSRGB == 0, header.hasGamma != 0 else { return nil }
        let chromaticities =
            header.hasChromaticities != 0
            ? withUnsafeBytes(of: header.chromaticities) { Array($0.bindMemory(to: Double.self)) } : nil
        return .gamma(header.gamma, chromaticities: chromaticities)
    }
}

/// Progressive PNG decoding with libpng's push reader. Used from one thread at a time (see
/// `ImageIncrementalDecoding`); each update feeds only the bytes not fed before.
final class PNGIncrementalDecoder: ImageIncrementalDecoding {
    private let options: ImageDecodingOptions
    private var stream: OpaquePointer?
    /// The stream's full-size bitmap, claimed (without waiting) from the budget before the header reaches
    /// libpng; `nil` until then.
    private var claim: DecodeMemoryBudget.Claim?
    private let streamLimit: Int
    private var bytesFed = 0
    private var rowsShown: UInt32 = 0
    /// Whether the data is an APNG; nil until its first `acTL` or `IDAT` arrived.
    private var animated: Bool?
    private var framesShown = 0

    init(options: ImageDecodingOptions) {
        self.options = options
        // The stream decodes at full size only; larger images wait for `decodeFinal`, which scales down.
        var limit = options.maximumImagePixels
        if options.scaleDownLargeImages { limit = min(limit, max(1, options.scaleDownLimitBytes / 4)) }
        streamLimit = max(0, limit)
        stream = wi_png_stream_create(UInt64(streamLimit))
    }

    deinit { wi_png_stream_destroy(stream) }

    private func feed(_ data: Data) -> wi_png_stream_state? {
        if claim == nil, stream != nil {
            // IHDR sits at a fixed place: the 8-byte signature, then length, "IHDR", width, height.
            guard data.count >= 24 else { return nil }
            let header = ByteReader(data)
            let size = PixelSize(
                width: header.uint32(at: 16, bigEndian: true), height: header.uint32(at: 20, bigEndian: true))
            let bytes = PixelMemory.bytes(size)
            if bytes / 4 <= streamLimit,
                let claimed = try? PixelMemory.claim(
                    PixelMemory.sum(bytes, bytes), largest: bytes, options: options.forPartialDecode,
                    for: "PNG \(size)")
            {
                claim = claimed
            } else {
                // Too large to stream, or no room now: no progressive display; the final decode claims (and
                // waits) as usual.
                wi_png_stream_destroy(stream)
                stream = nil
            }
        }
        guard let stream else { return nil }
        if data.count > bytesFed {
            let start = data.startIndex + bytesFed
            data[start...].withUnsafeBytes { raw in
                if let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) {
                    _ = wi_png_stream_feed(stream, base, raw.count)
                }
            }
            bytesFed = data.count
        }
        return wi_png_stream_get_state(stream)
    }

    /// The rows (or passes) decoded so far, when more arrived since the last call.
    func decodePartial(_ data: Data) -> Image? {
        if isAnimated(data) { return animationPartial(data) }
        guard let state = feed(data), state.headerSeen != 0, state.declined == 0, state.failed == 0,
            state.rowsSeen > rowsShown
        else { return nil }
        rowsShown = state.rowsSeen
        return image(
            state, isPartial: state.complete == 0, orientation: EXIFOrientation.fromPNG(data),
            cicp: PNGDecoder.cicp(in: data))
    }

    /// The streamed image when it completed at the size asked for; otherwise a one-shot decode of `data`.
    func decodeFinal(_ data: Data) throws -> Image {
        if isAnimated(data) { return try PNGDecoder().decode(data, options: options) }
        // A 16-bit image converted to sRGB is decoded again: the stream reduced it to 8 bits first.
        if let state = feed(data), state.complete != 0, state.failed == 0,
            PNGDecoder.sRGBTransform16(state.header, cicp: PNGDecoder.cicp(in: data), options: options) == nil,
            let image = image(
                state, isPartial: false, orientation: EXIFOrientation.fromPNG(data), cicp: PNGDecoder.cicp(in: data)),
            image.width == image.originalWidth,
            image.height == image.originalHeight
        {
            return image
        }
        // The one-shot decode claims its own memory; give back the stream's first, so this decode never
        // waits while holding memory.
        wi_png_stream_destroy(stream)
        stream = nil
        claim?.release()
        return try PNGDecoder().decode(data, options: options)
    }

    /// Whether `data` is an APNG, once that is known (at its `acTL` or first `IDAT`). An APNG's frames are
    /// decoded again from all the bytes so far as each one arrives; the stream, which would show only the
    /// default image, is dropped.
    private func isAnimated(_ data: Data) -> Bool {
        if animated == nil, let known = APNGContainer.isAnimated(data) {
            animated = known
            if known {
                wi_png_stream_destroy(stream)
                stream = nil
                claim?.release()
                claim = nil
            }
        }
        return animated == true
    }

    /// The frames that arrived, when one more did since the last partial image.
    private func animationPartial(_ data: Data) -> Image? {
        guard let container = try? APNGContainer.parse(data, limit: max(1, options.maximumAnimationFrames)),
            container.frames.count > framesShown,
            var image = try? APNGDecoder.decode(data, container: container, options: options.forPartialDecode)
        else { return nil }
        framesShown = container.frames.count
        image.isPartial = true
        return image
    }

    private func image(
        _ state: wi_png_stream_state, isPartial: Bool, orientation: Int, cicp: EmbeddedColorSpace?
    ) -> Image? {
        guard let stream, let source = wi_png_stream_pixels(stream) else { return nil }
        let header = state.header
        guard
            let sizing = try? DecodeSizing(
                width: Int(header.width), height: Int(header.height), format: .png, options: options,
                orientation: orientation)
        else { return nil }
        let stride = sizing.original.width * 4
        let pixels = Array(UnsafeBufferPointer(start: source, count: stride * sizing.original.height))
        let frame = ImageFrame(
            width: sizing.original.width, height: sizing.original.height, bytesPerRow: stride, pixels: pixels)
        return PNGDecoder.image(
            frame, sizing: sizing, header: header, cicp: cicp, isPartial: isPartial, orientation: orientation,
            options: options)
    }
}
