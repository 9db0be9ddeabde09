import Foundation
import Testing

@testable import WebImage

/// libcurl's cookie-handle return codes reach the downloader's error funnel. (The multi and share codes,
/// and the failing poll, are WebImageTransportTests' CReturnCodeTests.)
@Suite(.timeLimit(.minutes(2))) struct CReturnCodeTests {
    @Test func aCookieFileThatCannotBeWrittenIsAnErrorWithItsCause() throws {
        let missing = FileManager.default.temporaryDirectory
            .appendingPathComponent("no-such-folder-\(UUID().uuidString)/cookies.txt")
        let jar = CookieJar(fileURL: missing)
        let error = #expect(throws: ImageDownloaderError.self) {
            try jar.set(Cookie(name: "a", value: "b", domain: "127.0.0.1"))
        }
        #expect(error?.code == .transport)
        #expect(error?.message.contains("could not be written") == true)
        #expect(error?.underlying != nil)
        // The cookie itself was taken: only the file failed.
        #expect(jar.allCookies.map(\.name) == ["a"])
    }
}
