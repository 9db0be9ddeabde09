import CHEIF
import Foundation

/// Decodes HEIC and other HEIF stills with libheif (HEVC through libde265): the primary image, with
/// alpha, grids (libheif assembles the tiles) and its ICC profile or CICP (`nclx`) colour.
///
/// Geometry: libheif applies the file's clean aperture (`clap`), rotation (`irot`) and mirror (`imir`), so
/// the image is upright, as iPhones' photos are shown everywhere, and `exifOrientation` is 1. libheif 1.15
/// does not report the transforms it applied, so the decoder reads `irot` and `imir` from the file's boxes
/// (`HEIFItemProperties`): `fileOrientation` says what they amount to, and with `preserveOrientation` the
/// upright pixels are turned back to the stored layout (cropped by `clap`), with `exifOrientation` the
/// turn still to apply, as for the other formats.
///
/// Limits: the declared size is checked against `maximumImagePixels` and the pixel memory is claimed
/// before libheif decodes anything; libheif's own size limit is set to the same number of pixels on a
/// side. A thumbnail request (`thumbnailPixelSize`) decodes the file's embedded thumbnail instead when it
/// is at least as large as the box asks; otherwise the full image is decoded and averaged down.
/// `prefersEmbeddedThumbnail` makes the first embedded thumbnail the image (its size the original size),
/// whatever its size, when the file has one.
///
/// Not supported by libheif 1.15, so not here: image sequences (`.heics` animation tracks; a file with
/// only a track and no still item fails with `badImageData`) and the gain maps of HDR photos. Images of
/// 10 or more bits are reduced to 8 by libheif, except PQ and HLG (HDR) ones, taken at 16 bits and
/// tone-mapped to sRGB (`HDRToneMapper`; with `.preserve` the stored values stay, described by `Image.cicp`).
///
/// This file is the only one that calls libheif.
public struct HEIFDecoder: ImageDecoding {
    /// Creates the decoder; it holds no state.
    public init() {}

    /// Whether `data` is an ISOBMFF file whose brands name HEIF (and not AVIF).
    public func canDecode(_ data: Data) -> Bool { ImageFormat.detect(data) == .heic }

    /// libheif's plugin registry, set up once per process (`heif_init` is reference-counted and never
    /// undone here).
    private static let initialized: Bool = {
        _ = heif_init(nil)
        return true
    }()

    /// Decodes `data`.
    public func decode(_ data: Data, options: ImageDecodingOptions) throws -> Image {
        guard !data.isEmpty else { throw DecodingFailure.emptyData() }
        // What libheif and libde265 print about damaged data on this thread goes to the log.
        return try LibraryMessages.routed(from: "libheif") { try decodeRouted(data, options: options) }
    }

    private func decodeRouted(_ data: Data, options: ImageDecodingOptions) throws -> Image {
        _ = Self.initialized
        guard let context = heif_context_alloc() else { throw DecodingFailure.badImageData("HEIF: out of memory") }
        defer { heif_context_free(context) }
        // libheif's limit is on the pixel count, named as a width (squared inside).
        let side = Int(Double(options.maximumImagePixels).squareRoot().rounded(.up))
        heif_context_set_maximum_image_size_limit(context, Int32(clamping: max(1, side)))
        return try data.withUnsafeBytes { raw -> Image in
            guard let base = raw.baseAddress else { throw DecodingFailure.emptyData() }
            try Self.check(
                heif_context_read_from_memory_without_copy(context, base, raw.count, nil), "HEIF header unreadable")
            var primary: OpaquePointer?
            try Self.check(heif_context_get_primary_image_handle(context, &primary), "HEIF has no primary image")
            guard let primary else { throw DecodingFailure.badImageData("HEIF has no primary image") }
            defer { heif_image_handle_release(primary) }
            // `prefersEmbeddedThumbnail`: the first embedded thumbnail is the image (upright, as libheif gives
            // it), as if the file held only it.
            let embedded = options.prefersEmbeddedThumbnail ? Self.firstThumbnail(of: primary) : nil
            defer { embedded.map { heif_image_handle_release($0) } }
            let main = embedded ?? primary
            // libheif's sizes are upright; DecodeSizing works in the stored layout, turned a quarter back
            // when the file's orientation turns it.
            let declared = embedded == nil ? HEIFItemProperties.primaryOrientation(data) : 1
            let upright = PixelSize(
                width: Int(heif_image_handle_get_width(main)), height: Int(heif_image_handle_get_height(main)))
            let stored = declared >= 5 ? PixelSize(width: upright.height, height: upright.width) : upright
            let sizing = try DecodeSizing(
                width: stored.width, height: stored.height, format: .heic, options: options, orientation: declared)
            let uprightTarget =
                declared >= 5 ? PixelSize(width: sizing.target.height, height: sizing.target.width) : sizing.target
            // The coded size (before a crop or rotation) bounds libheif's planes.
            let coded = try DecodeSizing(
                width: Int(heif_image_handle_get_ispe_width(main)),
                height: Int(heif_image_handle_get_ispe_height(main)), format: .heic, options: options)
            let thumbnail =
                options.thumbnailPixelSize != nil && embedded == nil
                ? Self.thumbnail(of: primary, covering: uprightTarget) : nil
            defer { thumbnail.map { heif_image_handle_release($0) } }
            let handle = thumbnail ?? main
            let source =
                thumbnail.map {
                    PixelSize(
                        width: Int(heif_image_handle_get_width($0)), height: Int(heif_image_handle_get_height($0)))
                } ?? upright
            // libheif's YUV planes (at most two canvases' worth at 16 bits), its RGBA image, and this copy.
            let codedBytes = PixelMemory.bytes(thumbnail == nil ? coded.original : source, count: 2)
            let bytes = PixelMemory.sum(codedBytes, PixelMemory.bytes(source, count: 2))
            let claim = try PixelMemory.claim(
                bytes, largest: PixelMemory.bytes(source), options: options, for: "HEIF \(sizing.original)")
            defer { claim.release() }

            let hasAlpha = heif_image_handle_has_alpha_channel(main) != 0
            let profile = Self.colorProfile(of: main)
            var toneMapper: HDRToneMapper?
            if options.colorSpace == .sRGB, case .cicp(let primaries, let transfer) = profile {
                toneMapper = HDRToneMapper(primaries: primaries, transfer: transfer)
            }
            var frame = try Self.rgba(handle, size: source, toneMapper: toneMapper)
            if frame.width != uprightTarget.width || frame.height != uprightTarget.height {
                frame = PixelResampler.resample(frame, to: uprightTarget)
            }
            // libheif turned the pixels upright; `preserveOrientation` asks for the stored layout back.
            let preserves = options.preserveOrientation && declared != 1
            if preserves {
                frame = PixelOps.orient(frame, Self.inverse(of: declared))
            }
            let original = preserves ? stored : upright
            var image = Image(
                format: .heic, width: frame.width, height: frame.height, originalWidth: original.width,
                originalHeight: original.height, frames: [frame], exifOrientation: preserves ? declared : 1,
                fileOrientation: declared, hasAlpha: hasAlpha)
            if toneMapper == nil, let profile {
                ColorManagement.apply(profile, to: &image, options: options)
            }
            return image
        }
    }

    /// The EXIF orientation that undoes `orientation`: the quarter turns swap, the rest undo themselves.
    static func inverse(of orientation: Int) -> Int {
        switch orientation {
        case 6: 8
        case 8: 6
        default: orientation
        }
    }

    /// The first embedded thumbnail of `primary`, or nil when it has none.
    private static func firstThumbnail(of primary: OpaquePointer) -> OpaquePointer? {
        var identifier = heif_item_id()
        guard heif_image_handle_get_list_of_thumbnail_IDs(primary, &identifier, 1) == 1 else { return nil }
        var handle: OpaquePointer?
        guard heif_image_handle_get_thumbnail(primary, identifier, &handle).code == heif_error_Ok else { return nil }
        return handle
    }

    /// The first embedded thumbnail of `primary` that covers `target`, or nil (then the full image decodes).
    private static func thumbnail(of primary: OpaquePointer, covering target: PixelSize) -> OpaquePointer? {
        let count = Int(heif_image_handle_get_number_of_thumbnails(primary))
        guard count > 0 else { return nil }
        var identifiers = [heif_item_id](repeating: 0, count: count)
        let listed = Int(heif_image_handle_get_list_of_thumbnail_IDs(primary, &identifiers, Int32(count)))
        for identifier in identifiers.prefix(listed) {
            var handle: OpaquePointer?
            guard heif_image_handle_get_thumbnail(primary, identifier, &handle).code == heif_error_Ok, let handle
            else { continue }
            if Int(heif_image_handle_get_width(handle)) >= target.width
                && Int(heif_image_handle_get_height(handle)) >= target.height
            {
                return handle
            }
            heif_image_handle_release(handle)
        }
        return nil
    }

    /// The image of `handle`, decoded and converted by libheif to interleaved RGBA8 (straight alpha, opaque
    /// when the image has none), checked to be `size`. With `toneMapper` (a PQ or HLG image), libheif
    /// converts to 16 bits a sample instead, and the mapper tone-maps that to sRGB.
    private static func rgba(_ handle: OpaquePointer, size: PixelSize, toneMapper: HDRToneMapper?) throws
        -> ImageFrame
    {
        guard let decoding = heif_decoding_options_alloc() else {
            throw DecodingFailure.badImageData("HEIF: out of memory")
        }
        defer { heif_decoding_options_free(decoding) }
        decoding.pointee.convert_hdr_to_8bit = toneMapper == nil ? 1 : 0
        var decoded: OpaquePointer?
        let chroma = toneMapper == nil ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RRGGBBAA_LE
        try check(heif_decode_image(handle, &decoded, heif_colorspace_RGB, chroma, decoding), "HEIF undecodable")
        guard let decoded else { throw DecodingFailure.badImageData("HEIF undecodable: no image") }
        defer { heif_image_release(decoded) }
        let width = Int(heif_image_get_width(decoded, heif_channel_interleaved))
        let height = Int(heif_image_get_height(decoded, heif_channel_interleaved))
        guard width == size.width, height == size.height else {
            throw DecodingFailure.badImageData(
                "HEIF decoded to \(width)×\(height), not the \(size.width)×\(size.height) its header declares")
        }
        var stride: Int32 = 0
        let sampleBytes = toneMapper == nil ? 1 : 2
        guard let plane = heif_image_get_plane_readonly(decoded, heif_channel_interleaved, &stride),
            Int(stride) >= width * 4 * sampleBytes
        else { throw DecodingFailure.badImageData("HEIF undecodable: no interleaved RGBA plane") }
        let rowBytes = width * 4
        if let toneMapper {
            // Samples of `bits` bits in 16-bit little-endian words, stretched to the full 16-bit range.
            let bits = Int(heif_image_get_bits_per_pixel_range(decoded, heif_channel_interleaved))
            let maximum = UInt32((1 << min(max(bits, 1), 16)) - 1)
            var samples = [UInt16](repeating: 0, count: width * height * 4)
            for row in 0..<height {
                let line = UnsafeRawPointer(plane + row * Int(stride))
                for index in 0..<(width * 4) {
                    let value = UInt32(
                        UInt16(littleEndian: line.loadUnaligned(fromByteOffset: index * 2, as: UInt16.self)))
                    samples[row * width * 4 + index] = UInt16(min(value, maximum) * 65_535 / maximum)
                }
            }
            return ImageFrame(width: width, height: height, bytesPerRow: rowBytes, pixels: toneMapper.map(samples))
        }
        let pixels = [UInt8](unsafeUninitializedCapacity: rowBytes * height) { buffer, count in
            for row in 0..<height {
                (buffer.baseAddress! + row * rowBytes).update(from: plane + row * Int(stride), count: rowBytes)
            }
            count = rowBytes * height
        }
        return ImageFrame(width: width, height: height, bytesPerRow: rowBytes, pixels: pixels)
    }

    /// The colour the file declares for `handle`: its ICC profile, or its CICP primaries and transfer.
    private static func colorProfile(of handle: OpaquePointer) -> EmbeddedColorSpace? {
        switch heif_image_handle_get_color_profile_type(handle) {
        case heif_color_profile_type_prof, heif_color_profile_type_rICC:
            let size = heif_image_handle_get_raw_color_profile_size(handle)
            guard size > 0 else { return nil }
            var profile = Data(count: size)
            let error = profile.withUnsafeMutableBytes {
                heif_image_handle_get_raw_color_profile(handle, $0.baseAddress)
            }
            return error.code == heif_error_Ok ? .icc(profile) : nil
        case heif_color_profile_type_nclx:
            var nclx: UnsafeMutablePointer<heif_color_profile_nclx>?
            let error = heif_image_handle_get_nclx_color_profile(handle, &nclx)
            // libheif allocates the profile before it checks the code points, so it is freed on an error too.
            defer { nclx.map { heif_nclx_color_profile_free($0) } }
            guard error.code == heif_error_Ok, let nclx else { return nil }
            return .cicp(
                primaries: Int(nclx.pointee.color_primaries.rawValue),
                transfer: Int(nclx.pointee.transfer_characteristics.rawValue))
        default:
            return nil
        }
    }

    private static func check(_ error: heif_error, _ message: String) throws {
        guard error.code != heif_error_Ok else { return }
        let detail = error.message.map { String(cString: $0) } ?? "error \(error.code.rawValue)"
        throw DecodingFailure.badImageData("\(message): \(detail)")
    }
}
