import CJXL
import Foundation

/// Decodes JPEG XL with libjxl: bare codestreams and the ISOBMFF container, lossy and lossless, alpha,
/// animations, and the passes of a progressive file.
///
/// The basic info is read first: the declared size is checked (`maximumImagePixels`) and the pixel memory
/// claimed before any pixel is decoded. An animation's frames are counted by a first pass over the frame
/// headers (no pixels decoded), so the frames kept follow `DecodeSizing.animationPlan` like the other
/// formats; a frame's duration is its ticks at the animation's tick rate. Thumbnails and scale-down
/// decode at full size and are then averaged down (`PixelResampler`). The orientation the file declares is
/// applied unless `ImageDecodingOptions.preserveOrientation` is set (then it is reported as
/// `exifOrientation`). Data that ends early gives what libjxl can show from it
/// (`JxlDecoderFlushImage`: the passes of a progressive file that arrived, the groups of another) with
/// `isPartial == true`, or `badImageData` when nothing can be shown yet; the default incremental decoder
/// re-decodes the bytes so far, so `.progressiveLoad` sees the passes refine.
///
/// Alpha comes back straight: libjxl un-premultiplies a file whose alpha channel is premultiplied.
///
/// CMYK (a black extra channel and a CMYK ICC profile): the black channel is taken with the CMY colour
/// channels and the four go through the profile to sRGB, whatever `ImageDecodingOptions.colorSpace`
/// says (RGBA cannot hold CMYK), as for a CMYK JPEG. libjxl stores CMYK with 0 as full ink and 1 as
/// none. Without a usable CMYK profile the inks are mixed naively (each colour times the black).
///
/// Colour: pixels in a space other than sRGB come with libjxl's ICC description of it, applied as
/// `ImageDecodingOptions.colorSpace` asks. An XYB (lossy) image is asked for in sRGB when the options
/// want sRGB, so libjxl converts from XYB in floating point instead of handing over 8-bit linear light.
/// PQ and HLG (HDR) images are taken at 16 bits in their own encoding and tone-mapped to sRGB as
/// `HDRToneMapper` describes (with `.preserve`, libjxl's ICC description of the stored values comes along).
///
/// This file is the only one that decodes with libjxl (`JXLEncoder` encodes).
public struct JXLDecoder: ImageDecoding {
    /// Creates the decoder; it holds no state.
    public init() {}

    /// Whether `data` starts like a JPEG XL codestream (FF 0A) or container.
    public func canDecode(_ data: Data) -> Bool { ImageFormat.detect(data) == .jxl }

    /// Decodes `data`.
    public func decode(_ data: Data, options: ImageDecodingOptions) throws -> Image {
        guard !data.isEmpty else { throw DecodingFailure.emptyData() }
        // libjxl runs on this thread (no parallel runner is set), so what it prints is this thread's.
        return try LibraryMessages.routed(from: "libjxl") { try decodeRouted(data, options: options) }
    }

    private func decodeRouted(_ data: Data, options: ImageDecodingOptions) throws -> Image {
        try data.withUnsafeBytes { raw -> Image in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                throw DecodingFailure.emptyData()
            }
            let session = try Session(base, raw.count, events: JXL_DEC_BASIC_INFO)
            guard try session.next() == JXL_DEC_BASIC_INFO else {
                throw DecodingFailure.badImageData("JPEG XL header incomplete (\(raw.count) bytes)")
            }
            var info = JxlBasicInfo()
            try Self.check(JxlDecoderGetBasicInfo(session.decoder, &info), "JPEG XL basic info unreadable")
            let orientation = Int(info.orientation.rawValue)
            let sizing = try DecodeSizing(
                width: Int(info.xsize), height: Int(info.ysize), format: .jxl, options: options,
                orientation: orientation)
            let animated = info.have_animation != JXL_FALSE
            let declaredFrames = animated ? Self.frameCount(base, raw.count) : 1
            let black = Self.blackChannel(session.decoder, info)
            // libjxl's own full-size buffers (counted as one RGBA canvas) and the frame being written; a
            // deeper image may be HDR, written at 16 bits for tone mapping (two canvases more); CMYK needs
            // the black channel and the inks handed to LittleCMS (two more).
            let canvases = (info.bits_per_sample > 8 ? 4 : 2) + (black != nil ? 2 : 0)
            let plan = sizing.animationPlan(declaredFrames: declaredFrames, canvases: canvases, options: options)
            let claim = try PixelMemory.claim(
                plan.bytes, largest: PixelMemory.bytes(sizing.original), options: options,
                for: "JPEG XL \(sizing.original) × \(plan.frames) frames")
            defer { claim.release() }
            let (frames, color, isPartial) = try decodeFrames(
                base, raw.count, info: info, black: black, sizing: sizing, limit: plan.frames, options: options)
            var image = Image(
                format: .jxl, width: frames[0].width, height: frames[0].height,
                originalWidth: sizing.original.width, originalHeight: sizing.original.height, frames: frames,
                frameCount: max(declaredFrames, frames.count), loopCount: animated ? Int(info.animation.num_loops) : 0,
                hasAlpha: info.alpha_bits > 0,
                isPartial: isPartial || frames.count < min(declaredFrames, plan.frames))
            ColorManagement.apply(color, to: &image, options: options)
            image.orient(orientation, options: options)
            return image
        }
    }

    private func decodeFrames(
        _ base: UnsafePointer<UInt8>, _ length: Int, info: JxlBasicInfo, black: UInt32?, sizing: DecodeSizing,
        limit: Int, options: ImageDecodingOptions
    ) throws -> (frames: [ImageFrame], color: EmbeddedColorSpace?, isPartial: Bool) {
        let session = try Session(
            base, length,
            events: JxlDecoderStatus(
                rawValue: JXL_DEC_COLOR_ENCODING.rawValue | JXL_DEC_FRAME.rawValue | JXL_DEC_FULL_IMAGE.rawValue))
        var color: EmbeddedColorSpace?
        var output = FrameOutput(size: sizing.original, black: black)
        defer { output.deallocate() }
        var frames: [ImageFrame] = []
        var duration: TimeInterval = 0
        var bufferSet = false
        let ticks =
            info.have_animation != JXL_FALSE && info.animation.tps_numerator > 0
            ? Double(info.animation.tps_denominator) / Double(info.animation.tps_numerator) : 0

        func keep() {
            var frame = output.frame(duration: duration)
            if !sizing.isFullSize { frame = PixelResampler.resample(frame, to: sizing.target) }
            frames.append(frame)
        }

        while frames.count < limit {
            switch try session.next() {
            case JXL_DEC_COLOR_ENCODING where black != nil:
                // The colour channels hold C, M and Y, which only the CMYK profile (with black) describes.
                if let profile = Self.iccProfile(session.decoder), ColorManagement.isCMYKProfile(profile),
                    ColorManagement.isUsable(profile, format: .jxl, options: options)
                {
                    output.cmykProfile = profile
                }
            case JXL_DEC_COLOR_ENCODING:
                color = Self.chooseColorEncoding(session.decoder, info: info, options: options, output: &output)
            case JXL_DEC_FRAME:
                var header = JxlFrameHeader()
                try Self.check(JxlDecoderGetFrameHeader(session.decoder, &header), "JPEG XL frame header unreadable")
                duration = Double(header.duration) * ticks
            case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                try output.setBuffers(session.decoder)
                bufferSet = true
            case JXL_DEC_FULL_IMAGE:
                keep()
                bufferSet = false
            case JXL_DEC_SUCCESS:
                return (try Self.nonEmpty(frames), color, false)
            case JXL_DEC_NEED_MORE_INPUT:
                // The data ends here: show what the bytes so far hold of the frame being decoded.
                if bufferSet, JxlDecoderFlushImage(session.decoder) == JXL_DEC_SUCCESS { keep() }
                guard !frames.isEmpty else {
                    throw DecodingFailure.badImageData("JPEG XL data ends before any pixel (\(length) bytes)")
                }
                return (frames, color, true)
            default:
                break
            }
        }
        return (frames, color, false)
    }

    /// Asks libjxl for the pixels in the encoding `options` want, at `JXL_DEC_COLOR_ENCODING`, and returns
    /// the colour space they will come out in (nil for sRGB, and for PQ or HLG, which are tone-mapped here).
    private static func chooseColorEncoding(
        _ decoder: OpaquePointer, info: JxlBasicInfo, options: ImageDecodingOptions, output: inout FrameOutput
    ) -> EmbeddedColorSpace? {
        // An XYB image has no stored RGB: for one whose original is an ICC profile libjxl picks linear
        // light, which 8 bits cannot hold in the dark tones (they band once converted). Asking for
        // sRGB has libjxl convert in floating point; where it cannot, the data profile says so and
        // is applied as before.
        if options.colorSpace == .sRGB, let (mapper, original) = hdrEncoding(decoder) {
            // The PQ or HLG code values (an XYB image converted to them by libjxl in floating point),
            // at 16 bits, tone-mapped to sRGB here.
            var encoding = original
            if info.uses_original_profile == JXL_FALSE {
                _ = JxlDecoderSetPreferredColorProfile(decoder, &encoding)
            }
            output.toneMapper = mapper
            output.format.data_type = JXL_TYPE_UINT16
            return nil
        }
        if info.uses_original_profile == JXL_FALSE, options.colorSpace == .sRGB {
            var srgb = JxlColorEncoding()
            srgb.color_space = info.num_color_channels == 1 ? JXL_COLOR_SPACE_GRAY : JXL_COLOR_SPACE_RGB
            srgb.white_point = JXL_WHITE_POINT_D65
            srgb.primaries = JXL_PRIMARIES_SRGB
            srgb.transfer_function = JXL_TRANSFER_FUNCTION_SRGB
            srgb.rendering_intent = JXL_RENDERING_INTENT_PERCEPTUAL
            _ = JxlDecoderSetPreferredColorProfile(decoder, &srgb)
        }
        return colorSpace(decoder)
    }

    /// The colour space the pixels come out in: nil for sRGB (the usual case, and what libjxl produces from
    /// an XYB file whose original space was sRGB), else its ICC profile.
    private static func colorSpace(_ decoder: OpaquePointer) -> EmbeddedColorSpace? {
        var encoding = JxlColorEncoding()
        if JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &encoding)
            == JXL_DEC_SUCCESS,
            encoding.white_point == JXL_WHITE_POINT_D65, encoding.transfer_function == JXL_TRANSFER_FUNCTION_SRGB,
            encoding.color_space == JXL_COLOR_SPACE_GRAY
                || (encoding.color_space == JXL_COLOR_SPACE_RGB && encoding.primaries == JXL_PRIMARIES_SRGB)
        {
            return nil
        }
        return iccProfile(decoder).map { .icc($0) }
    }

    /// The ICC profile of the pixels libjxl hands over, nil when it has none to give.
    private static func iccProfile(_ decoder: OpaquePointer) -> Data? {
        var size = 0
        guard JxlDecoderGetICCProfileSize(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &size) == JXL_DEC_SUCCESS,
            size > 0, size < 16 << 20
        else { return nil }
        var profile = [UInt8](repeating: 0, count: size)
        guard
            JxlDecoderGetColorAsICCProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &profile, size)
                == JXL_DEC_SUCCESS
        else { return nil }
        return Data(profile)
    }

    /// The index of the black (K) extra channel of a CMYK image; nil for every other image.
    private static func blackChannel(_ decoder: OpaquePointer, _ info: JxlBasicInfo) -> UInt32? {
        for index in 0..<info.num_extra_channels {
            var channel = JxlExtraChannelInfo()
            if JxlDecoderGetExtraChannelInfo(decoder, Int(index), &channel) == JXL_DEC_SUCCESS,
                channel.type == JXL_CHANNEL_BLACK
            {
                return index
            }
        }
        return nil
    }

    /// Turns RGBA pixels whose colour channels hold libjxl's C, M and Y (0 = full ink), with `black` (the
    /// same convention), into sRGB through `profile` as libjxl renders CMYK
    /// (`ColorManagement.convertCMYKAsLibjxl`), keeping alpha; without a profile, each colour is multiplied
    /// by the black.
    private static func convertCMYK(
        _ pixels: inout [UInt8], black: UnsafeMutableBufferPointer<UInt8>, profile: Data?
    ) {
        let count = min(black.count, pixels.count / 4)
        if let profile {
            // LittleCMS's CMYK is ink amounts, 0 = none.
            var inks = [UInt8](repeating: 0, count: count * 4)
            for pixel in 0..<count {
                for channel in 0..<3 { inks[pixel * 4 + channel] = 255 - pixels[pixel * 4 + channel] }
                inks[pixel * 4 + 3] = 255 - black[pixel]
            }
            if ColorManagement.convertCMYKAsLibjxl(&inks, profileData: profile) {
                for pixel in 0..<count {
                    for channel in 0..<3 { pixels[pixel * 4 + channel] = inks[pixel * 4 + channel] }
                }
                return
            }
        }
        for pixel in 0..<count {
            let k = Int(black[pixel])
            for channel in 0..<3 {
                pixels[pixel * 4 + channel] = UInt8((Int(pixels[pixel * 4 + channel]) * k + 127) / 255)
            }
        }
    }

    /// The tone mapper and the encoding of an RGB image whose original colour is PQ or HLG (with D65 white
    /// and primaries `HDRToneMapper` knows); nil for every other image.
    private static func hdrEncoding(_ decoder: OpaquePointer) -> (HDRToneMapper, JxlColorEncoding)? {
        var original = JxlColorEncoding()
        guard
            JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_ORIGINAL, &original)
                == JXL_DEC_SUCCESS,
            original.color_space == JXL_COLOR_SPACE_RGB, original.white_point == JXL_WHITE_POINT_D65,
            let mapper = HDRToneMapper(
                primaries: Int(original.primaries.rawValue), transfer: Int(original.transfer_function.rawValue))
        else { return nil }
        return (mapper, original)
    }

    /// The frames an animation holds, from its frame headers alone (0 when they cannot be read).
    private static func frameCount(_ base: UnsafePointer<UInt8>, _ length: Int) -> Int {
        guard let session = try? Session(base, length, events: JXL_DEC_FRAME) else { return 0 }
        var count = 0
        while let status = try? session.next(), status == JXL_DEC_FRAME { count += 1 }
        return count
    }

    private static func nonEmpty(_ frames: [ImageFrame]) throws -> [ImageFrame] {
        guard !frames.isEmpty else { throw DecodingFailure.badImageData("JPEG XL holds no frame") }
        return frames
    }

    private static func check(_ status: JxlDecoderStatus, _ message: String) throws {
        guard status == JXL_DEC_SUCCESS else { throw DecodingFailure.badImageData(message) }
    }

    /// One libjxl decoder over the whole input, reporting `events`. The input is not closed, so data that
    /// ends early shows as `JXL_DEC_NEED_MORE_INPUT` (which `JxlDecoderFlushImage` can follow).
    private final class Session {
        let decoder: OpaquePointer

        init(_ base: UnsafePointer<UInt8>, _ length: Int, events: JxlDecoderStatus) throws {
            guard let decoder = JxlDecoderCreate(nil) else {
                throw DecodingFailure.badImageData("JPEG XL: out of memory")
            }
            // Pixels as stored: `Image.orient` turns them, as it turns every format's, after any scaling.
            _ = JxlDecoderSetKeepOrientation(decoder, JXL_TRUE)
            // Straight alpha, as every `ImageFrame` holds: a file that stores premultiplied alpha would
            // otherwise come back with its colours darkened by their own alpha.
            _ = JxlDecoderSetUnpremultiplyAlpha(decoder, JXL_TRUE)
            guard JxlDecoderSubscribeEvents(decoder, Int32(bitPattern: events.rawValue)) == JXL_DEC_SUCCESS,
                JxlDecoderSetInput(decoder, base, length) == JXL_DEC_SUCCESS
            else {
                JxlDecoderDestroy(decoder)
                throw DecodingFailure.badImageData("JPEG XL decoder refused its set-up")
            }
            self.decoder = decoder
        }

        deinit { JxlDecoderDestroy(decoder) }

        /// The next event; `badImageData` for a stream libjxl cannot decode.
        func next() throws -> JxlDecoderStatus {
            let status = JxlDecoderProcessInput(decoder)
            guard status != JXL_DEC_ERROR else { throw DecodingFailure.badImageData("JPEG XL undecodable") }
            return status
        }
    }

    /// The buffers libjxl writes a frame into (allocated once at the full size and reused for every frame),
    /// and what turns them into an RGBA8 frame. The owner calls `deallocate()` when decoding ends.
    private struct FrameOutput {
        let size: PixelSize
        var format = JxlPixelFormat(num_channels: 4, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
        let buffer: UnsafeMutableBufferPointer<UInt8>
        // PQ and HLG images are written at 16 bits in their own encoding, then tone-mapped (HDRToneMapper).
        var toneMapper: HDRToneMapper?
        var wide: UnsafeMutableBufferPointer<UInt16>?
        // CMYK: the black channel of the frame being written, and the CMYK profile (nil: mixed naively).
        let black: UInt32?
        var blackFormat = JxlPixelFormat(
            num_channels: 1, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
        let blackBuffer: UnsafeMutableBufferPointer<UInt8>?
        var cmykProfile: Data?

        init(size: PixelSize, black: UInt32?) {
            self.size = size
            self.black = black
            buffer = .allocate(capacity: size.width * size.height * 4)
            // No ink until libjxl writes it (a file that ends early leaves the rest of a frame unwritten).
            blackBuffer = black.map { _ in
                let samples = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: size.width * size.height)
                samples.initialize(repeating: 255)
                return samples
            }
        }

        func deallocate() {
            buffer.deallocate()
            wide?.deallocate()
            blackBuffer?.deallocate()
        }

        /// Hands libjxl the buffers for the next frame (`JXL_DEC_NEED_IMAGE_OUT_BUFFER`), after checking
        /// that the sizes it asks for match the basic info.
        mutating func setBuffers(_ decoder: OpaquePointer) throws {
            var needed = 0
            try JXLDecoder.check(JxlDecoderImageOutBufferSize(decoder, &format, &needed), "JPEG XL buffer size unknown")
            if toneMapper != nil {
                let samples = wide ?? .allocate(capacity: size.width * size.height * 4)
                wide = samples
                guard needed == samples.count * 2 else {
                    throw DecodingFailure.badImageData("JPEG XL frame buffer disagrees with the basic info")
                }
                try JXLDecoder.check(
                    JxlDecoderSetImageOutBuffer(decoder, &format, samples.baseAddress, needed),
                    "JPEG XL output buffer refused")
                return
            }
            guard needed == buffer.count else {
                throw DecodingFailure.badImageData("JPEG XL frame buffer disagrees with the basic info")
            }
            try JXLDecoder.check(
                JxlDecoderSetImageOutBuffer(decoder, &format, buffer.baseAddress, buffer.count),
                "JPEG XL output buffer refused")
            if let black, let blackBuffer {
                try JXLDecoder.check(
                    JxlDecoderExtraChannelBufferSize(decoder, &blackFormat, &needed, black),
                    "JPEG XL black channel size unknown")
                guard needed == blackBuffer.count else {
                    throw DecodingFailure.badImageData("JPEG XL black channel disagrees with the basic info")
                }
                try JXLDecoder.check(
                    JxlDecoderSetExtraChannelBuffer(
                        decoder, &blackFormat, blackBuffer.baseAddress, blackBuffer.count, black),
                    "JPEG XL black channel buffer refused")
            }
        }

        /// The frame libjxl has written so far, at the full size, as RGBA8 (tone-mapped or converted from
        /// CMYK as the image needs).
        func frame(duration: TimeInterval) -> ImageFrame {
            var pixels = toneMapper.flatMap { mapper in wide.map { mapper.map(Array($0)) } } ?? Array(buffer)
            if let blackBuffer { JXLDecoder.convertCMYK(&pixels, black: blackBuffer, profile: cmykProfile) }
            return ImageFrame(
                width: size.width, height: size.height, bytesPerRow: size.width * 4, pixels: pixels,
                duration: duration)
        }
    }
}
