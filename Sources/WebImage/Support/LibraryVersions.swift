import CSQLite
import Foundation
import WebImageCodecs
import WebImageTransport

/// Versions of WebImage and of the C libraries it is linked against.
public enum LibraryVersions {
    /// WebImage's own version.
    public static let webImage = "0.1.0"

    /// libcurl's version as the running library reports it, e.g. "7.88.1".
    public static var curl: String { CurlRuntime.libraryVersion }

    /// The TLS backend libcurl uses, e.g. "OpenSSL/3.0.11".
    public static var curlTLS: String { CurlRuntime.tlsLibraryVersion }

    /// libwebp's decoder version, e.g. "1.2.4".
    public static var webp: String { CodecLibraries.webp }

    /// libwebpdemux's version.
    public static var webpDemux: String { CodecLibraries.webpDemux }

    /// libjpeg-turbo's version, e.g. "2.1.5".
    public static var jpeg: String { CodecLibraries.jpeg }

    /// libpng's version, e.g. "1.6.39".
    public static var png: String { CodecLibraries.png }

    /// giflib's version from its headers, e.g. "5.2.1".
    public static var gif: String { CodecLibraries.gif }

    /// SQLite's version, e.g. "3.40.1".
    public static var sqlite: String { String(cString: sqlite3_libversion()) }

    /// Every library with its version, in a stable order.
    public static var all: [(name: String, version: String)] {
        [
            ("WebImage", webImage), ("libcurl", curl), ("TLS", curlTLS), ("sqlite3", sqlite),
        ] + CodecLibraries.versions
    }
}
