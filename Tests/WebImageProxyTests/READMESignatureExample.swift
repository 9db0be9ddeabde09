import Crypto
import Foundation

/// The README's example of imgproxy's signature computed with swift-crypto, compiled here with the test target,
/// which has the `Tools` trait's swift-crypto: `make test-readme` checks that the README's block is these lines,
/// word for word. READMESignatureExampleTests runs it and compares with the proxy's own signer.
enum READMESignatureExample {
    static func main() -> String {
        var printed = ""
        func print(_ line: String) { printed = line }
        // README: begin
        /// imgproxy's signature of `path` (everything after the signature segment, starting with "/").
        func imgproxySignature(path: String, hexKey: String, hexSalt: String) -> String {
            func bytes(_ hex: String) -> [UInt8] {
                let digits = Array(hex.utf8)
                return stride(from: 0, to: digits.count - 1, by: 2).compactMap {
                    UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)
                }
            }
            var hmac = HMAC<SHA256>(key: SymmetricKey(data: bytes(hexKey)))
            hmac.update(data: bytes(hexSalt))
            hmac.update(data: Array(path.utf8))
            return Data(hmac.finalize()).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }

        let path = "/rs:fill:300:200:0/plain/https://example.com/cat.jpg@webp"
        let signature = imgproxySignature(path: path, hexKey: "943b421c9e", hexSalt: "520f986b99")
        print("https://images.example.com/\(signature)\(path)")
        // README: end
        return printed
    }
}
