import Crypto
import Foundation

/// The digest each saved image's record carries (`sha256`), from swift-crypto (BoringSSL on Linux).
public enum ContentDigest {
    /// The SHA-256 of `data` as 64 lowercase hex digits.
    ///
    /// ```swift
    /// ContentDigest.sha256Hex(Data("abc".utf8))  // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    /// ```
    public static func sha256Hex(_ data: Data) -> String {
        let hexDigits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in SHA256.hash(data: data) {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
