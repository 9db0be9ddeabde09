import Foundation
import Testing

@testable import WebImageProxy

/// `/info` URLs' grammar and the access log's path for them, without a server.
@Suite("serve: /info URL parser")
struct ServeInfoUnitTests {
    @Test("info options in either spelling, then a plain or Base64 source; the signature covers the rest")
    func parsed() throws {
        let url = try ProxyURL(
            infoPath: "/sig/bh:9:2/th:0/s:f/format:0/d:false/pn:0/cp:0/cb:x/exp:7/plain/https://example.com/a%20b.jpg")
        #expect(url.signature == "sig")
        #expect(
            url.signedPath
                == "/bh:9:2/th:0/s:f/format:0/d:false/pn:0/cp:0/cb:x/exp:7/plain/https://example.com/a%20b.jpg")
        #expect(url.source.absoluteString == "https://example.com/a%20b.jpg")
        var expected = InfoOptions()
        (expected.blurHashXComponents, expected.blurHashYComponents) = (9, 2)
        (expected.thumbHash, expected.size, expected.format, expected.dimensions) = (false, false, false, false)
        (expected.pagesNumber, expected.colorProfile, expected.cacheBuster, expected.expires) = (false, false, "x", 7)
        #expect(url.info == expected)
        let defaults = try #require(try ProxyURL(infoPath: "/sig/plain/https://example.com/a.jpg").info)
        #expect(defaults.blurHashXComponents == 4 && defaults.blurHashYComponents == 3 && defaults.thumbHash)
        let encoded = Data("https://example.com/a.jpg".utf8).base64EncodedString().replacingOccurrences(
            of: "=", with: "")
        #expect(try ProxyURL(infoPath: "/sig/th:1/\(encoded)").source.absoluteString == "https://example.com/a.jpg")
    }

    @Test("unknown options, bad arguments and missing sources are 400 naming the option")
    func refused() {
        for path in [
            "/sig/w:10/plain/https://example.com/a.jpg", "/sig/bh:10:1/plain/https://example.com/a.jpg",
            "/sig/bh:1/plain/https://example.com/a.jpg", "/sig/th:2/plain/https://example.com/a.jpg",
            "/sig/exp:soon/plain/https://example.com/a.jpg", "/sig/bh:1:1", "/sig/enc/abc",
            "/sig/plain/ftp://example.com/a.jpg",
            "/sig/cb:\(String(repeating: "x", count: 257))/plain/https://example.com/a",
        ] {
            #expect(throws: ProxyError.self, "\(path)") { try ProxyURL(infoPath: path) }
        }
        do {
            _ = try ProxyURL(infoPath: "/sig/exif:1/plain/https://example.com/a.jpg")
            Issue.record("exif was accepted")
        } catch {
            #expect(error.status == 400 && error.message.contains("exif"))
        }
    }

    @Test("the access log writes an /info URL's signature as -, keeping insecure")
    func loggedPath() {
        #expect(
            ImageProxy.loggedPath("/info/SECRETSIG/bh:4:3/plain/https://example.com/a.png")
                == "/info/-/bh:4:3/plain/https://example.com/a.png")
        #expect(
            ImageProxy.loggedPath("/info/insecure/plain/https://example.com/a.png")
                == "/info/insecure/plain/https://example.com/a.png")
        #expect(
            ImageProxy.loggedPath("/info/S/plain/https://u:p%40example.com/a.png")
                == "/info/-/plain/https://***:***%40example.com/a.png")
    }

    @Test("the access log redacts a source's userinfo however the path writes it, and leaves the rest alone")
    func loggedPathRedactsUserInfo() {
        // A raw @ before the extension's: the source is https://u:p@example.com/a.png.
        #expect(
            ImageProxy.loggedPath("/insecure/rs:fit:10:10/plain/https://u:p@example.com/a.png@webp")
                == "/insecure/rs:fit:10:10/plain/https://***:***%40example.com/a.png@webp")
        let base64 = Data("https://u:p@example.com/a.png".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(
            ImageProxy.loggedPath("/insecure/w:10/" + base64 + ".png")
                == "/insecure/w:10/plain/https://***:***%40example.com/a.png@png")
        for path in [
            "/insecure/rs:fit:10:10/plain/https://example.com/a%402x.png%3Fn%3D1",
            "/insecure/plain/https://example.com/a.png@png",
            "/insecure/plain/https://example.com/a%2540b.png",
        ] {
            #expect(ImageProxy.loggedPath(path) == path)
        }
        #expect(!ProxyURL.mayNameAUser("https://example.com/a%2540b.png"))
        #expect(ProxyURL.mayNameAUser("https://u%40example.com/"))
        #expect(ProxyURL.mayNameAUser("https://u@example.com/"))
        #expect(!ProxyURL.mayNameAUser("https://example.com/a%34%30.png"))
    }
}
