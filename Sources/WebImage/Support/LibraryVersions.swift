import CCurl
import CGIF
import CJPEG
import CPNG
import CSQLite
import CWebP
import Foundation

/// Versions of WebImage and of the C libraries it is linked against.
public enum LibraryVersions {
    /// WebImage's own version.
    public static let webImage = "0.1.0"

    /// libcurl's version as the running library reports it, e.g. "7.88.1".
    public static var curl: String {
        guard let info = wi_curl_version_info(), let version = info.pointee.version else { return "?" }
        return String(cString: version)
    }

    /// The TLS backend libcurl uses, e.g. "OpenSSL/3.0.11".
    public static var curlTLS: String {
        guard let info = wi_curl_version_info(), let ssl = info.pointee.ssl_version else { return "none" }
        return String(cString: ssl)
    }

    /// libwebp's decoder version, e.g. "1.2.4".
    public static var webp: String { dotted(Int(WebPGetDecoderVersion()), base: 256) }

    /// libwebpdemux's version.
    public static var webpDemux: String { dotted(Int(WebPGetDemuxVersion()), base: 256) }

    /// libjpeg-turbo's version, e.g. "2.1.5".
    public static var jpeg: String {
        let n = Int(wi_jpeg_library_version())
        return "\(n / 1_000_000).\(n / 1000 % 1000).\(n % 1000)"
    }

    /// libpng's version, e.g. "1.6.39".
    public static var png: String { String(cString: wi_png_library_version()) }

    /// giflib's version from its headers, e.g. "5.2.1".
    public static var gif: String { "\(GIFLIB_MAJOR).\(GIFLIB_MINOR).\(GIFLIB_RELEASE)" }

    /// SQLite's version, e.g. "3.40.1".
    public static var sqlite: String { String(cString: sqlite3_libversion()) }

    /// Every library with its version, in a stable order.
    public static var all: [(name: String, version: String)] {
        [
            ("WebImage", webImage), ("libcurl", curl), ("TLS", curlTLS), ("libwebp", webp),
            ("libwebpdemux", webpDemux), ("libjpeg-turbo", jpeg), ("libpng", png), ("giflib", gif),
            ("sqlite3", sqlite),
        ]
    }

    private static func dotted(_ value: Int, base: Int) -> String {
        "\(value / (base * base)).\(value / base % base).\(value % base)"
    }
}
