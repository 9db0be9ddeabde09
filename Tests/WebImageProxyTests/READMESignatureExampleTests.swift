import Testing
import WebImageProxy

/// The README's swift-crypto signing example (READMESignatureExample) signs as the proxy checks.
@Suite("README: the signing example")
struct READMESignatureExampleTests {
    @Test("the README's signature of its path is one the proxy accepts under the same key and salt")
    func theREADMEsSignatureIsAccepted() throws {
        let printed = READMESignatureExample.main()
        let prefix = "https://images.example.com/"
        let path = "/rs:fill:300:200:0/plain/https://example.com/cat.jpg@webp"
        #expect(printed.hasPrefix(prefix) && printed.hasSuffix(path))
        let signature = String(printed.dropFirst(prefix.count).dropLast(path.count))
        let key = try #require(SigningKey(hexKey: "943b421c9e", hexSalt: "520f986b99"))
        #expect(URLSignature(keys: [key]).isValid(signature: signature, for: path))
        #expect(!URLSignature(keys: [key]).isValid(signature: signature, for: path + "x"))
    }
}
