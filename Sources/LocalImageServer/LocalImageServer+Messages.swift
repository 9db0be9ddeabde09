import Foundation

extension LocalImageServer {
    /// One HTTP header field: the name keeps the case the peer sent, and fields keep their order.
    public typealias HeaderField = (name: String, value: String)

    /// A request as the server received it; handed to custom route handlers and kept in the request log.
    public struct Request: Sendable {
        /// The request method, for example `GET` or `HEAD`.
        public let method: String
        /// The percent-encoded path without the query, for example `/files/a.png`.
        public let path: String
        /// The raw query after `?` (still percent-encoded), or `nil` when the URI had none.
        public let query: String?
        /// The header fields in arrival order with their original case.
        public let headers: [HeaderField]
        /// The request body (empty for a typical `GET`).
        public let body: Data
        /// The server-assigned id of the connection that carried the request; the first connection is 1.
        public let connectionID: Int
        /// When the request head arrived.
        public let arrival: Date
        /// The protocol that carried the request: `"1.1"`, `"1.0"` or `"2"` (an HTTP/2 stream).
        public let httpVersion: String

        /// Creates a request; the server builds these itself, tests may build one to call a handler directly.
        public init(
            method: String,
            path: String,
            query: String? = nil,
            headers: [HeaderField] = [],
            body: Data = Data(),
            connectionID: Int = 0,
            arrival: Date = Date(),
            httpVersion: String = "1.1"
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.body = body
            self.connectionID = connectionID
            self.arrival = arrival
            self.httpVersion = httpVersion
        }

        /// The first value of the header `name`, compared case-insensitively, or `nil`.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// All values of the header `name` (case-insensitive), in arrival order.
        public func headers(named name: String) -> [String] {
            headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
        }

        /// The query as decoded name/value pairs in order (`a=1&b` gives `("a", "1")`, `("b", "")`).
        public var queryItems: [(name: String, value: String)] {
            guard let query, !query.isEmpty else { return [] }
            return query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0])
                let value = parts.count > 1 ? String(parts[1]) : ""
                return (name.removingPercentEncoding ?? name, value.removingPercentEncoding ?? value)
            }
        }

        /// The decoded value of the first query parameter `name`, or `nil`.
        public func queryValue(_ name: String) -> String? {
            queryItems.first { $0.name == name }?.value
        }
    }

    /// What the server sends back: status, headers, body, and how the body is delivered.
    ///
    /// The server adds the framing headers the ``Delivery`` needs (`Content-Length` or
    /// `Transfer-Encoding: chunked`) unless `headers` already has them, so a handler can also lie about
    /// the length on purpose.
    ///
    /// ```swift
    /// server.route("/teapot") { _ in .text("short and stout", status: 418) }
    /// server.route("/slow") { _ in
    ///     LocalImageServer.Response(body: .pattern(count: 10_000),
    ///                               delivery: .drip(chunkSize: 1_000, interval: .milliseconds(20)))
    /// }
    /// ```
    public struct Response: Sendable {
        /// The status code, for example 200.
        public var status: Int
        /// Header fields, written in this order with this case.
        public var headers: [HeaderField]
        /// The body bytes.
        public var body: Body
        /// How the body goes on the wire. `.contentLength` by default.
        public var delivery: Delivery
        /// How long the server waits before sending the head. `.zero` by default.
        public var delay: Duration
        /// The head waits until ``LocalImageServer/openGate(_:)`` opens this gate (then `delay` runs).
        /// nil by default.
        public var gate: String?

        /// Creates a response.
        public init(
            status: Int = 200,
            headers: [HeaderField] = [],
            body: Body = .data(Data()),
            delivery: Delivery = .contentLength,
            delay: Duration = .zero,
            gate: String? = nil
        ) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delivery = delivery
            self.delay = delay
            self.gate = gate
        }

        /// A `text/plain; charset=utf-8` response.
        public static func text(_ text: String, status: Int = 200) -> Response {
            Response(
                status: status,
                headers: [("Content-Type", "text/plain; charset=utf-8")],
                body: .data(Data(text.utf8))
            )
        }

        /// The first value of the header `name` (case-insensitive), or `nil`.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// Replaces every field called `name` (case-insensitive) by one field with `value`.
        public mutating func setHeader(_ name: String, _ value: String) {
            headers.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
            headers.append((name, value))
        }
    }

    /// Response body bytes.
    public enum Body: Sendable {
        /// These exact bytes.
        case data(Data)
        /// `count` generated bytes following ``LocalImageServer/patternBytes(offset:count:)``; nothing is
        /// held in memory, so this suits very large bodies.
        case pattern(count: Int)

        /// The number of body bytes.
        public var count: Int {
            switch self {
            case .data(let data): data.count
            case .pattern(let count): count
            }
        }

        /// The bytes in `range`, which must lie inside `0..<count`.
        func bytes(_ range: Range<Int>) -> Data {
            switch self {
            case .data(let data):
                let start = data.startIndex + range.lowerBound
                return data[start..<(start + range.count)]
            case .pattern:
                return LocalImageServer.patternBytes(offset: range.lowerBound, count: range.count)
            }
        }
    }

    /// How a response body is put on the wire.
    public enum Delivery: Sendable {
        /// `Content-Length`, then the body in 64 KB writes that wait while the socket is not writable, so a
        /// client that stops reading or disconnects stops the server early.
        case contentLength
        /// `Transfer-Encoding: chunked` without `Content-Length`, one chunk per `chunkSize` bytes.
        case chunked(chunkSize: Int)
        /// `Content-Length`, then `chunkSize` bytes every `interval`. Stops when the client disconnects.
        case drip(chunkSize: Int, interval: Duration)
        /// `Content-Length` of the whole body, then only the first `bytes` bytes, then the connection closes.
        case closeAfter(bytes: Int)
        /// Never answers; the request stays in flight until the client (or ``LocalImageServer/shutdown()``)
        /// closes the connection.
        case hang
    }

    /// How a logged request ended.
    public enum Outcome: Sendable, Equatable {
        /// The response is still being produced (or the server is hanging on purpose).
        case inFlight
        /// The whole response was handed to the socket.
        case completed
        /// The connection closed before the response ended (client abort, close-mid-body, hang).
        case connectionClosed
    }

    /// One request in the log, with what the server did about it.
    public struct LogEntry: Sendable {
        /// Position in the log since the server started; increases by one per request.
        public let sequence: Int
        /// The request as received (the body is empty in the log).
        public let request: Request
        /// The status code sent, or `nil` if no head went out (yet).
        public internal(set) var status: Int?
        /// Body bytes the socket accepted for this response so far.
        public internal(set) var bytesSent: Int
        /// Whether and how the response ended.
        public internal(set) var outcome: Outcome

        /// The request method.
        public var method: String { request.method }
        /// The request path without query.
        public var path: String { request.path }
        /// The raw query, or `nil`.
        public var query: String? { request.query }
        /// The request header fields, ordered and with original case.
        public var headers: [HeaderField] { request.headers }
        /// When the request head arrived.
        public var arrival: Date { request.arrival }
        /// The connection that carried the request.
        public var connectionID: Int { request.connectionID }
    }

    /// Deterministic generated body bytes: byte `i` of a stream is `UInt8(i % 251)`.
    ///
    /// Used by `/bytes/<n>`, `/drip-bytes` and ``Body/pattern(count:)``, so tests can check any range.
    public static func patternBytes(offset: Int, count: Int) -> Data {
        var bytes = [UInt8](repeating: 0, count: count)
        var value = offset % 251
        for index in bytes.indices {
            bytes[index] = UInt8(value)
            value = value == 250 ? 0 : value + 1
        }
        return Data(bytes)
    }
}
