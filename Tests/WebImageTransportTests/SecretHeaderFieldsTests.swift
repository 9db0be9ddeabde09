import Testing

@testable import WebImageTransport

@Suite("SecretHeaderFields")
struct SecretHeaderFieldsTests {
    @Test("names, *fragments*, prefixes* and *suffixes, without regard to case")
    func patterns() {
        let fields = SecretHeaderFields(["X-Exact", "*token*", "x-goog-*", "*-key", "*", "**"])
        let secret = [
            "x-exact", "X-EXACT", "token", "X-Auth-Token", "tokenizer", "my-token-id", "x-goog-anything", "X-Goog-",
            "api-key", "X-Api-Key",
        ]
        for name in secret { #expect(fields.contains(name), "\(name)") }
        for name in ["x-exactly", "toke", "x-tokn", "x-goo-g", "x-goog", "key", "-keys", "accept", ""] {
            #expect(!fields.contains(name), "\(name)")
        }
        let defaults = SecretHeaderFields.default
        #expect(defaults.contains("X-Session-Id") && defaults.contains("Client-Secret"))
        #expect(!defaults.contains("User-Agent") && !defaults.contains("Accept"))
    }
}
