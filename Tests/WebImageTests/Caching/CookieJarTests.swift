import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

@Suite(.timeLimit(.minutes(5))) struct CookieJarTests {
    let server: LocalImageServer
    init() throws { server = try Fixtures.server() }

    private func temporaryFile() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("webimage-cookies-\(UUID().uuidString).txt")
    }

    private func fetch(_ downloader: ImageDownloader, _ path: String, cookies: Bool) -> Bool {
        let recorder = CallbackRecorder()
        downloader.downloadImage(
            with: server.url(path), options: cookies ? [.handleCookies, .avoidDecodeImage] : .avoidDecodeImage,
            completed: recorder.completion())
        return recorder.waitForTerminal(1)
    }

    @Test func setCookieIsStoredOnlyWithHandleCookies() throws {
        let jar = CookieJar()
        var config = ImageDownloaderConfig()
        config.cookieStorage = jar
        let downloader = ImageDownloader(config: config)
        #expect(fetch(downloader, "/cookies/set?ignored=1", cookies: false))
        #expect(jar.allCookies.isEmpty, "a Set-Cookie was stored without handleCookies")
        #expect(fetch(downloader, "/cookies/set?kept=2", cookies: true))
        let stored = jar.cookies(for: server.url("/any"))
        #expect(stored.map(\.name) == ["kept"])
        #expect(stored.first?.value == "2")
        #expect(stored.first?.domain == "127.0.0.1")
    }

    @Test func cookiesSetThroughTheAPIAreSentAndRemovable() throws {
        let jar = CookieJar()
        var config = ImageDownloaderConfig()
        config.cookieStorage = jar
        let downloader = ImageDownloader(config: config)
        try jar.set(Cookie(name: "api", value: "yes", domain: "127.0.0.1"))
        try jar.set(Cookie(name: "other", value: "host", domain: "example.com"))
        #expect(jar.cookies(for: server.url("/")).map(\.name) == ["api"])
        #expect(fetch(downloader, "/cookies/echo", cookies: true))
        #expect(server.requests(for: "/cookies/echo").last?.request.header("Cookie") == "api=yes")

        try jar.remove(Cookie(name: "api", value: "", domain: "127.0.0.1"))
        #expect(jar.cookies(for: server.url("/")).isEmpty)
        try jar.removeAll()
        #expect(jar.allCookies.isEmpty)
    }

    @Test func theJarPersistsToANetscapeFileAndLoadsItBack() throws {
        let file = temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        do {
            let jar = CookieJar(fileURL: file)
            var config = ImageDownloaderConfig()
            config.cookieStorage = jar
            let downloader = ImageDownloader(config: config)
            #expect(fetch(downloader, "/cookies/set?persisted=abc", cookies: true))
            try jar.set(
                Cookie(
                    name: "manual", value: "1", domain: "example.org", includesSubdomains: true, isSecure: true,
                    expires: Date(timeIntervalSince1970: 4_000_000_000)))
            try jar.save()
        }
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.hasPrefix("# Netscape HTTP Cookie File"))
        #expect(text.contains("persisted\tabc"))
        #expect(text.contains(".example.org\tTRUE\t/\tTRUE\t4000000000\tmanual\t1"))

        let reloaded = CookieJar(fileURL: file)
        #expect(reloaded.cookies(for: server.url("/x")).map(\.name) == ["persisted"])
        #expect(reloaded.cookies(for: URL(string: "https://img.example.org/a.png")!).map(\.name) == ["manual"])
        #expect(
            reloaded.cookies(for: URL(string: "http://img.example.org/a.png")!).isEmpty, "secure cookie sent over http")
    }

    @Test func netscapeLinesRoundTrip() {
        let cookie = Cookie(
            name: "n", value: "v\tw", domain: "a.example", path: "/p", includesSubdomains: true, isSecure: false,
            isHTTPOnly: true, expires: Date(timeIntervalSince1970: 1_900_000_000))
        #expect(CookieJar.parse(CookieJar.netscapeLine(cookie)) == cookie)
        #expect(CookieJar.parse("# comment") == nil)
        #expect(CookieJar.parse("too\tfew") == nil)
    }
}
