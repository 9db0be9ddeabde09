import CAVIF
import CAVIFChild
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
    /// Asked before the colour conversion and before the AV1 encode, then every 20 ms during it; when it
    /// says stop, `encode` throws `.stopped`. libavif 0.11 has no progress hook or cancel call, so with a
    /// stop check the AV1 encode runs in a child process (a `fork` of this one, which shares its pages until
    /// either writes), and stopping kills that process: the CPU is given back at once. The fork costs about
    /// a millisecond, little beside an AV1 encode. Without a stop check (the default) it runs in this
    /// process, as it does in a ThreadSanitizer build, whose runtime cannot follow a forked child that
    /// starts threads. nil by default.
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
        if let stopCheck, Self.stopsInChildProcess {
            return try Self.encodeInChild(encoder, avif, stopCheck: stopCheck, pixelCount: frame.width * frame.height)
        }
        var output = avifRWData()
        defer { avifRWDataFree(&output) }
        try Self.check(avifEncoderWrite(encoder, avif, &output), "AVIF encoding failed")
        guard let bytes = output.data else { throw ImageCodecError(.encodingFailed, "AVIF encoding produced nothing") }
        return Data(bytes: bytes, count: output.size)
    }

    /// Whether an encode with a stop check runs its AV1 step in a child process, so the check can end it
    /// part-way: true except in a ThreadSanitizer build.
    public static var stopsInChildProcess: Bool { wi_avif_child_encoding_available() != 0 }

    /// Runs the AV1 encode in a child process that `stopCheck` can end (`wi_avif_encode_in_child`).
    private static func encodeInChild(
        _ encoder: UnsafeMutablePointer<avifEncoder>, _ avif: UnsafeMutablePointer<avifImage>,
        stopCheck: EncodeStopCheck, pixelCount: Int
    ) throws -> Data {
        _ = codecIsSetUp
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 256)
        // An AVIF is far smaller than its pixels; four bytes a pixel and a megabyte of container bound any
        // answer a working encoder gives.
        let (pixelBytes, overflow) = pixelCount.multipliedReportingOverflow(by: 4)
        let maximumBytes = overflow ? Int.max : pixelBytes.addingReportingOverflow(1 << 20).partialValue
        let status = EncodeStopCheck.withCallback(stopCheck) { shouldStop, stopContext -> Int32 in
            guard let shouldStop else { return -1 }
            return wi_avif_encode_in_child(
                encoder, avif, maximumBytes, shouldStop, stopContext, &output, &length, &message, message.count)
        }
        if status == -2 { throw EncodeStopCheck.stopped("AVIF") }
        guard status == 0, let output else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw ImageCodecError(.encodingFailed, "AVIF encoding failed: \(text.isEmpty ? "unknown error" : text)")
        }
        defer { wi_avif_child_free(output) }
        return Data(bytes: output, count: length)
    }

    /// One small encode in this process before the first child: the AV1 codec's one-time set-up (its CPU
    /// feature tables) is then done, so a child never waits for a lock that a thread of this process held
    /// at the fork.
    private static let codecIsSetUp: Bool = {
        let frame = ImageFrame(width: 8, height: 8, bytesPerRow: 32, pixels: [UInt8](repeating: 128, count: 256))
        let image = Image(format: .avif, width: 8, height: 8, frames: [frame])
        return (try? AVIFEncoder(speed: 9, threads: 1).encode(image)) != nil
    }()

    private static func check(_ result: avifResult, _ message: String) throws {
        guard result == AVIF_RESULT_OK else {
            throw ImageCodecError(
                .encodingFailed,
                "\(message): \(avifResultToString(result).map { String(cString: $0) } ?? "\(result)")")
        }
    }
}
