import Foundation

/// Turns the header lines curl hands over into the head of the *final* response.
///
/// curl reports every response of a transfer through the same callback: each redirect hop, interim
/// `100 Continue` responses and 401 challenges before an authenticated retry. Each status line starts a
/// new head, so what is left after the last one is the response the body belongs to.
///
/// This runs on the transport thread for every header line, so it works on the raw bytes and makes one
/// `String` per name and per value (Foundation's trimming bridges through NSString and cost more than
/// the rest of a small transfer together; see docs/BENCHMARKS.md).
struct ResponseHeadParser {
    private(set) var statusCode: Int = 0
    private(set) var httpVersion: String = ""
    private(set) var headers = HTTPHeaders()
    /// True once the blank line ending the current head was seen.
    private(set) var isComplete = false

    private static let space = UInt8(ascii: " "), tab = UInt8(ascii: "\t"), colon = UInt8(ascii: ":")
    private static let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")

    /// Feeds one line exactly as curl delivered it (with its CR LF).
    mutating func consume(line bytes: UnsafeRawBufferPointer) {
        var end = bytes.count
        while end > 0, bytes[end - 1] == Self.lf || bytes[end - 1] == Self.cr { end -= 1 }
        if end == 0 {
            isComplete = true
            return
        }
        let line = UnsafeRawBufferPointer(rebasing: bytes[0..<end])
        if line.starts(with: "HTTP/".utf8) {
            startHead(statusLine: line)
        } else if line[0] == Self.space || line[0] == Self.tab {
            // Obsolete line folding (RFC 9112 §5.2): continue the previous field's value.
            headers.continueLastField(with: Self.string(Self.trimmed(line, 0, end)))
        } else if let colon = line.firstIndex(of: Self.colon) {
            let name = Self.trimmed(line, 0, colon)
            guard !name.isEmpty else { return }
            headers.add(name: Self.string(name), value: Self.string(Self.trimmed(line, colon + 1, end)))
        }
    }

    private mutating func startHead(statusLine line: UnsafeRawBufferPointer) {
        // "HTTP/1.1 200 OK", "HTTP/2 304"
        let versionStart = 5
        var index = versionStart
        while index < line.count, line[index] != Self.space { index += 1 }
        httpVersion = Self.string(UnsafeRawBufferPointer(rebasing: line[versionStart..<index]))
        while index < line.count, line[index] == Self.space { index += 1 }
        var code = 0
        var digits = 0
        while index < line.count, digits < 3, (48...57).contains(line[index]) {
            code = code * 10 + Int(line[index] - 48)
            index += 1
            digits += 1
        }
        statusCode = digits == 3 ? code : 0
        headers = HTTPHeaders()
        isComplete = false
    }

    /// `line[start..<end]` without leading and trailing spaces and tabs.
    private static func trimmed(_ line: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> UnsafeRawBufferPointer {
        var lower = start
        var upper = end
        while lower < upper, line[lower] == space || line[lower] == tab { lower += 1 }
        while upper > lower, line[upper - 1] == space || line[upper - 1] == tab { upper -= 1 }
        return UnsafeRawBufferPointer(rebasing: line[lower..<upper])
    }

    private static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// The parsed head for the given final URL, or nil when no status line arrived.
    func response(url: URL) -> TransferResponse? {
        guard statusCode > 0 else { return nil }
        return TransferResponse(url: url, statusCode: statusCode, headers: headers, httpVersion: httpVersion)
    }
}
