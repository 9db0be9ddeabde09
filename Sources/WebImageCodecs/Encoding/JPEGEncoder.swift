import CJPEG
import Foundation

/// Encodes the first frame as JPEG with libjpeg-turbo.
///
/// Transparent pixels are composited over `background` (JPEG has no alpha; white by default, as
/// browsers show a transparent PNG on a white page). Huffman tables are optimised for each image unless
/// `optimizesHuffmanTables` is off (progressive scans always have them). The image's RGB ICC
/// profile (from a decode with `colorSpace = .preserve`) is embedded unless `embedsICCProfile` is off; a
/// profile too large for JPEG's 255 APP2 markers (more than `maximumICCProfileBytes`) is refused with an
/// `ImageCodecError` `.encodingFailed`, never written truncated or with a marker count that wraps: decode with
/// `colorSpace = .sRGB` (the pixels then need no profile) or turn `embedsICCProfile` off.
/// EXIF is written when given in `exif` (the APP1 payload, starting with "Exif\0\0"), else from the image's
/// `exif` (`Image.exif`, which a decode keeps only when asked to).
///
/// ```swift
/// let data = try JPEGEncoder(quality: 85, progressive: true).encode(image)
/// ```
public struct JPEGEncoder: ImageEncoding {
    /// Chroma sampling.
    public enum ChromaSubsampling: String, Sendable, Hashable {
        /// Chroma at half resolution both ways (smaller; the web's usual).
        case yuv420
        /// Chroma at full resolution (sharper colour edges: text, graphics).
        case yuv444
    }

    /// 1…100. `85` by default.
    public var quality: Int
    /// Progressive scans instead of baseline. `false` by default.
    public var progressive: Bool
    /// nil (the default) picks as libvips does: `.yuv444` at quality 90 and above, where halving the
    /// chroma would cost more than the quantiser does, else `.yuv420`.
    public var chromaSubsampling: ChromaSubsampling?
    /// Whether baseline JPEG gets Huffman tables made for the image (a second pass over its coefficients)
    /// instead of the standard tables. `true` by default: files are a few percent smaller. Off, libjpeg-turbo
    /// encodes about four times faster (a 256² q95 photo: 0.18 ms against 0.75), which is what a dataset
    /// build (`webimage bulk`) wants; OpenCV, and so img2dataset, writes the standard tables too. Progressive
    /// scans always have optimised tables.
    public var optimizesHuffmanTables: Bool
    /// The largest ICC profile JPEG can carry: 255 APP2 markers of 65,519 profile bytes each.
    public static let maximumICCProfileBytes = 255 * 65_519

    /// Whether the image's ICC profile is written (APP2). `true` by default.
    public var embedsICCProfile: Bool
    /// EXIF data to write as APP1, or nil (the default) for none.
    public var exif: Data?
    /// What transparent pixels are composited over. White by default.
    public var background: ImageColor
    /// Asked from libjpeg's progress monitor, while rows are written and in every pass after them; when it
    /// says stop, `encode` throws `.stopped`. Not part of `key`: it decides whether bytes are made, never
    /// which. nil by default.
    public var stopCheck: EncodeStopCheck?

    /// `.jpeg`.
    public var format: ImageFormat { .jpeg }
    /// Every parameter: `jpeg;q=85;progressive=0;chroma=auto;icc=1;exif=none;background=#ffffffff`, and
    /// `;huffman=standard` when ``optimizesHuffmanTables`` is off (the keys of the default stay as they were).
    public var key: String {
        let exifKey = exif.map { "\($0.count):\(String(BodyChecksum.hash($0), radix: 16))" } ?? "none"
        return
            "jpeg;q=\(quality);progressive=\(progressive ? 1 : 0);chroma=\(chromaSubsampling?.rawValue ?? "auto");"
            + "icc=\(embedsICCProfile ? 1 : 0);exif=\(exifKey);background=\(background)"
            + (optimizesHuffmanTables ? "" : ";huffman=standard")
    }

    /// Creates an encoder.
    public init(
        quality: Int = 85, progressive: Bool = false, chromaSubsampling: ChromaSubsampling? = nil,
        embedsICCProfile: Bool = true, exif: Data? = nil, background: ImageColor = .white,
        optimizesHuffmanTables: Bool = true, stopCheck: EncodeStopCheck? = nil
    ) {
        self.stopCheck = stopCheck
        self.optimizesHuffmanTables = optimizesHuffmanTables
        self.quality = quality
        self.progressive = progressive
        self.chromaSubsampling = chromaSubsampling
        self.embedsICCProfile = embedsICCProfile
        self.exif = exif
        self.background = background
    }

    public func encode(_ image: Image) throws -> Data {
        let frame = try EncodingCheck.frame(image)
        let exif = self.exif ?? image.exif.map { Data("Exif\0\0".utf8) + $0 }
        if let exif, exif.count > 65_533 {
            throw ImageCodecError(.encodingFailed, "EXIF data over 65,533 bytes does not fit APP1")
        }
        let pixels = image.hasAlpha ? Self.flatten(frame, over: background) : frame.pixels
        let stride = image.hasAlpha ? frame.width * 4 : frame.bytesPerRow
        let icc = embedsICCProfile ? image.iccProfile : nil
        if let icc, icc.count > Self.maximumICCProfileBytes {
            throw ImageCodecError(
                .encodingFailed,
                "the ICC profile of \(icc.count) bytes needs more than JPEG's 255 APP2 markers (at most "
                    + "\(Self.maximumICCProfileBytes) bytes); convert the colours to sRGB or leave the profile out")
        }
        let quality = EncodingCheck.quality(quality)
        let fullChroma = (chromaSubsampling ?? (quality >= 90 ? .yuv444 : .yuv420)) == .yuv444
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 256)
        let status = pixels.withUnsafeBufferPointer { pixels -> Int32 in
            guard let base = pixels.baseAddress else { return -1 }
            return Self.withBytes(icc) { iccBytes, iccLength in
                Self.withBytes(exif) { exifBytes, exifLength in
                    EncodeStopCheck.withCallback(stopCheck) { shouldStop, stopContext in
                        wi_jpeg_encode_rgbx(
                            base, Int32(frame.width), Int32(frame.height), stride, Int32(quality),
                            progressive ? 1 : 0, fullChroma ? 1 : 0, optimizesHuffmanTables ? 1 : 0, iccBytes,
                            iccLength, exifBytes, exifLength, &output, &length, &message, message.count, shouldStop,
                            stopContext)
                    }
                }
            }
        }
        if status == -2 { throw EncodeStopCheck.stopped("JPEG") }
        guard status == 0, let output else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw ImageCodecError(.encodingFailed, "JPEG encoding failed: \(text.isEmpty ? "unknown error" : text)")
        }
        defer { wi_jpeg_free(output) }
        return Data(bytes: output, count: length)
    }

    /// `frame` composited over `color`, alpha dropped (packed rows).
    static func flatten(_ frame: ImageFrame, over color: ImageColor) -> [UInt8] {
        var out = [UInt8](repeating: 255, count: frame.width * frame.height * 4)
        let background = [Int(color.red), Int(color.green), Int(color.blue)]
        for y in 0..<frame.height {
            for x in 0..<frame.width {
                let source = y * frame.bytesPerRow + x * 4
                let target = (y * frame.width + x) * 4
                let alpha = Int(frame.pixels[source + 3])
                for channel in 0..<3 {
                    let value = Int(frame.pixels[source + channel]) * alpha + background[channel] * (255 - alpha)
                    out[target + channel] = UInt8((value + 127) / 255)
                }
            }
        }
        return out
    }

    private static func withBytes<T>(_ data: Data?, _ body: (UnsafePointer<UInt8>?, Int) -> T) -> T {
        guard let data, !data.isEmpty else { return body(nil, 0) }
        return data.withUnsafeBytes { body($0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count) }
    }
}
