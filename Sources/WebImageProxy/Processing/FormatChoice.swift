import Foundation
import WebImageCodecs

/// The format a response will have, decided before anything is fetched (the ETag names it, so a
/// revalidation can be answered without the source).
///
/// With a format in the URL it is that format. Without one it is negotiated from `Accept`: AVIF when AVIF
/// detection is on (`ImageProxyConfiguration.detectsAVIF`, off by default as imgproxy's
/// `IMGPROXY_ENABLE_AVIF_DETECTION` is), the client accepts `image/avif` and this libavif can encode; else
/// WebP when it accepts `image/webp`; else JPEG — or PNG when the result has alpha, which is only known
/// after decoding: `jpegOrPNG`. AVIF is opt-in because its encode costs a multiple of the others' and
/// `Accept` is the client's to choose, not the URL's signer's. An explicit `@avif` or `f:avif` in the signed
/// URL always gets AVIF. GIF and JPEG XL are never negotiated: only `f:gif`, `f:jxl` or the extension
/// gives them (imgproxy's `IMGPROXY_ENABLE_JXL_DETECTION` is off by default too).
public enum FormatChoice: Sendable, Hashable {
    /// The URL named the format (`f:` or the extension).
    case explicit(ProxyOutputFormat)
    /// `Accept` chose it.
    case negotiated(ProxyOutputFormat)
    /// `Accept` took neither AVIF nor WebP: JPEG for an opaque result, PNG for one with alpha.
    case jpegOrPNG

    /// The choice for `format` from the URL, else from the `Accept` header's value; `image/avif` counts only
    /// when `detectsAVIF` and `avifAvailable` both hold.
    public init(
        format: ProxyOutputFormat?, accept: String?, detectsAVIF: Bool = false,
        avifAvailable: Bool = AVIFEncoder.isAvailable
    ) {
        if let format {
            self = .explicit(format)
            return
        }
        let accepted = Self.acceptedTypes(accept ?? "")
        if detectsAVIF, avifAvailable, accepted.contains("image/avif") {
            self = .negotiated(.avif)
        } else if accepted.contains("image/webp") {
            self = .negotiated(.webp)
        } else {
            self = .jpegOrPNG
        }
    }

    /// Whether the response depends on `Accept` (and so sends `Vary: Accept`): WebP detection is always
    /// on, so every choice the URL did not make is.
    public var isNegotiated: Bool {
        if case .explicit = self { return false }
        return true
    }

    /// Whether the result keeps an animated source's frames (`ProxyOutputFormat.animates`); JPEG-or-PNG
    /// never does.
    var animates: Bool {
        switch self {
        case .explicit(let format), .negotiated(let format): format.animates
        case .jpegOrPNG: false
        }
    }

    /// The ETag's name for the choice.
    var tag: String {
        switch self {
        case .explicit(let format), .negotiated(let format): format.rawValue
        case .jpegOrPNG: "jpeg-or-png"
        }
    }

    /// The encoder the downloader runs after the transformer. `stopCheck` ends any of them part-way (see
    /// `EncodeStopCheck`): the job's deadline or its last requester leaving stops the CPU work too.
    func encoder(quality: Int?, stopCheck: EncodeStopCheck? = nil) -> any ImageEncoding {
        switch self {
        case .explicit(let format), .negotiated(let format):
            Self.encoder(format, quality: quality, stopCheck: stopCheck)
        case .jpegOrPNG: AlphaDependentEncoder(quality: quality, stopCheck: stopCheck)
        }
    }

    static func encoder(_ format: ProxyOutputFormat, quality: Int?, stopCheck: EncodeStopCheck? = nil)
        -> any ImageEncoding
    {
        switch format {
        case .jpeg: JPEGEncoder(quality: quality ?? 80, stopCheck: stopCheck)
        case .png: PNGEncoder(stopCheck: stopCheck)
        case .webp: WebPEncoder(quality: quality ?? 80, stopCheck: stopCheck)
        case .avif:
            AVIFEncoder(
                quality: quality ?? 60, speed: avifSpeed, threads: avifThreads, stopCheck: stopCheck)
        case .gif: GIFEncoder(stopCheck: stopCheck)
        case .jxl: JXLEncoder(quality: quality ?? 80, effort: jxlEffort, stopCheck: stopCheck)
        }
    }

    /// libavif's speed for the proxy's AVIF encodes: 9, the fastest libavif 0.11's libaom takes (10 is
    /// clamped to it). libavif's default, 6, spent 6 times the CPU for an 11% smaller file on an
    /// 8.4-megapixel photo (3.3 s against 0.5 s, one thread); a service answering within a deadline takes
    /// the fast end.
    static let avifSpeed = 9

    /// libjxl's effort for the proxy's JPEG XL encodes: libjxl's default, 7. JPEG XL comes only from the URL,
    /// so its cost is the signer's choice; on a 600×400 photo at quality 80 (one thread) effort 7 took 0.16 s
    /// for 32.8 KB, effort 4 0.064 s for 35.4 KB (8% more), WebP 0.055 s for 38.0 KB.
    static let jxlEffort = 7

    /// One thread per AVIF encode: the proxy already runs `maximumConcurrentJobs` jobs at once, one per
    /// core, so more threads per job would only make jobs compete for the same cores.
    static let avifThreads = 1

    /// The media types of an `Accept` value with a quality above 0, lowercased (`*/*` and `image/*` do
    /// not count: a browser that sends only those has not said it decodes AVIF or WebP).
    static func acceptedTypes(_ accept: String) -> Set<String> {
        var types = Set<String>()
        for item in accept.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let type = parts.first, !type.isEmpty else { continue }
            let refused = parts.dropFirst().contains { parameter in
                guard parameter.hasPrefix("q=") else { return false }
                return (Double(parameter.dropFirst(2)) ?? 1) <= 0
            }
            if !refused { types.insert(type) }
        }
        return types
    }
}

/// JPEG for an opaque image, PNG for one with alpha: the fallback when the client takes neither AVIF nor
/// WebP. The response's type is read back from the bytes.
struct AlphaDependentEncoder: ImageEncoding {
    var quality: Int?
    /// Handed to whichever encoder runs; not part of `key`.
    var stopCheck: EncodeStopCheck?

    var format: ImageFormat { .jpeg }
    var key: String { "jpeg-or-png;q=\(quality ?? 80)" }

    func encode(_ image: Image) throws -> Data {
        if image.hasAlpha { return try PNGEncoder(stopCheck: stopCheck).encode(image) }
        return try JPEGEncoder(quality: quality ?? 80, stopCheck: stopCheck).encode(image)
    }
}
