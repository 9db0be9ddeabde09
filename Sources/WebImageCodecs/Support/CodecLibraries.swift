import CAVIF
import CGIF
import CHEIF
import CJPEG
import CJXL
import CLCMS
import CPNG
import CWebP
import CZlib

/// The formats this build reads, and the C libraries behind them with the versions they
/// report at run time (header versions where a library has no call for it), for `--help` texts and bug
/// reports.
public enum CodecLibraries {
    /// Formats the decoders read: every `ImageFormat` but `.unknown` (an animated PNG is `.png`).
    public static var decodedFormats: [ImageFormat] { ImageFormat.allCases.filter { $0 != .unknown } }

    /// "jpeg, png (APNG), gif, …": `decodedFormats` as text.
    public static var decodedFormatList: String {
        decodedFormats.map { $0 == .png ? "png (APNG)" : $0.rawValue }.joined(separator: ", ")
    }

    /// Every codec library with its version, in a stable order.
    public static var versions: [(name: String, version: String)] {
        [
            ("libjpeg-turbo", jpeg), ("libpng", png), ("giflib", gif), ("libwebp", webp),
            ("libwebpdemux", webpDemux),
            ("libavif", String(cString: avifVersion())), ("libheif", String(cString: heif_get_version())),
            ("libjxl", jxl), ("lcms2", lcms), ("zlib", String(cString: zlibVersion())),
        ]
    }

    /// libwebp's decoder version, e.g. "1.2.4".
    public static var webp: String { dotted(Int(WebPGetDecoderVersion()), base: 256) }

    /// libwebpdemux's version.
    public static var webpDemux: String { dotted(Int(WebPGetDemuxVersion()), base: 256) }

    /// libpng's version, e.g. "1.6.39".
    public static var png: String { String(cString: wi_png_library_version()) }

    /// giflib's version from its headers, e.g. "5.2.1".
    public static var gif: String { "\(GIFLIB_MAJOR).\(GIFLIB_MINOR).\(GIFLIB_RELEASE)" }

    /// libjpeg-turbo's version, e.g. "2.1.5".
    public static var jpeg: String {
        let number = Int(wi_jpeg_library_version())
        return "\(number / 1_000_000).\(number / 1000 % 1000).\(number % 1000)"
    }

    /// libjxl's decoder version, e.g. "0.7.0" (major × 1,000,000 + minor × 1,000 + patch).
    private static var jxl: String {
        let number = Int(JxlDecoderVersion())
        return "\(number / 1_000_000).\(number / 1000 % 1000).\(number % 1000)"
    }

    /// LittleCMS's version, e.g. "2.14" (major × 1,000 + minor × 10).
    private static var lcms: String {
        let number = Int(cmsGetEncodedCMMversion())
        return "\(number / 1000).\(number % 1000 / 10)"
    }

    private static func dotted(_ value: Int, base: Int) -> String {
        "\(value / (base * base)).\(value / base % base).\(value % base)"
    }
}
