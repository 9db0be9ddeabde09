import Foundation

/// Turns the header lines curl hands over into the head of the *final* response.
///
/// curl reports every response of a transfer through the same callback: each redirect hop, interim
/// `100 Continue` responses and 401 challenges before an authenticated retry. Each status line starts a
/// new head, so what is left after the last one is the response the body belongs to.
struct ResponseHeadParser {
    private(set) var statusCode: Int = 0
    private(set) var httpVersion: String = ""
    private(set) var headers = HTTPHeaders()
    /// True once the blank line ending the current head was seen.
    private(set) var isComplete = false

    /// Feeds one line exactly as curl delivered it (with its CR LF).
    mutating func consume(line bytes: UnsafeRawBufferPointer) {
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        if end == 0 {
            isComplete = true
            return
        }
        let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<end]), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            startHead(statusLine: line)
        } else if let first = line.first, first == " " || first == "\t" {
            // Obsolete line folding (RFC 9112 §5.2): continue the previous field's value.
            if var last = headers.fields.last {
                last.value += " " + line.trimmingCharacters(in: .whitespaces)
                var fields = headers.fields
                fields[fields.count - 1] = last
                headers = HTTPHeaders(fields)
            }
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            if !name.isEmpty { headers.add(name: name, value: value) }
        }
    }

    private mutating func startHead(statusLine: String) {
        // "HTTP/1.1 200 OK", "HTTP/2 304"
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        httpVersion = parts.first.map { String($0.dropFirst("HTTP/".count)) } ?? ""
        statusCode = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        headers = HTTPHeaders()
        isComplete = false
    }

    /// The parsed head for the given final URL, or nil when no status line arrived.
    func response(url: URL) -> ImageDownloadResponse? {
        guard statusCode > 0 else { return nil }
        return ImageDownloadResponse(url: url, statusCode: statusCode, headers: headers, httpVersion: httpVersion)
    }
}
