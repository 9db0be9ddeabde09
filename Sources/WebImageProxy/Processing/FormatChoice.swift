import Foundation
import WebImageCodecs

/// How one format is offered to clients that accept it: imgproxy's `IMGPROXY_AUTO_*` (formerly
/// `IMGPROXY_ENABLE_*_DETECTION`) and `IMGPROXY_ENFORCE_*` switches.
public enum FormatDetection: Sendable, Hashable {
    /// Never chosen from `Accept`: only a URL that names the format gets it.
    case off
    /// Chosen when `Accept` names it and the URL names no format.
    case auto
    /// Chosen when `Accept` names it, even over the format the URL names.
    case enforced
}

/// Which formats `Accept` may choose, each `.off` by default as in imgproxy: with all of them off the
/// response never depends on `Accept`, so it carries no `Vary: Accept` and one cached copy serves every
/// client. AVIF and JPEG XL stay off unless asked for because their encodes cost several times a WebP or
/// JPEG one, and `Accept` is the client's to choose, not the URL's signer's.
public struct FormatNegotiation: Sendable, Hashable {
    /// WebP for `image/webp` (`IMGPROXY_AUTO_WEBP`, `IMGPROXY_ENFORCE_WEBP`). `.off` by default.
    public var webp: FormatDetection = .off
    /// AVIF for `image/avif` when this libavif can encode (`IMGPROXY_AUTO_AVIF`, `IMGPROXY_ENFORCE_AVIF`).
    /// `.off` by default.
    public var avif: FormatDetection = .off
    /// JPEG XL for `image/jxl` (`IMGPROXY_AUTO_JXL`, `IMGPROXY_ENFORCE_JXL`), once the proxy has a JPEG XL
    /// output format; until then the switch is read and changes only `Vary`. `.off` by default.
    public var jxl: FormatDetection = .off

    /// Nothing negotiated.
    public init() {}

    /// Whether any format may come from `Accept`, which is when responses say `Vary: Accept` (imgproxy sends
    /// it on every response then, a URL's explicit format included, since an enforced format overrides it).
    public var isOn: Bool { webp != .off || avif != .off || jxl != .off }

    /// The switched-on formats in imgproxy's order of preference (JPEG XL, AVIF, WebP), with their media
    /// types. JPEG XL is looked up by name so the list takes it once `ProxyOutputFormat` has it.
    func candidates(avifAvailable: Bool) -> [(format: ProxyOutputFormat, detection: FormatDetection)] {
        var list: [(format: ProxyOutputFormat, detection: FormatDetection)] = []
        if jxl != .off, let format = ProxyOutputFormat(rawValue: "jxl") { list.append((format, jxl)) }
        if avif != .off, avifAvailable { list.append((.avif, avif)) }
        if webp != .off { list.append((.webp, webp)) }
        return list
    }
}

/// The format a response will have, decided before anything is fetched (the ETag names it, so a
/// revalidation can be answered without the source).
///
/// imgproxy's rules (`processing.go` and `defaultProcessingOptions`): with a format in the URL, that
/// format, unless `Accept` names a format whose detection is `.enforced`, which replaces it; without one,
/// the first format `Accept` names whose detection is on, JPEG XL before AVIF before WebP; else JPEG — or PNG when the result has alpha, which is only known after decoding: `jpegOrPNG`. With
/// `FormatNegotiation`'s defaults nothing comes from `Accept`, as in imgproxy. GIF and JPEG XL
/// are never negotiated but by JPEG XL detection: `f:gif`, `f:jxl` or the extension gives them.
public enum FormatChoice: Sendable, Hashable {
    /// The URL named the format (`f:` or the extension).
    case explicit(ProxyOutputFormat)
    /// `Accept` chose it.
    case negotiated(ProxyOutputFormat)
    /// The URL named no format and `Accept` chose none: JPEG for an opaque result, PNG for one with alpha.
    case jpegOrPNG

    /// The choice for `format` from the URL and the `Accept` header's value under `negotiation`; AVIF
    /// counts only when `avifAvailable`.
    public init(
        format: ProxyOutputFormat?, accept: String?, negotiation: FormatNegotiation = FormatNegotiation(),
        avifAvailable: Bool = AVIFEncoder.isAvailable
    ) {
        let candidates = negotiation.candidates(avifAvailable: avifAvailable)
        let accepted = candidates.isEmpty ? [] : Self.acceptedTypes(accept ?? "")
        let offered = candidates.filter { accepted.contains($0.format.mimeType) }
        if let format {
            if let enforced = offered.first(where: { $0.detection == .enforced }), enforced.format != format {
                self = .negotiated(enforced.format)
            } else {
                self = .explicit(format)
            }
        } else if let first = offered.first {
            self = .negotiated(first.format)
        } else {
            self = .jpegOrPNG
        }
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
