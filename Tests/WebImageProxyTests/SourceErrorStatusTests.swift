import Foundation
import Testing
import WebImage

@testable import WebImageProxy

/// The status a failed source fetch is answered with: the downloader's error code decides it, so a source
/// that is too large (the client's URL or file) and a server whose shared body budget is full (other
/// requests) are told apart.
@Suite("serve: a source failure's status")
struct SourceErrorStatusTests {
    static func status(_ code: ImageDownloaderError.Code, statusCode: Int? = nil) -> Int {
        ImageProxy.proxyError(for: ImageDownloaderError(code, "test", statusCode: statusCode)).status
    }

    @Test("each downloader code maps to imgproxy's status for it; a full in-flight budget is 503, not 422")
    func statuses() {
        #expect(Self.status(.invalidDownloadStatusCode, statusCode: 404) == 404)
        #expect(Self.status(.invalidDownloadStatusCode, statusCode: 410) == 404)
        #expect(Self.status(.invalidDownloadStatusCode, statusCode: 500) == 502)
        #expect(Self.status(.timedOut) == 504)
        #expect(Self.status(.destinationNotAllowed) == 403)
        #expect(Self.status(.badImageData) == 422)
        #expect(Self.status(.responseTooLarge) == 422)
        #expect(Self.status(.inFlightBodyLimit) == 503)
        #expect(Self.status(.cannotConnect) == 502)
    }
}
