import Foundation
import Testing

@testable import WebImageTransport

/// Whether a URL carries a user name or password, and its text for logs (parsed URLs, no network).
@Suite("URL userinfo")
struct URLUserInfoTests {
    func hasUserInfo(_ text: String) throws -> Bool {
        try #require(URL(string: text), "\(text)").hasUserInfo
    }

    @Test("an @ counts only inside the authority, after the first //")
    func onlyTheAuthority() throws {
        #expect(try hasUserInfo("http://alice:S3CRET@example.com/a.jpg"))
        #expect(try hasUserInfo("https://token@example.com"))
        #expect(try hasUserInfo("http://:@example.com/"))
        #expect(try hasUserInfo("http://@example.com/"))
        #expect(try hasUserInfo("s3://key:secret@bucket/object"))
        #expect(try !hasUserInfo("http://example.com/a@2x.png"))
        #expect(try !hasUserInfo("http://example.com?from=a@b"))
        #expect(try !hasUserInfo("http://example.com#a@b"))
        #expect(try !hasUserInfo("http://example.com:8080/"))
        #expect(try !hasUserInfo("http://a%40b.example.com/"))
        #expect(try !hasUserInfo("mailto:alice@example.com"))
        #expect(try !hasUserInfo("file:///tmp/a@b.jpg"))
        #expect(try !hasUserInfo("http://example.com/a//b@c"))
    }

    @Test("a URL with userinfo prints its secret as ***, one without prints as it is")
    func redactedText() throws {
        let url = try #require(URL(string: "http://alice:S3CRET@example.com/a.jpg"))
        #expect(url.redactedString == "http://alice:***@example.com/a.jpg")
        let plain = try #require(URL(string: "http://example.com/a@2x.png"))
        #expect(plain.redactedString == "http://example.com/a@2x.png")
    }
}
