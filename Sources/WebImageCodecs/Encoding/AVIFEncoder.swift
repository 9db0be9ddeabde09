import CAVIF
import Foundation

/// Encodes the first frame as AVIF with libavif, through whichever AV1 encoder libavif was built with
/// (Debian's: aom, rav1e, SVT-AV1); `isAvailable` tells whether there is one.
///
/// `quality` 1…100 maps onto AV1's quantizer (100 is lossless-grade quantizer 0, 1 is 63); alpha uses the
/// same. 8-bit 4:2:0 by default (`.yuv444` keeps full-resolution chroma). The image's RGB ICC profile
/// is embedded unless `embedsICCProfile` is off.
public struct AVIFEncoder: ImageEncoding {
    /// Chroma sampling.
    public enum ChromaSubsampling: String, Sendable, Hashable {
        case yuv420
        case yuv444
    }

    /// 1…100. `60` by default.
    public var quality: Int
    /// libavif's speed, 0 (slowest, smallest) … 10 (fastest). `6` by default.
    public var speed: Int
    /// `.yuv420` by default.
    public var chromaSubsampling: ChromaSubsampling
    /// Whether the image's ICC profile is written. `true` by default.
    public var embedsICCProfile: Bool
    /// The most threads libavif and its AV1 encoder may use for one image (libavif's `maxThreads`). Part of
    /// `key`: at the slower speeds libaom's bytes differ with the number of threads. `2` by default.
    public var threads: Int
    /// Asked before the colour conversion and before the AV1 encode; when it says stop, `encode` throws
    /// `.stopped`. libavif 0.11 has no progress hook or cancel call, so an AV1 encode once started runs
    /// to its end: `speed` is what bounds that step. nil by default.
    public var stopCheck: EncodeStopCheck?

    /// `.avif`.
    public var format: ImageFormat { .avif }
    /// Every parameter: `avif;q=60;speed=6;chroma=yuv420;icc=1;threads=2`.
    public var key: String {
        "avif;q=\(quality);speed=\(speed);chroma=\(chromaSubsampling.rawValue);icc=\(embedsICCProfile ? 1 : 0)"
            + ";threads=\(threads)"
    }

    /// Creates an encoder.
    public init(
        quality: Int = 60, speed: Int = 6, chromaSubsampling: ChromaSubsampling = .yuv420,
        embedsICCProfile: Bool = true, threads: Int = 2, stopCheck: EncodeStopCheck? = nil
    ) {
        self.quality = quality
        self.speed = speed
        self.chromaSubsampling = chromaSubsampling
        self.embedsICCProfile = embedsICCProfile
        self.threads = threads
        self.stopCheck = stopCheck
    }

    /// Whether the linked libavif can encode (it was built with an AV1 encoder).
    public static var isAvailable: Bool {
        avifCodecName(AVIF_CODEC_CHOICE_AUTO, avifCodecFlags(AVIF_CODEC_FLAG_CAN_ENCODE.rawValue)) != nil
    }

    public func encode(_ image: Image) throws -> Data {
        guard Self.isAvailable else { throw ImageCodecError(.encodingFailed, "this libavif has no AV1 encoder") }
        let frame = try EncodingCheck.frame(image)
        try stopCheck?.check("AVIF")
        let pixelFormat = chromaSubsampling == .yuv444 ? AVIF_PIXEL_FORMAT_YUV444 : AVIF_PIXEL_FORMAT_YUV420
        guard let avif = avifImageCreate(UInt32(frame.width), UInt32(frame.height), 8, pixelFormat) else {
            throw ImageCodecError(.encodingFailed, "AVIF: out of memory")
        }
        defer { avifImageDestroy(avif) }
        if embedsICCProfile, let icc = image.iccProfile, !icc.isEmpty {
            icc.withUnsafeBytes {
                avifImageSetProfileICC(avif, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count)
            }
        }
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, avif)
        rgb.format = AVIF_RGB_FORMAT_RGBA
        rgb.depth = 8
        rgb.rowBytes = UInt32(frame.bytesPerRow)
        var pixels = frame.pixels
        let converted = pixels.withUnsafeMutableBufferPointer { buffer -> avifResult in
            rgb.pixels = buffer.baseAddress
            if !image.hasAlpha { rgb.ignoreAlpha = AVIF_TRUE }
            return avifImageRGBToYUV(avif, &rgb)
        }
        try Self.check(converted, "AVIF colour conversion failed")
        try stopCheck?.check("AVIF")
        guard let encoder = avifEncoderCreate() else { throw ImageCodecError(.encodingFailed, "AVIF: out of memory") }
        defer { avifEncoderDestroy(encoder) }
        let quantizer = Int32((100 - EncodingCheck.quality(quality)) * 63 / 99)
        encoder.pointee.maxThreads = Int32(min(64, max(1, threads)))
        encoder.pointee.speed = Int32(min(10, max(0, speed)))
        encoder.pointee.minQuantizer = quantizer
        encoder.pointee.maxQuantizer = quantizer
        encoder.pointee.minQuantizerAlpha = quantizer
        encoder.pointee.maxQuantizerAlpha = quantizer
        var output = avifRWData()
        defer { avifRWDataFree(&output) }
        try Self.check(avifEncoderWrite(encoder, avif, &output), "AVIF encoding failed")
        guard let bytes = output.data else { throw ImageCodecError(.encodingFailed, "AVIF encoding produced nothing") }
        return Data(bytes: bytes, count: output.size)
    }

    private static func check(_ result: avifResult, _ message: String) throws {
        guard result == AVIF_RESULT_OK else {
            throw ImageCodecError(
                .encodingFailed,
                "\(message): \(avifResultToString(result).map { String(cString: $0) } ?? "\(result)")")
        }
    }
}
