import Foundation

/// SHA-256 of a file's bytes, from swift-crypto (BoringSSL on Linux); ``BulkHashAlgorithm`` has the others.
public enum ContentDigest {
    /// The SHA-256 of `data` as 64 lowercase hex digits.
    ///
    /// ```swift
    /// ContentDigest.sha256Hex(Data("abc".utf8))  // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    /// ```
    public static func sha256Hex(_ data: Data) -> String { BulkHashAlgorithm.sha256.hex(data) }
}
