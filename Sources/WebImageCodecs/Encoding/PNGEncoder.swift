import CPNG
import Foundation

/// Encodes decoded pixels as PNG with libpng: 8-bit RGBA, non-interlaced; 16-bit RGBA for a frame that
/// still keeps 16 bits a channel (`ImageFrame.sixteenBitSamples`, from a decode with
/// `ImageDecodingOptions.keepsSixteenBits`).
///
/// The inverse of `PNGDecoder` for straight-alpha RGBA8 frames, so an encoded frame decodes back to the
/// same pixels. The image's RGB ICC profile (from a decode with `colorSpace = .preserve`) is written as
/// an `iCCP` chunk unless `embedsICCProfile` is off, so the colours stay labelled; libpng refuses a
/// profile it finds malformed, and the encode then fails. libpng's `longjmp` error handling stays inside
/// the CPNG shim.
///
/// ```swift
/// let result = try await downloader.image(for: url)
/// if let image = result.image {
///     try PNGEncoder().encode(image).write(to: URL(fileURLWithPath: "out.png"))
/// }
/// ```
public struct PNGEncoder: ImageEncoding {
    /// `.png`.
    public var format: ImageFormat { .png }
    /// Every parameter: `png;level=6;icc=1`.
    public var key: String { "png;level=\(compressionLevel);icc=\(embedsICCProfile ? 1 : 0)" }

    /// zlib compression level, 0 (none, fastest) … 9 (smallest). `6` by default.
    public var compressionLevel: Int

    /// Whether the image's ICC profile is written (`iCCP`). `true` by default.
    public var embedsICCProfile: Bool

    /// Asked before every 16th row is compressed; when it says stop, `encode` throws `.stopped`. Not part
    /// of `key`: it decides whether bytes are made, never which. nil by default.
    public var stopCheck: EncodeStopCheck?

    /// Creates an encoder.
    public init(compressionLevel: Int = 6, embedsICCProfile: Bool = true, stopCheck: EncodeStopCheck? = nil) {
        self.stopCheck = stopCheck
        self.compressionLevel = compressionLevel
        self.embedsICCProfile = embedsICCProfile
    }

    /// Encodes the first frame of `image` (a partial image encodes what it holds), with its ICC profile.
    ///
    /// - Throws: `ImageCodecError` `.encodingFailed` when the image has no frame, or libpng fails or refuses the profile.
    public func encode(_ image: Image) throws -> Data {
        guard let frame = image.frames.first else {
            throw ImageCodecError(.encodingFailed, "the image has no frame to encode")
        }
        return try encode(frame, iccProfile: embedsICCProfile ? image.iccProfile : nil, exif: image.exif)
    }

    /// Encodes one RGBA8 frame, unlabelled.
    ///
    /// - Throws: `ImageCodecError` `.encodingFailed` when the frame's size and pixel buffer disagree or libpng fails.
    public func encode(_ frame: ImageFrame) throws -> Data {
        try encode(frame, iccProfile: nil, exif: nil)
    }

    private func encode(_ frame: ImageFrame, iccProfile: Data?, exif: Data?) throws -> Data {
        guard frame.width > 0, frame.height > 0, frame.width <= Int(UInt32.max), frame.height <= Int(UInt32.max),
            frame.bytesPerRow >= frame.width * 4, frame.pixels.count >= frame.height * frame.bytesPerRow
        else {
            throw ImageCodecError(
                .encodingFailed,
                "invalid frame: \(frame.width)×\(frame.height), \(frame.bytesPerRow) bytes per row, "
                    + "\(frame.pixels.count) bytes of pixels")
        }
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 256)
        if let iccProfile, iccProfile.count > Int(UInt32.max) {
            throw ImageCodecError(
                .encodingFailed, "an ICC profile of \(iccProfile.count) bytes does not fit a PNG chunk")
        }
        let icc = iccProfile.map { [UInt8]($0) }
        let exifBytes = [UInt8](exif ?? Data())
        let level = Int32(compressionLevel)
        let status: Int32 = exifBytes.withUnsafeBufferPointer { exifBuffer in
            let exifBase = exifBytes.isEmpty ? nil : exifBuffer.baseAddress
            let status: Int32
            if let deep = frame.sixteenBitSamples {
                // The frame keeps 16 bits a channel: a 16-bit PNG.
                status = deep.withUnsafeBufferPointer { samples -> Int32 in
                    guard let base = samples.baseAddress else { return -1 }
                    return (icc ?? []).withUnsafeBufferPointer { profile in
                        EncodeStopCheck.withCallback(stopCheck) { shouldStop, stopContext in
                            wi_png_encode_rgba16(
                                base, UInt32(frame.width), UInt32(frame.height), frame.width * 8, level,
                                icc == nil ? nil : profile.baseAddress, UInt32(profile.count), exifBase,
                                UInt32(exifBytes.count),
                                &output, &length, &message, message.count, shouldStop, stopContext)
                        }
                    }
                }
            } else {
                status = frame.pixels.withUnsafeBufferPointer { pixels -> Int32 in
                    guard let base = pixels.baseAddress else { return -1 }
                    return (icc ?? []).withUnsafeBufferPointer { profile in
                        EncodeStopCheck.withCallback(stopCheck) { shouldStop, stopContext in
                            wi_png_encode_rgba(
                                base, UInt32(frame.width), UInt32(frame.height), frame.bytesPerRow, level,
                                icc == nil ? nil : profile.baseAddress, UInt32(profile.count), exifBase,
                                UInt32(exifBytes.count),
                                &output, &length, &message, message.count, shouldStop, stopContext)
                        }
                    }
                }
            }
            return status
        }
        if status == -2 { throw EncodeStopCheck.stopped("PNG") }
        guard status == 0, let output else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw ImageCodecError(.encodingFailed, "PNG encoding failed: \(text.isEmpty ? "unknown error" : text)")
        }
        // The shim's buffer is copied into Data and freed here; nothing keeps a pointer into it.
        defer { wi_png_encode_free(output) }
        return Data(bytes: output, count: length)
    }
}
