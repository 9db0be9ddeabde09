import Foundation

/// The built-in route table. Each route is a pure function from request to response; the connection
/// handler does the I/O. The paths are documented on `LocalImageServer`.
extension ServerCore {
    typealias Request = LocalImageServer.Request
    typealias Response = LocalImageServer.Response

    /// The response for `request`: a custom route when one matches, else a built-in one. A `delay=<ms>`
    /// query parameter delays the head of any built-in route, and `gate=<name>` holds it until the test
    /// opens that gate.
    func response(for request: Request) -> Response {
        if let route = customRoute(for: request.path) {
            return route.handler(request)
        }
        var response = builtInResponse(for: request)
        if let delay = request.queryValue("delay").flatMap(Int.init), delay > 0 {
            response.delay += .milliseconds(delay)
        }
        if let gate = request.queryValue("gate"), !gate.isEmpty {
            response.gate = gate
        }
        return response
    }

    private func builtInResponse(for request: Request) -> Response {
        // Segments after the leading "/", percent-decoded.
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            $0.removingPercentEncoding ?? String($0)
        }
        return fileRoute(segments, request: request) ?? navigationRoute(segments, request: request)
            ?? Self.generatedRoute(segments, request: request)
            ?? .text("no route for \(request.path)\n", status: 404)
    }

    /// Segments from `index` on, joined back into a file name.
    private static func name(_ segments: [String], from index: Int) -> String {
        segments.dropFirst(index).joined(separator: "/")
    }

    /// The query parameter `name` as a count (negative values read as 0), or `fallback`.
    private static func intParam(_ request: Request, _ name: String, _ fallback: Int) -> Int {
        request.queryValue(name).flatMap(Int.init).map { max($0, 0) } ?? fallback
    }

    /// The routes that serve a file of the served directory (named by the segments after the route's),
    /// each with its own headers or delivery; nil for another route.
    private func fileRoute(_ segments: [String], request: Request) -> Response? {
        let rest = { (from: Int) -> String in Self.name(segments, from: from) }
        switch segments.first ?? "" {
        case "files":
            return withFile(rest(1)) { Self.plain($0) }
        case "chunked":
            return withFile(rest(1)) { file in
                var response = Self.plain(file)
                response.delivery = .chunked(chunkSize: 4096)
                return response
            }
        case "drip":
            return withFile(rest(1)) { file in
                var response = Self.plain(file)
                response.delivery = .drip(
                    chunkSize: max(Self.intParam(request, "chunk", 1024), 1),
                    interval: .milliseconds(Self.intParam(request, "interval", 100)))
                return response
            }
        case "close-mid-body":
            return withFile(rest(1)) { file in
                var response = Self.plain(file)
                response.delivery = .closeAfter(bytes: file.data.count / 2)
                return response
            }
        case "etag":
            return withFile(rest(1)) { Self.validated($0, request: request, etag: true, lastModified: false) }
        case "last-modified":
            return withFile(rest(1)) { Self.validated($0, request: request, etag: false, lastModified: true) }
        case "cache" where segments.count >= 3:
            return withFile(rest(2)) { file in
                Self.validated(
                    file, request: request, etag: true, lastModified: true, extra: [("Cache-Control", segments[1])])
            }
        case "vary":
            return withFile(rest(1)) { file in
                Self.validated(
                    file, request: request, etag: true, lastModified: false,
                    extra: [("Cache-Control", "max-age=3600"), ("Vary", "Accept")])
            }
        case "wrong-type":
            return withFile(rest(1)) { file in
                var response = Self.plain(file)
                response.setHeader("Content-Type", "text/html")
                return response
            }
        case "gzip":
            return withFile(rest(1)) { Self.gzip($0, request: request) }
        default:
            return nil
        }
    }

    /// The routes that send the client elsewhere or check what it carries: redirects, Basic auth and
    /// cookies; nil for another route.
    private func navigationRoute(_ segments: [String], request: Request) -> Response? {
        switch segments.first ?? "" {
        case "redirect":
            return redirectChain(segments.count > 1 ? segments[1] : "", request: request)
        case "redirect-loop":
            return Self.redirect(to: "/redirect-loop", request: request)
        case "redirect-file":
            return Self.redirect(to: "file:///etc/passwd", request: request)
        case "redirect-to":
            guard let target = request.queryValue("url"), !target.isEmpty else {
                return .text("redirect-to needs ?url=<absolute URL>\n", status: 400)
            }
            return Self.redirect(to: target, request: request)
        case "auth" where segments.count >= 5 && segments[1] == "basic":
            return basicAuth(
                user: segments[2], password: segments[3], name: Self.name(segments, from: 4), request: request)
        case "cookies" where segments.count == 2 && segments[1] == "set":
            var response = Response.text("ok\n")
            for item in request.queryItems {
                response.headers.append(("Set-Cookie", "\(item.name)=\(item.value); Path=/"))
            }
            return response
        case "cookies" where segments.count == 2 && segments[1] == "echo":
            return .text(request.headers(named: "Cookie").joined(separator: "; "))
        default:
            return nil
        }
    }

    /// The routes whose body is made up rather than read from a file (statuses, patterns, a stalled
    /// response, the request's headers); nil for another route.
    private static func generatedRoute(_ segments: [String], request: Request) -> Response? {
        switch segments.first ?? "" {
        case "status":
            return status(segments.count > 1 ? segments[1] : "")
        case "drip-bytes":
            return Response(
                headers: [("Content-Type", "application/octet-stream")],
                body: .pattern(count: intParam(request, "total", 10_240)),
                delivery: .drip(
                    chunkSize: max(intParam(request, "chunk", 1024), 1),
                    interval: .milliseconds(intParam(request, "interval", 100))))
        case "hang":
            return Response(delivery: .hang)
        case "empty":
            return Response(headers: [("Content-Type", "image/png")])
        case "html":
            return Response(headers: [("Content-Type", "text/html; charset=utf-8")], body: .data(Data(errorPage.utf8)))
        case "headers":
            let pairs = request.headers.map { [$0.name, $0.value] }
            guard let json = try? JSONEncoder().encode(pairs) else { return .text("encoding failed\n", status: 500) }
            return Response(headers: [("Content-Type", "application/json")], body: .data(json))
        case "bytes" where segments.count == 2:
            guard let count = Int(segments[1]), count >= 0 else { return .text("bad byte count\n", status: 400) }
            return Response(headers: [("Content-Type", "application/octet-stream")], body: .pattern(count: count))
        case "pixel.png":
            return Response(headers: [("Content-Type", "image/png")], body: .data(LocalImageServer.pixelPNG))
        default:
            return nil
        }
    }

    // MARK: Route helpers

    private func withFile(_ name: String, _ respond: (ServedFile) -> Response) -> Response {
        guard let file = file(named: name) else { return .text("no file named \(name)\n", status: 404) }
        return respond(file)
    }

    private static func plain(_ file: ServedFile) -> Response {
        Response(headers: [("Content-Type", file.contentType)], body: .data(file.data))
    }

    private static func status(_ text: String) -> Response {
        guard let code = Int(text), (200...599).contains(code) else {
            return .text("status must be 200...599\n", status: 400)
        }
        if code == 204 || code == 304 { return Response(status: code) }
        return .text("\(code)\n", status: code)
    }

    private static func redirect(to location: String, request: Request) -> Response {
        let allowed: Set<Int> = [301, 302, 303, 307, 308]
        let code = request.queryValue("code").flatMap(Int.init).flatMap { allowed.contains($0) ? $0 : nil } ?? 302
        var response = Response.text("redirecting to \(location)\n", status: code)
        response.headers.append(("Location", location))
        return response
    }

    /// `/redirect/<n>` redirects exactly `n` times: to `/redirect/<n-1>` while n > 1, then to the target.
    private func redirectChain(_ countText: String, request: Request) -> Response {
        guard let count = Int(countText), count >= 0 else { return .text("bad redirect count\n", status: 400) }
        let target = request.queryValue("to").map { "/files/" + $0 } ?? "/pixel.png"
        if count == 0 {
            return response(for: Request(method: request.method, path: target, headers: request.headers))
        }
        let query = request.query.map { "?" + $0 } ?? ""
        return Self.redirect(to: count == 1 ? target : "/redirect/\(count - 1)\(query)", request: request)
    }

    private func basicAuth(user: String, password: String, name: String, request: Request) -> Response {
        let expected = Data("\(user):\(password)".utf8).base64EncodedString()
        if let authorization = request.header("Authorization") {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "basic",
                parts[1].trimmingCharacters(in: .whitespaces) == expected
            {
                return withFile(name) { Self.plain($0) }
            }
        }
        var response = Response.text("authentication required\n", status: 401)
        response.headers.append(("WWW-Authenticate", "Basic realm=\"webimage\""))
        return response
    }

    /// The file with the chosen validators; 304 without a body when the request's conditional matches.
    /// `If-None-Match` takes precedence over `If-Modified-Since`, as RFC 9110 §13.2.2 orders them.
    private static func validated(
        _ file: ServedFile, request: Request, etag: Bool, lastModified: Bool, extra: [LocalImageServer.HeaderField] = []
    ) -> Response {
        var headers = extra
        if etag { headers.append(("ETag", file.etag)) }
        if lastModified { headers.append(("Last-Modified", ContentTypes.httpDate(file.lastModified))) }

        var notModified = false
        if etag, let tags = request.header("If-None-Match") {
            notModified = ContentTypes.ifNoneMatch(tags, matches: file.etag)
        } else if lastModified, let since = request.header("If-Modified-Since").flatMap(ContentTypes.parseHTTPDate) {
            notModified = file.lastModified <= since
        }
        if notModified { return Response(status: 304, headers: headers) }
        return Response(headers: [("Content-Type", file.contentType)] + headers, body: .data(file.data))
    }

    private static func gzip(_ file: ServedFile, request: Request) -> Response {
        var response = plain(file)
        response.headers.append(("Vary", "Accept-Encoding"))
        let accepts = request.headers(named: "Accept-Encoding").joined(separator: ",").lowercased()
        guard accepts.contains("gzip") else { return response }
        guard let compressed = Gzip.compress(file.data) else { return .text("gzip failed\n", status: 500) }
        response.headers.append(("Content-Encoding", "gzip"))
        response.body = .data(compressed)
        return response
    }

    private static let errorPage = """
        <!DOCTYPE html>
        <html><head><title>404 Not Found</title></head>
        <body><h1>Not Found</h1><p>The requested image could not be found.</p></body></html>

        """
}

extension LocalImageServer {
    /// The 1×1 RGB PNG served at `/pixel.png` and at the end of `/redirect/<n>` without `to`.
    public static let pixelPNG = Data([
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53, 0xde, 0x00, 0x00, 0x00,
        0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xdf, 0xc0, 0x00, 0x00, 0x04, 0x01, 0x01, 0x80, 0xc5,
        0x2a, 0x18, 0x5d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ])
}
