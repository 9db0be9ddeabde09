import Crypto
import Foundation

/// One key and salt, as imgproxy's `IMGPROXY_KEY` and `IMGPROXY_SALT`: both hex-encoded.
public struct SigningKey: Sendable, Hashable {
    /// The HMAC key's bytes.
    public var key: Data
    /// The bytes put before the path.
    public var salt: Data

    /// A pair from hex strings; nil when either is not an even number of hex digits or the key is empty.
    ///
    /// ```swift
    /// let pair = SigningKey(hexKey: "943b421c9eb07c83", hexSalt: "520f986b99854")  // nil: odd salt length
    /// ```
    public init?(hexKey: String, hexSalt: String) {
        guard let key = Data(hex: hexKey), !key.isEmpty, let salt = Data(hex: hexSalt) else { return nil }
        self.key = key
        self.salt = salt
    }
}

/// imgproxy's URL signature: `base64url(HMAC-SHA256(key, salt + path))` without padding, where `path` is
/// everything after the signature segment, from its leading `/` (`ProxyURL.signedPath`).
///
/// Several pairs may be in force at once so keys can be rotated: a signature made with any of them is
/// accepted. The comparison is swift-crypto's, in constant time.
///
/// ```swift
/// let signer = URLSignature(keys: [pair])
/// signer.isValid(signature: url.signature, for: url.signedPath)
/// ```
public struct URLSignature: Sendable {
    /// The pairs accepted, the first one used by `sign(_:)`.
    public var keys: [SigningKey]
    /// How many leading bytes of the HMAC a signature is (imgproxy's `IMGPROXY_SIGNATURE_SIZE`), 1…32.
    public var size: Int

    /// A checker accepting any of `keys`, for signatures of `size` bytes (clamped to 1…32).
    public init(keys: [SigningKey], size: Int = SHA256.byteCount) {
        self.keys = keys
        self.size = min(max(size, 1), SHA256.byteCount)
    }

    /// Whether `signature` (URL-safe Base64, with or without padding) is the HMAC of `path`, cut to `size`
    /// bytes, under one of the keys. Every key is tried and every byte compared, so the time taken does not
    /// tell which key matched or how much of a guess was right.
    public func isValid(signature: String, for path: String) -> Bool {
        guard let code = Data(base64URL: signature), code.count == size else { return false }
        var matched = false
        for pair in keys {
            let expected = HMAC<SHA256>.authenticationCode(
                for: pair.salt + Data(path.utf8), using: SymmetricKey(data: pair.key))
            var difference: UInt8 = 0
            for (given, wanted) in zip(code, Data(expected).prefix(size)) { difference |= given ^ wanted }
            if difference == 0 { matched = true }
        }
        return matched
    }

    /// The signature of `path` with the first key (for tools and tests; the proxy only checks).
    public func sign(_ path: String) -> String? {
        guard let pair = keys.first else { return nil }
        let code = HMAC<SHA256>.authenticationCode(
            for: pair.salt + Data(path.utf8), using: SymmetricKey(data: pair.key))
        return Data(code).prefix(size).base64URLEncodedString()
    }
}

extension Data {
    /// Bytes from hex digits (either case); nil for an odd count or a non-hex character.
    init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes = [UInt8]()
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.init(bytes)
    }

    /// Bytes from URL-safe Base64, padding optional; nil when it is not that.
    init?(base64URL text: String) {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "=") })
        else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }

    /// URL-safe Base64 without padding.
    func base64URLEncodedString() -> String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
