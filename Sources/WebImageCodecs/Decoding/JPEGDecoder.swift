import CJPEG
import Foundation

/// Decodes JPEG with libjpeg-turbo: baseline, progressive, grayscale, CMYK and YCCK (including Adobe's
/// inverted CMYK), straight to RGBA8.
///
/// Colour: an ICC profile in APP2 is applied as `ImageDecodingOptions.colorSpace` asks (see
/// `ImageColorSpace`). CMYK files with a CMYK profile are converted through it by LittleCMS; without one,
/// by the usual naive formula (ink × black).
///
/// Scale-down and thumbnails use libjpeg's DCT scaling (1/2, 1/4, 1/8), so the full-size bitmap is never
/// allocated when a smaller one was asked for. The EXIF orientation in APP1 (else XMP's
/// `tiff:Orientation`) is applied unless `ImageDecodingOptions.preserveOrientation` is set.
/// Truncated data decodes to an image with `isPartial == true` (libjpeg fills what is missing with gray).
///
/// ```swift
/// let image = try JPEGDecoder().decode(data, options: .init(thumbnailPixelSize: .init(width: 200, height: 200)))
/// ```
public struct JPEGDecoder: ImageDecoding {
    /// The DCT scale denominators libjpeg offers (output = size × 1/denominator, rounded up).
    static let scaleDenominators = [1, 2, 4, 8]

    /// Creates the decoder; it holds no state.
    public init() {}

    /// Whether `data` starts with a JPEG SOI marker.
    public func canDecode(_ data: Data) -> Bool { ImageFormat.detect(data) == .jpeg }

    /// Decodes the first image in `data`.
    public func decode(_ data: Data, options: ImageDecodingOptions) throws -> Image {
        guard !data.isEmpty else { throw DecodingFailure.emptyData() }
        let orientation = EXIFOrientation.fromJPEG(data)
        return try data.withUnsafeBytes { raw -> Image in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                throw DecodingFailure.emptyData()
            }
            // The decompressor reads `raw` in place; it is destroyed before `withUnsafeBytes` returns.
            guard let decompressor = JPEGDecompressor(base, raw.count) else {
                throw DecodingFailure.badImageData("JPEG: out of memory creating the decompressor")
            }
            return try decompressor.decode(options: options, orientation: orientation)
        }
    }
}

/// Owns one libjpeg decompressor for one decode.
private final class JPEGDecompressor {
    private let handle: OpaquePointer

    init?(_ data: UnsafePointer<UInt8>, _ length: Int) {
        guard let handle = wi_jpeg_create(data, length) else { return nil }
        self.handle = handle
    }

    deinit { wi_jpeg_destroy(handle) }

    private var message: String { String(cString: wi_jpeg_error_message(handle)) }

    func decode(options: ImageDecodingOptions, orientation: Int) throws -> Image {
        var header = wi_jpeg_header()
        guard wi_jpeg_read_header(handle, &header) == 0 else {
            throw DecodingFailure.badImageData("JPEG header unreadable: \(message)")
        }
        let sizing = try DecodeSizing(
            width: Int(header.width), height: Int(header.height), format: .jpeg, options: options,
            orientation: orientation)
        let profile = iccProfile().flatMap { ColorManagement.isUsable($0, format: .jpeg, options: options) ? $0 : nil }
        // CMYK with a CMYK profile: libjpeg hands over ink amounts and LittleCMS converts them.
        let managedCMYK =
            header.colorSpace == Int32(WI_JPEG_CMYK) && profile.map(ColorManagement.isCMYKProfile) == true
        wi_jpeg_set_raw_cmyk(handle, managedCMYK ? 1 : 0)
        var candidates: [PixelSize] = []
        for denominator in JPEGDecoder.scaleDenominators {
            var width: Int32 = 0
            var height: Int32 = 0
            guard wi_jpeg_scaled_size(handle, Int32(denominator), &width, &height) == 0 else {
                throw DecodingFailure.badImageData("JPEG: cannot compute the output size: \(message)")
            }
            candidates.append(PixelSize(width: Int(width), height: Int(height)))
        }
        let choice = sizing.nativeSize(among: candidates)
        let native = candidates[choice]
        let final = sizing.finalSize(native: native)
        // The output bitmap, its scaled copy, and for multi-scan files libjpeg's coefficient buffer (two
        // bytes per sample of every component at full size).
        let samples = min(PixelMemory.bytes(sizing.original) / 4, Int.max / 64) * max(1, Int(header.components))
        let claim = try PixelMemory.claim(
            PixelMemory.sum(
                PixelMemory.bytes(native), final == native ? 0 : PixelMemory.bytes(final),
                header.progressive != 0 ? 2 * samples : 0),
            largest: PixelMemory.bytes(native), options: options, for: "JPEG \(sizing.original)")
        defer { claim.release() }
        let stride = native.width * 4
        var rows: Int32 = 0
        var status: Int32 = 0
        let pixels = [UInt8](unsafeUninitializedCapacity: stride * native.height) { buffer, count in
            if let base = buffer.baseAddress {
                // wi_jpeg_decode writes every row: decoded pixels or zeros.
                status = wi_jpeg_decode(
                    handle, Int32(JPEGDecoder.scaleDenominators[choice]), base, stride, Int32(native.width),
                    Int32(native.height), &rows)
                count = stride * native.height
            } else {
                status = -1
                count = 0
            }
        }
        guard status == 0 || rows > 0 else { throw DecodingFailure.badImageData("JPEG undecodable: \(message)") }
        let isPartial = status != 0 || wi_jpeg_was_truncated(handle) != 0
        var converted = pixels
        if managedCMYK, let profile, !ColorManagement.convertCMYK(&converted, profileData: profile) {
            throw DecodingFailure.badImageData("JPEG: the CMYK profile could not be used")
        }
        var frame = ImageFrame(width: native.width, height: native.height, bytesPerRow: stride, pixels: converted)
        frame = PixelResampler.resample(frame, to: final)
        var image = Image(
            format: .jpeg, width: final.width, height: final.height, originalWidth: sizing.original.width,
            originalHeight: sizing.original.height, frames: [frame], hasAlpha: false, isPartial: isPartial)
        if !managedCMYK, let profile { ColorManagement.apply(.icc(profile), to: &image, options: options) }
        image.orient(orientation, options: options)
        return image
    }

    /// The ICC profile of the APP2 markers, when there is one.
    private func iccProfile() -> Data? {
        var bytes: UnsafeMutablePointer<UInt8>?
        var length: UInt32 = 0
        guard wi_jpeg_icc_profile(handle, &bytes, &length) == 1, let bytes else { return nil }
        defer { wi_jpeg_free(bytes) }
        return Data(bytes: bytes, count: Int(length))
    }
}
