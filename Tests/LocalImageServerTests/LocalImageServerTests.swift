import Foundation
import LocalImageServer
import LocalImageServerTLS
import TestSupport
import Testing

/// Runs `body` against a started server over a fresh fixture folder, and cleans both up.
private func withServer(
    tls: LocalImageServer.TLSMode = .none,
    _ body: (LocalImageServer, ServerFixtures) async throws -> Void
) async throws {
    let fixtures = try ServerFixtures()
    defer { fixtures.remove() }
    let server = LocalImageServer(root: fixtures.folder, tls: tls)
    try server.start()
    defer { server.shutdown() }
    try await body(server, fixtures)
}

@Suite("LocalImageServer", .timeLimit(.minutes(5)))
struct LocalImageServerTests {
    @Test("static files come back byte for byte with Content-Length and an image type")
    func staticFile() async throws {
        try await withServer { server, fixtures in
            for (name, type) in [
                ("horse-rgba.png", "image/png"), ("astronaut-baseline.jpg", "image/jpeg"),
                ("chelsea.gif", "image/gif"), ("horse-lossless.webp", "image/webp"),
            ] {
                let result = try await Curl.run([server.url("/files/\(name)").absoluteString])
                #expect(result.exitCode == 0)
                #expect(result.status == 200)
                #expect(result.body == (try fixtures.data(name)))
                #expect(result.header("Content-Length") == String(try fixtures.data(name).count))
                #expect(result.header("Content-Type") == type)
            }
            let missing = try await Curl.run([server.url("/files/nope.png").absoluteString])
            #expect(missing.status == 404)
        }
    }

    @Test("chunked route has no Content-Length and the same bytes")
    func chunked() async throws {
        try await withServer { server, fixtures in
            let result = try await Curl.run([server.url("/chunked/astronaut-baseline.jpg").absoluteString])
            #expect(result.exitCode == 0)
            #expect(result.header("Transfer-Encoding") == "chunked")
            #expect(result.header("Content-Length") == nil)
            #expect(result.body == (try fixtures.data("astronaut-baseline.jpg")))
        }
    }

    @Test("status route answers the requested code", arguments: [200, 204, 404, 500, 503])
    func status(code: Int) async throws {
        try await withServer { server, _ in
            let result = try await Curl.run([server.url("/status/\(code)").absoluteString])
            #expect(result.exitCode == 0)
            #expect(result.status == code)
        }
    }

    @Test("redirect chain, loop and file redirect")
    func redirects() async throws {
        try await withServer { server, fixtures in
            let chain = try await Curl.run([
                "-L", "-w", "%{num_redirects}", server.url("/redirect/3?to=horse-rgba.png").absoluteString,
            ])
            #expect(chain.exitCode == 0)
            #expect(chain.writeOut == "3")
            #expect(chain.body == (try fixtures.data("horse-rgba.png")))
            #expect(server.count(for: "/redirect/3") == 1)
            #expect(server.count(for: "/redirect/1") == 1)
            #expect(server.count(for: "/files/horse-rgba.png") == 1)

            let pixel = try await Curl.run(["-L", server.url("/redirect/1").absoluteString])
            #expect(pixel.body == LocalImageServer.pixelPNG)

            let loop = try await Curl.run(["-L", "--max-redirs", "5", server.url("/redirect-loop").absoluteString])
            #expect(loop.exitCode == 47)
            #expect(server.count(for: "/redirect-loop") == 6)

            let file = try await Curl.run([server.url("/redirect-file").absoluteString])
            #expect(file.status == 302)
            #expect(file.header("Location") == "file:///etc/passwd")

            let target = "http://localhost:\(server.port)/files/pixel-1x1.png"
            let anywhere = try await Curl.run([
                "-L", server.url("/redirect-to?url=\(target)&code=307").absoluteString,
            ])
            #expect(anywhere.exitCode == 0)
            #expect(anywhere.body == (try fixtures.data("pixel-1x1.png")))
            #expect(anywhere.rawHeaders.contains("307"))
        }
    }

    @Test("basic auth challenges without credentials and serves with them")
    func basicAuth() async throws {
        try await withServer { server, fixtures in
            let url = server.url("/auth/basic/alice/s3cret/horse-rgba.png").absoluteString
            let challenged = try await Curl.run([url])
            #expect(challenged.status == 401)
            #expect(challenged.header("WWW-Authenticate") == "Basic realm=\"webimage\"")

            let wrong = try await Curl.run(["-u", "alice:nope", url])
            #expect(wrong.status == 401)

            let granted = try await Curl.run(["-u", "alice:s3cret", url])
            #expect(granted.status == 200)
            #expect(granted.body == (try fixtures.data("horse-rgba.png")))
        }
    }

    @Test("Set-Cookie and cookie echo")
    func cookies() async throws {
        try await withServer { server, _ in
            let jar = FileManager.default.temporaryDirectory.appendingPathComponent("jar-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: jar) }
            let set = try await Curl.run([
                "-c", jar.path, server.url("/cookies/set?session=abc&theme=dark").absoluteString,
            ])
            #expect(set.status == 200)
            #expect(set.rawHeaders.contains("Set-Cookie: session=abc; Path=/"))
            #expect(set.rawHeaders.contains("Set-Cookie: theme=dark; Path=/"))

            let echo = try await Curl.run(["-b", jar.path, server.url("/cookies/echo").absoluteString])
            let cookies = String(decoding: echo.body, as: UTF8.self)
            #expect(cookies.contains("session=abc"))
            #expect(cookies.contains("theme=dark"))

            let none = try await Curl.run([server.url("/cookies/echo").absoluteString])
            #expect(none.status == 200)
            #expect(none.body.isEmpty)
        }
    }

    @Test("ETag and Last-Modified give 304 on match, and a changed resource gets a new tag")
    func conditionalRequests() async throws {
        try await withServer { server, fixtures in
            let url = server.url("/etag/horse-rgba.png").absoluteString
            let first = try await Curl.run([url])
            let etag = try #require(first.header("ETag"))
            #expect(etag.hasPrefix("\""))

            let revalidated = try await Curl.run(["-H", "If-None-Match: \(etag)", url])
            #expect(revalidated.status == 304)
            #expect(revalidated.body.isEmpty)
            #expect(revalidated.header("ETag") == etag)

            server.setFile(name: "horse-rgba.png", data: try fixtures.data("chelsea.gif"), contentType: "image/png")
            let changed = try await Curl.run(["-H", "If-None-Match: \(etag)", url])
            #expect(changed.status == 200)
            #expect(changed.header("ETag") != etag)
            #expect(changed.body == (try fixtures.data("chelsea.gif")))

            let lastModifiedURL = server.url("/last-modified/chelsea.gif").absoluteString
            let dated = try await Curl.run([lastModifiedURL])
            let lastModified = try #require(dated.header("Last-Modified"))
            #expect(lastModified == "Mon, 01 Jan 2024 00:00:00 GMT")
            let notModified = try await Curl.run(["-H", "If-Modified-Since: \(lastModified)", lastModifiedURL])
            #expect(notModified.status == 304)
            let older = try await Curl.run(["-H", "If-Modified-Since: Sun, 31 Dec 2023 00:00:00 GMT", lastModifiedURL])
            #expect(older.status == 200)

            let cached = try await Curl.run([server.url("/cache/max-age%3D60/chelsea.gif").absoluteString])
            #expect(cached.header("Cache-Control") == "max-age=60")
            #expect(cached.header("ETag") != nil)
            let vary = try await Curl.run([server.url("/vary/chelsea.gif").absoluteString])
            #expect(vary.header("Vary") == "Accept")
        }
    }

    @Test("gzip body decodes with --compressed and is identity without Accept-Encoding")
    func gzip() async throws {
        try await withServer { server, fixtures in
            let url = server.url("/gzip/astronaut-baseline.jpg").absoluteString
            let compressed = try await Curl.run(["--compressed", "-w", "%{size_download}", url])
            #expect(compressed.exitCode == 0)
            #expect(compressed.header("Content-Encoding") == "gzip")
            #expect(compressed.body == (try fixtures.data("astronaut-baseline.jpg")))
            #expect(Int(compressed.writeOut) == Int(compressed.header("Content-Length") ?? ""))

            let identity = try await Curl.run([url])
            #expect(identity.header("Content-Encoding") == nil)
            #expect(identity.body == (try fixtures.data("astronaut-baseline.jpg")))
        }
    }

    @Test("other fixed routes: wrong type, empty, html, headers echo, bytes")
    func fixedRoutes() async throws {
        try await withServer { server, fixtures in
            let wrong = try await Curl.run([server.url("/wrong-type/horse-rgba.png").absoluteString])
            #expect(wrong.header("Content-Type") == "text/html")
            #expect(wrong.body == (try fixtures.data("horse-rgba.png")))

            let empty = try await Curl.run([server.url("/empty").absoluteString])
            #expect(empty.status == 200)
            #expect(empty.header("Content-Length") == "0")
            #expect(empty.header("Content-Type") == "image/png")

            let html = try await Curl.run([server.url("/html").absoluteString])
            #expect(html.status == 200)
            #expect(html.header("Content-Type")?.hasPrefix("text/html") == true)

            let echoed = try await Curl.run(["-H", "X-Mixed-Case: Yes", server.url("/headers").absoluteString])
            let pairs = try JSONDecoder().decode([[String]].self, from: echoed.body)
            #expect(pairs.contains(["X-Mixed-Case", "Yes"]))

            let head = try await Curl.run(["-I", server.url("/files/horse-rgba.png").absoluteString])
            #expect(head.exitCode == 0)
            #expect(head.header("Content-Length") == String(try fixtures.data("horse-rgba.png").count))
            let headEntry = server.requests(for: "/files/horse-rgba.png").last
            #expect(headEntry?.method == "HEAD")
            #expect(headEntry?.bytesSent == 0)

            let bytes = try await Curl.run([server.url("/bytes/300000").absoluteString])
            #expect(bytes.body == LocalImageServer.patternBytes(offset: 0, count: 300_000))
            #expect(server.bytesSent(for: "/bytes/300000") == 300_000)
        }
    }

    @Test("custom routes win over built-in ones")
    func customRoute() async throws {
        try await withServer { server, _ in
            server.route("/status/418") { request in
                .text("teapot \(request.queryValue("x") ?? "")", status: 418)
            }
            let result = try await Curl.run([server.url("/status/418?x=1").absoluteString])
            #expect(result.status == 418)
            #expect(result.body == Data("teapot 1".utf8))
        }
    }
}
