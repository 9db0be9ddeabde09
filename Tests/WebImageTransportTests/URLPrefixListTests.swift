import Foundation
import Testing

@testable import WebImageTransport

/// The allowed-URL prefixes' matching, on parsed URLs (no network).
@Suite("URLPrefixList")
struct URLPrefixListTests {
    func allows(_ prefixes: [String], _ url: String) throws -> Bool {
        try URLPrefixList(prefixes).allows(try #require(URL(string: url), "\(url)"))
    }

    @Test("scheme, host, port and path prefix on segment boundaries")
    func segmentBoundaries() throws {
        let prefixes = ["https://images.example.com/img", "http://cdn.example.com:8080/"]
        #expect(try allows(prefixes, "https://images.example.com/img"))
        #expect(try allows(prefixes, "https://images.example.com/img/a.jpg"))
        #expect(try allows(prefixes, "https://IMAGES.example.com./img/a.jpg"))
        #expect(try allows(prefixes, "https://images.example.com:443/img/a.jpg?x=1"))
        #expect(try !allows(prefixes, "https://images.example.com/imgs/a.jpg"))
        #expect(try !allows(prefixes, "http://images.example.com/img/a.jpg"), "another scheme")
        #expect(try !allows(prefixes, "https://images.example.com:8443/img/a.jpg"), "another port")
        #expect(try !allows(prefixes, "https://images.example.com.evil.net/img/a.jpg"))
        #expect(try allows(prefixes, "http://cdn.example.com:8080/anything/at/all.png"))
        #expect(try !allows(prefixes, "http://cdn.example.com/anything.png"), "port 80 is not 8080")
        // A prefix ending in / allows only what is below it.
        #expect(try !allows(["https://a.example/img/"], "https://a.example/img"))
        #expect(try allows(["https://a.example/img/"], "https://a.example/img/x"))
    }

    @Test("userinfo, dot segments and encoded separators never slip past a prefix")
    func tricks() throws {
        let prefixes = ["http://1.2.3.4:8000", "https://a.example/img/"]
        #expect(try !allows(prefixes, "http://1.2.3.4:8000@5.6.7.8:8000/img/x.jpg"))
        #expect(try !allows(prefixes, "http://user:pass@1.2.3.4:8000/x.jpg"), "userinfo never matches")
        #expect(try !allows(prefixes, "https://a.example/img/../redir"))
        #expect(try allows(prefixes, "https://a.example/img/./x/../y.jpg"), "resolved inside the prefix")
        #expect(try !allows(prefixes, "https://a.example/img/%2e%2e/redir"))
        #expect(try !allows(prefixes, "https://a.example/img/..%2Fredir"))
        #expect(try !allows(prefixes, "https://a.example/img/..%5Credir"))
        #expect(try allows(prefixes, "https://a.example/img/%41.jpg"), "other escapes are fine")
        #expect(URLPrefixList.removingDotSegments("/a/b/../../../c/./d/.") == "/c/d/")
    }

    @Test("a leading *. allows subdomains only")
    func wildcard() throws {
        let prefixes = ["https://*.example.com/"]
        #expect(try allows(prefixes, "https://a.example.com/x"))
        #expect(try allows(prefixes, "https://a.b.example.com/x"))
        #expect(try !allows(prefixes, "https://example.com/x"))
        #expect(try !allows(prefixes, "https://evilexample.com/x"))
    }

    @Test("prefixes that cannot be matched safely are refused, naming the prefix")
    func invalidPrefixes() {
        for prefix in [
            "ftp://example.com/", "example.com", "https://", "https://u:p@example.com/", "https://example.com/?q",
            "https://a.*.example.com/", "https://example.com/a/../b", "https://*./",
        ] {
            #expect(throws: URLPrefixList.InvalidPrefix.self, "\(prefix)") { try URLPrefixList([prefix]) }
        }
        #expect(throws: Never.self) { try URLPrefixList([]) }
    }
}
