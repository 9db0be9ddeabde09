import Foundation
import Locking

@testable import WebImage

/// Fixed clocks, temporary directories and message collection for the cache tests.
enum CachingTestSupport {
    /// A fixed instant all date arithmetic in the tests starts from (2023-11-14 22:13:20 UTC).
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    /// A fresh empty directory, unique per call.
    static func makeTemporaryDirectory(_ label: String = #function) throws -> URL {
        let sanitized = label.filter { $0.isLetter || $0.isNumber }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("webimage-cache-tests-\(sanitized)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    static func url(_ path: String) -> URL {
        URL(string: "https://images.example.com/\(path)")!  // a literal that always parses
    }

    static func request(_ path: String, headers: HTTPHeaders = [:]) -> ImageDownloadRequest {
        ImageDownloadRequest(url: url(path), headers: headers)
    }

    static func response(
        _ path: String, status: Int = 200, headers: HTTPHeaders, body: Data? = nil
    ) -> TransferResponse {
        var headers = headers
        if let body, !headers.contains("Content-Length") { headers["Content-Length"] = String(body.count) }
        return TransferResponse(url: url(path), statusCode: status, headers: headers)
    }

    /// Deterministic pseudo-random bytes (a 64-bit LCG), so a body can be checked by its seed.
    static func body(seed: Int, count: Int) -> Data {
        var state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1
        var bytes = [UInt8](repeating: 0, count: count)
        for index in bytes.indices {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes[index] = UInt8(truncatingIfNeeded: state >> 56)
        }
        return Data(bytes)
    }

    static func httpDate(_ date: Date) -> String { HTTPDate.format(date) }
}

extension HTTPCacheLookup {
    var isMiss: Bool { if case .miss = self { true } else { false } }
    var isFresh: Bool { if case .fresh = self { true } else { false } }
    var isStale: Bool { if case .stale = self { true } else { false } }

    var conditionalHeaders: HTTPHeaders? {
        if case .stale(_, let headers) = self { headers } else { nil }
    }
}
