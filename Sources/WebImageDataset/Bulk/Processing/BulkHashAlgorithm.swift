import Crypto
import Foundation
import WebImageTransport

/// The digest of each downloaded file a record carries (`--compute-hash`), under the algorithm's name
/// (`md5`, `sha256`, `sha512`), as img2dataset's `compute_hash` does; from swift-crypto (BoringSSL on
/// Linux). MD5 is there for datasets that list it; it identifies files, it does not protect them.
///
/// ```swift
/// BulkHashAlgorithm.md5.hex(Data("abc".utf8))  // "900150983cd24fb0d6963f7d28e17f72"
/// ```
public enum BulkHashAlgorithm: String, Sendable, Hashable, CaseIterable, Codable {
    /// MD5 (RFC 1321), 32 hex digits.
    case md5
    /// SHA-256 (FIPS 180-4), 64 hex digits.
    case sha256
    /// SHA-512 (FIPS 180-4), 128 hex digits.
    case sha512

    /// The digest of `data` as lowercase hex digits.
    public func hex(_ data: Data) -> String {
        switch self {
        case .md5: Self.hex(Insecure.MD5.hash(data: data))
        case .sha256: Self.hex(SHA256.hash(data: data))
        case .sha512: Self.hex(SHA512.hash(data: data))
        }
    }

    private static func hex(_ digest: some Sequence<UInt8>) -> String { HexDigits.lowercase(digest) }
}
