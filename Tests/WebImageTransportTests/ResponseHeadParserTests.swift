import Foundation
import Testing

@testable import WebImageTransport

@Suite(.timeLimit(.minutes(5))) struct ResponseHeadParserTests {
    private func parse(_ lines: [String]) -> ResponseHeadParser {
        var parser = ResponseHeadParser()
        for line in lines {
            Array(line.utf8).withUnsafeBytes { parser.consume(line: $0) }
        }
        return parser
    }

    @Test func parsesStatusVersionAndFieldsWithOptionalWhitespace() throws {
        let parser = parse([
            "HTTP/1.1 200 OK\r\n", "Content-Type:\timage/png \r\n", "X-Empty:\r\n", "ETag:  \"abc\"\r\n", "\r\n",
        ])
        let response = try #require(parser.response(url: URL(string: "http://h/")!))
        #expect(response.statusCode == 200)
        #expect(response.httpVersion == "1.1")
        #expect(response.headers["content-type"] == "image/png")
        #expect(response.headers["X-Empty"] == "")
        #expect(response.headers["ETag"] == "\"abc\"")
        #expect(parser.isComplete)
    }

    @Test func theLastHeadWinsAfterRedirectsAndInterimResponses() {
        let parser = parse([
            "HTTP/1.1 302 Found\r\n", "Location: /a\r\n", "\r\n", "HTTP/1.1 100 Continue\r\n", "\r\n", "HTTP/2 404\r\n",
            "content-length: 3\r\n", "\r\n",
        ])
        #expect(parser.statusCode == 404)
        #expect(parser.httpVersion == "2")
        #expect(parser.headers.values(for: "Location").isEmpty)
        #expect(parser.headers["Content-Length"] == "3")
    }

    @Test func foldedLinesContinueTheValueAndGarbageIsIgnored() {
        let parser = parse([
            "HTTP/1.0 200 OK\r\n", "X-Long: one\r\n", "  two\r\n", "no colon here\r\n", ": nameless\r\n", "\r\n",
        ])
        #expect(parser.headers["X-Long"] == "one two")
        #expect(parser.headers.fields.count == 1)
    }

    @Test func aMalformedStatusLineGivesNoResponse() {
        #expect(parse(["HTTP/1.1 2x0 Bad\r\n", "\r\n"]).response(url: URL(string: "http://h/")!) == nil)
        #expect(parse(["HTTP/1.1\r\n"]).statusCode == 0)
    }

    @Test func nonASCIIBytesDoNotCrash() {
        let parser = parse(["HTTP/1.1 200 OK\r\n", "X-Name: caf\u{e9} \u{1F600}\r\n", "\r\n"])
        #expect(parser.headers["X-Name"] == "caf\u{e9} \u{1F600}")
    }
}
