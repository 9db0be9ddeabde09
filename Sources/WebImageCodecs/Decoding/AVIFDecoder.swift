import CAVIF
import Foundation

/// Decodes AVIF with libavif (AV1 through dav1d): still images, alpha, 10- and 12-bit images (converted to
/// RGB at 16 bits by libavif, then rounded to 8 bits per channel), and image sequences as animation frames.
/// Images coded with BT.2020 constant luminance (matrix coefficients 10), which libavif 0.11 cannot
/// convert, are converted here (`AVIFConstantLuminance`).
///
/// The declared size is checked (`maximumImagePixels`) and the pixel memory claimed before libavif decodes
/// anything (libavif's own size limit, 16,384 × 16,384, stays in force too), and a sequence decodes at most the
/// frames `DecodeSizing.animationPlan` allows. libavif cannot scale while decoding, so thumbnails and
/// scale-down decode at full size and are then averaged down (`PixelResampler`). A frame's duration is
/// its sample's duration; a sequence loops forever (libavif 0.11 does not read the edit list's repeat).
/// The `irot`/`imir` transforms are applied (after the clean aperture) unless
/// `ImageDecodingOptions.preserveOrientation` is set; then they are reported as the equivalent
/// `exifOrientation`, as the EXIF orientation of the other formats is. Data cut short fails with `badImageData` (AV1 frames decode
/// whole or not at all).
///
/// Colour: an ICC profile in the `colr` box, or else its CICP (`nclx`) primaries and transfer curve, are
/// applied as `ImageDecodingOptions.colorSpace` asks (with `.preserve`, a CICP space comes back as an ICC
/// profile LittleCMS writes). PQ and HLG (HDR) transfers are converted at 16 bits and tone-mapped to sRGB
/// (`HDRToneMapper`); with `.preserve` they stay as stored, described by `Image.cicp`.
///
/// Strictness: an image item without a `pixi` (bit depth) property is accepted, as Chrome and Pillow
/// accept it (the AV1 sequence header says the depth anyway), and so is a clean aperture (`clap`) whose
/// origin does not fall on a chroma sample of subsampled planes; libavif's other strict checks (an `ispe`
/// on alpha items) stay on. A valid clean aperture is applied: the image is its rectangle (`width` and
/// `height`, and `originalWidth` and `originalHeight`, are the aperture's); an invalid one is ignored.
///
/// This file is the only one that calls libavif's decoder.
public struct AVIFDecoder: ImageDecoding {
    /// Creates the decoder; it holds no state.
    public init() {}

    /// Whether `data` is an ISOBMFF file whose brands name AVIF (`avif` or `avis`).
    public func canDecode(_ data: Data) -> Bool { ImageFormat.detect(data) == .avif }

    /// Decodes `data`.
    public func decode(_ data: Data, options: ImageDecodingOptions) throws -> Image {
        guard !data.isEmpty else { throw DecodingFailure.emptyData() }
        // What libavif and its codec print about damaged data (dav1d's "Error parsing OBU data") goes to the
        // log; the decode runs on this thread (maxThreads = 1).
        return try LibraryMessages.routed(from: "libavif") { try decodeRouted(data, options: options) }
    }

    private func decodeRouted(_ data: Data, options: ImageDecodingOptions) throws -> Image {
        guard let decoder = avifDecoderCreate() else { throw DecodingFailure.badImageData("AVIF: out of memory") }
        defer { avifDecoderDestroy(decoder) }
        decoder.pointee.maxThreads = 1
        decoder.pointee.ignoreXMP = AVIF_TRUE
        decoder.pointee.ignoreExif = AVIF_TRUE
        decoder.pointee.strictFlags &= ~avifStrictFlags(
            AVIF_STRICT_PIXI_REQUIRED.rawValue | AVIF_STRICT_CLAP_VALID.rawValue)
        return try data.withUnsafeBytes { raw -> Image in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                throw DecodingFailure.emptyData()
            }
            // libavif reads `base` until the last frame is decoded, so all of it happens in here.
            try Self.check(avifDecoderSetIOMemory(decoder, base, raw.count), "AVIF input unusable")
            try Self.check(avifDecoderParse(decoder), "AVIF header unreadable")
            guard let header = decoder.pointee.image else { throw DecodingFailure.badImageData("AVIF has no image") }
            return try Self.decodeParsed(decoder, header: header, options: options)
        }
    }

    /// The image of a parsed `decoder` whose first image's header is `header`: its size checked and its
    /// pixel memory claimed before any frame is decoded.
    private static func decodeParsed(
        _ decoder: UnsafeMutablePointer<avifDecoder>, header: UnsafeMutablePointer<avifImage>,
        options: ImageDecodingOptions
    ) throws -> Image {
        // The coded size bounds the memory; the clean aperture, when there is one, is the image.
        let orientation = Self.orientation(header.pointee)
        let stored = try DecodeSizing(
            width: Int(header.pointee.width), height: Int(header.pointee.height), format: .avif,
            options: options, orientation: orientation)
        let aperture = cleanAperture(header)
        let sizing =
            try aperture.map {
                try DecodeSizing(
                    width: Int($0.width), height: Int($0.height), format: .avif, options: options,
                    orientation: orientation)
            } ?? stored
        let declaredFrames = max(1, Int(decoder.pointee.imageCount))
        // libavif's decoded planes (counted as one RGBA canvas: YUV 4:4:4 with alpha at 8 bits, half
        // of it at 10 or 12 bits), when the frames are cropped or averaged down the full-size RGBA
        // buffer each is converted into first, and for 10 and 12 bits (and constant luminance) the
        // RGBA16 buffer (two canvases) the planes are converted into before the rounding to 8 bits.
        // PQ and HLG described by CICP are converted at 16 bits and tone-mapped (HDRToneMapper).
        let toneMapper =
            header.pointee.icc.size == 0 && options.colorSpace == .sRGB
            ? HDRToneMapper(
                primaries: Int(header.pointee.colorPrimaries),
                transfer: Int(header.pointee.transferCharacteristics)) : nil
        let deep =
            header.pointee.depth > 8 || toneMapper != nil
            || header.pointee.matrixCoefficients == AVIF_MATRIX_COEFFICIENTS_BT2020_CL
        let plan = stored.animationPlan(
            declaredFrames: declaredFrames,
            canvases: (sizing.isFullSize && aperture == nil ? 1 : 2) + (deep ? 2 : 0), options: options)
        let claim = try PixelMemory.claim(
            plan.bytes, largest: PixelMemory.bytes(stored.original), options: options,
            for: "AVIF \(stored.original) × \(plan.frames) frames")
        defer { claim.release() }

        let frames = try decodeFrames(
            decoder, declaredFrames: declaredFrames, limit: plan.frames, stored: stored, aperture: aperture,
            sizing: sizing, toneMapper: toneMapper)
        var image = Image(
            format: .avif, width: frames[0].width, height: frames[0].height,
            originalWidth: sizing.original.width, originalHeight: sizing.original.height, frames: frames,
            frameCount: declaredFrames, loopCount: 0,
            hasAlpha: decoder.pointee.alphaPresent != AVIF_FALSE,
            isPartial: frames.count < min(declaredFrames, plan.frames))
        applyColor(of: header, toneMapped: toneMapper != nil, to: &image, options: options)
        image.orient(orientation, options: options)
        return image
    }

    /// Up to `limit` frames, each converted to RGBA8 at the `stored` size, cropped to `aperture` and
    /// averaged down to `sizing`'s target; `badImageData` when not even the first decodes.
    private static func decodeFrames(
        _ decoder: UnsafeMutablePointer<avifDecoder>, declaredFrames: Int, limit: Int, stored: DecodeSizing,
        aperture: avifCropRect?,
        sizing: DecodeSizing, toneMapper: HDRToneMapper?
    ) throws -> [ImageFrame] {
        var frames: [ImageFrame] = []
        var result = AVIF_RESULT_OK
        while frames.count < limit {
            result = avifDecoderNextImage(decoder)
            guard result == AVIF_RESULT_OK, let image = decoder.pointee.image else { break }
            guard Int(image.pointee.width) == stored.original.width,
                Int(image.pointee.height) == stored.original.height
            else {
                throw DecodingFailure.badImageData("AVIF frame size disagrees with the first frame")
            }
            var pixels = try rgba(image, size: stored.original, toneMapper: toneMapper)
            if let aperture { pixels = crop(pixels, width: stored.original.width, to: aperture) }
            var frame = ImageFrame(
                width: sizing.original.width, height: sizing.original.height,
                bytesPerRow: sizing.original.width * 4, pixels: pixels,
                duration: declaredFrames > 1 ? decoder.pointee.imageTiming.duration : 0)
            if !sizing.isFullSize { frame = PixelResampler.resample(frame, to: sizing.target) }
            frames.append(frame)
        }
        guard !frames.isEmpty else {
            throw DecodingFailure.badImageData("AVIF undecodable: \(describe(result))")
        }
        return frames
    }

    /// Applies the colour `header` describes (its ICC profile, or else its CICP primaries and transfer) as
    /// `options` ask; nothing when the frames were tone-mapped, which leaves them in sRGB already.
    private static func applyColor(
        of header: UnsafeMutablePointer<avifImage>, toneMapped: Bool, to image: inout Image,
        options: ImageDecodingOptions
    ) {
        let icc = header.pointee.icc
        if toneMapped {
            // Already sRGB.
        } else if let bytes = icc.data, icc.size > 0 {
            ColorManagement.apply(.icc(Data(bytes: bytes, count: icc.size)), to: &image, options: options)
        } else {
            ColorManagement.apply(
                .cicp(
                    primaries: Int(header.pointee.colorPrimaries),
                    transfer: Int(header.pointee.transferCharacteristics)),
                to: &image, options: options)
        }
    }

    /// The decoded YUV(A) planes of `image` as straight-alpha RGBA8, tone-mapped from 16 bits by
    /// `toneMapper` when there is one.
    private static func rgba(
        _ image: UnsafeMutablePointer<avifImage>, size: PixelSize, toneMapper: HDRToneMapper?
    ) throws -> [UInt8] {
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, image)
        rgb.format = AVIF_RGB_FORMAT_RGBA
        rgb.alphaPremultiplied = AVIF_FALSE
        if image.pointee.matrixCoefficients == AVIF_MATRIX_COEFFICIENTS_BT2020_CL {
            // libavif 0.11 cannot convert BT.2020 constant luminance ("Reformat failed").
            let wide = try AVIFConstantLuminance.rgba16(image)
            if let toneMapper { return toneMapper.map(wide) }
            return wide.map { UInt8((UInt32($0) * 255 + 32_767) / 65_535) }
        }
        if image.pointee.depth > 8 || toneMapper != nil {
            // 10 and 12 bits go through libavif's 16-bit conversion (its own floating-point maths), then
            // are rounded: its direct conversion to 8 bits goes through libyuv, whose fixed-point matrices
            // put red and blue about a step low on average (up to 3 steps; for 12-bit subsampled chroma up
            // to 19 steps off at chroma edges). The 16-bit result equals the H.273 equations computed in
            // floating point (docs/CONFORMANCE.md).
            rgb.depth = 16
            rgb.rowBytes = UInt32(size.width * 8)
            var result = AVIF_RESULT_OK
            let wide = [UInt16](unsafeUninitializedCapacity: size.width * size.height * 4) { buffer, count in
                rgb.pixels = UnsafeMutableRawPointer(buffer.baseAddress)?.assumingMemoryBound(to: UInt8.self)
                result = avifImageYUVToRGB(image, &rgb)
                count = result == AVIF_RESULT_OK ? buffer.count : 0
            }
            try check(result, "AVIF colour conversion failed")
            if let toneMapper { return toneMapper.map(wide) }
            return wide.map { UInt8((UInt32($0) * 255 + 32_767) / 65_535) }
        }
        rgb.depth = 8
        rgb.rowBytes = UInt32(size.width * 4)
        var result = AVIF_RESULT_OK
        let pixels = [UInt8](unsafeUninitializedCapacity: size.width * size.height * 4) { buffer, count in
            rgb.pixels = buffer.baseAddress
            result = avifImageYUVToRGB(image, &rgb)
            count = result == AVIF_RESULT_OK ? buffer.count : 0
        }
        try check(result, "AVIF colour conversion failed")
        return pixels
    }

    /// The clean aperture (`clap`) of `image` in its coded pixels, or nil when it has none or an invalid one
    /// (then the whole image shows, as browsers show it). The rectangle is asked for as if the planes were
    /// 4:4:4: the crop applies to the RGBA pixels, where any origin is possible, so the chroma-alignment
    /// rule libavif applies to subsampled planes (the one its strict mode enforces) does not matter here.
    static func cleanAperture(_ image: UnsafeMutablePointer<avifImage>) -> avifCropRect? {
        guard image.pointee.transformFlags & AVIF_TRANSFORM_CLAP.rawValue != 0 else { return nil }
        var rectangle = avifCropRect()
        var clap = image.pointee.clap
        var diagnostics = avifDiagnostics()
        guard
            avifCropRectConvertCleanApertureBox(
                &rectangle, &clap, image.pointee.width, image.pointee.height, AVIF_PIXEL_FORMAT_YUV444,
                &diagnostics) != AVIF_FALSE,
            rectangle.width > 0, rectangle.height > 0
        else { return nil }
        return rectangle
    }

    /// The rows and columns of RGBA `pixels` (`width` pixels a row) inside `rectangle`.
    static func crop(_ pixels: [UInt8], width: Int, to rectangle: avifCropRect) -> [UInt8] {
        let rowBytes = Int(rectangle.width) * 4
        var cropped = [UInt8]()
        cropped.reserveCapacity(rowBytes * Int(rectangle.height))
        for row in Int(rectangle.y)..<Int(rectangle.y + rectangle.height) {
            let start = (row * width + Int(rectangle.x)) * 4
            cropped.append(contentsOf: pixels[start..<(start + rowBytes)])
        }
        return cropped
    }

    /// The EXIF orientation (1…8) equal to the image's `irot` then `imir` transforms: `irot` turns the
    /// image `angle` × 90° anti-clockwise, then `imir` mode 0 swaps top and bottom, mode 1 left and right.
    static func orientation(_ image: avifImage) -> Int {
        let angle = image.transformFlags & AVIF_TRANSFORM_IROT.rawValue != 0 ? Int(image.irot.angle & 3) : 0
        let mirror = image.transformFlags & AVIF_TRANSFORM_IMIR.rawValue != 0 ? Int(image.imir.mode) : -1
        return HEIFItemProperties.exifOrientation(angle: angle, mirror: mirror)
    }

    private static func check(_ result: avifResult, _ message: String) throws {
        guard result == AVIF_RESULT_OK else {
            throw DecodingFailure.badImageData("\(message): \(describe(result))")
        }
    }

    private static func describe(_ result: avifResult) -> String {
        avifResultToString(result).map { String(cString: $0) } ?? "error \(result.rawValue)"
    }
}
