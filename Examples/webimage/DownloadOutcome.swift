import Foundation
import WebImage

/// What one requested URL came to: the row of the summary table and one `--json` line.
struct DownloadOutcome: Sendable {
    /// Position in the request list, from 0.
    var index: Int
    /// The URL as requested; shown with `redactedString`, so a password in it is never printed.
    var url: URL
    /// The decoded image (the last partial one for a failure after progressive updates is not kept).
    var image: Image?
    /// The bytes received.
    var data: Data?
    /// The library's error, when the download failed.
    var error: ImageDownloaderError?
    /// The HTTP status of the final response, when one arrived.
    var status: Int?
    /// The protocol of the final response (`"1.1"`, `"2"`), when one arrived; for a cache hit, the
    /// protocol the stored response came over.
    var httpVersion: String?
    /// Wall-clock milliseconds from the start of the transfer to completion.
    var milliseconds: Int
    /// Where the bytes came from (network, a fresh cache entry, a 304 revalidation); nil after a failure.
    var cacheStatus: ImageDownloadCacheStatus?
    /// Partial images delivered by progressive loading.
    var partialImages: Int = 0
    /// A short remark from the demo ("merged", "LIFO #2", ...).
    var note: String = ""
    /// Where `-o` saved the bytes, when it did.
    var savedPath: String?
    /// Why `-o` could not save the bytes: the download worked, this file failed.
    var saveError: String?
    /// The parts of an image the table and the result lines show.
    struct ImageInfo: Sendable {
        var format: ImageFormat
        var width: Int
        var height: Int
        var frameCount: Int

        init(_ image: Image) {
            format = image.format
            width = image.width
            height = image.height
            frameCount = image.frameCount
        }
    }

    /// The image's format, size and frame count.
    var imageInfo: ImageInfo? { image.map(ImageInfo.init) }
    /// Bytes received.
    var byteCount: Int { data?.count ?? 0 }

    /// Whether the image was decoded from data that ends early (`Image.isPartial`): the rows that arrived,
    /// the rest filled in. A failure unless `allowsPartial`, as img2dataset rejects such an image.
    var partial: Bool { image?.isPartial == true }
    /// Whether a partial image counts as a success (`get --allow-partial`).
    var allowsPartial = false

    /// The download worked, gave a whole image (or a partial one `allowsPartial` accepts) and, with `-o`,
    /// its file was written.
    var ok: Bool { error == nil && saveError == nil && (allowsPartial || !partial) }

    /// Whether a cache answered instead of a full download; nil after a failure.
    var fromCache: Bool? { cacheStatus.map { $0 != .network } }

    /// The JSON object of `--json`: every key present, null where there is no value.
    func jsonLine() -> String {
        var fields: [(String, String)] = [
            ("url", Self.quote(url.redactedString)),
            ("ok", ok ? "true" : "false"),
        ]
        if let error {
            fields.append(
                (
                    "error",
                    "{\"code\":\(error.code.rawValue),\"name\":\(Self.quote(error.code.description)),"
                        + "\"message\":\(Self.quote(error.message))}"
                ))
        } else {
            fields.append(("error", "null"))
        }
        fields += [
            ("status", status.map(String.init) ?? "null"),
            ("http", httpVersion.map(Self.quote) ?? "null"),
            ("format", imageInfo.map { Self.quote($0.format.rawValue) } ?? "null"),
            ("bytes", String(byteCount)),
            ("width", imageInfo.map { String($0.width) } ?? "null"),
            ("height", imageInfo.map { String($0.height) } ?? "null"),
            ("frames", imageInfo.map { String($0.frameCount) } ?? "null"),
            ("ms", String(milliseconds)),
            ("fromCache", fromCache.map { $0 ? "true" : "false" } ?? "null"),
            ("cache", cacheStatus.map { Self.quote($0.rawValue) } ?? "null"),
            ("partialImages", String(partialImages)),
            ("partial", partial ? "true" : "false"),
        ]
        if let savedPath { fields.append(("saved", Self.quote(savedPath))) }
        if let saveError { fields.append(("saveError", Self.quote(saveError))) }
        return "{" + fields.map { "\(Self.quote($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    /// A JSON string literal.
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// One plain line: "ok   200 jpeg 512x512 1f 53962 B 12 ms URL" or "FAIL 404 <error> URL".
    var plainLine: String {
        let statusText = status.map(String.init) ?? "---"
        if let error {
            return
                "FAIL \(statusText) \(error.code.description) (\(error.code.rawValue)): \(error.message)  \(url.redactedString)"
        }
        var text = ok ? "ok   \(statusText)" : "FAIL \(statusText)"
        if let image = imageInfo {
            text += " \(image.format.rawValue) \(image.width)x\(image.height) \(image.frameCount)f"
        } else {
            text += " (not decoded)"
        }
        text += " \(byteCount) B \(milliseconds) ms"
        if let cacheStatus, cacheStatus != .network { text += " cache:\(cacheStatus.rawValue)" }
        if partial { text += " partial (the data ends early)" }
        if let saveError { text += " not saved: \(saveError)" }
        return text + "  \(url.redactedString)"
    }
}

extension ImageDownloaderError {
    /// Any error as the library's error (a non-library error becomes `transport` with its text).
    static func wrap(_ error: any Error, url: URL) -> ImageDownloaderError {
        if let error = error as? ImageDownloaderError { return error }
        return ImageDownloaderError(.transport, String(describing: error), url: url)
    }
}
