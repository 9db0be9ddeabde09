import CSnappy
import CZstd

/// The compression libraries behind Parquet's SNAPPY and ZSTD pages, for `--help` texts and bug reports
/// (GZIP pages use zlib, listed with the codecs).
public enum ParquetLibraries {
    /// Each library with its version: zstd's as it reports it at run time; Snappy's C API has no call
    /// for its version, so it is listed by name.
    public static var versions: [(name: String, version: String)] {
        [("zstd", String(cString: ZSTD_versionString())), ("snappy", "(linked)")]
    }
}
