import WebImage

/// Why a row has no image: the `error_code` of its record.
///
/// ``isPermanent`` tells the failures no retry can change (the row itself, the filters, the site's
/// robots tag) from those a later attempt may fix (network, server, disk); `--retry-failed` runs only the
/// latter again.
public enum BulkFailure: Sendable, Hashable, CustomStringConvertible {
    /// The URL is not an http(s) URL with a host.
    case invalidURL
    /// The response's `X-Robots-Tag` has a disallowed directive (`noai`, `noimageai`, …).
    case robotsTag
    /// The image's smaller side is below the minimum size.
    case tooSmall
    /// The image has more pixels than the maximum area.
    case areaTooLarge
    /// The image's sides are further apart than the maximum aspect ratio.
    case aspectRatio
    /// The downloaded file's digest is not the one the row's hash column gives.
    case hashMismatch
    /// The downloaded file is byte for byte one another row of the output kept (``BulkDeduplication``).
    case duplicate
    /// The image data ends early (only part of it decoded).
    case truncated
    /// The image could not be encoded in the output format.
    case encoding
    /// A webdataset input's sample has no image to reprocess (``BulkRowImage/unusable(_:)``).
    case unusableSample
    /// The download or decoding failed with this ``ImageDownloaderError`` code (its description, such as
    /// `timedOut` or `invalidDownloadStatusCode`), or `unknown`.
    case download(code: String)

    /// The failure an `error_code` names (as a record, or a retried shard's jsonl, spells it).
    public init(code: String) {
        switch code {
        case "invalidURL": self = .invalidURL
        case "robotsTag": self = .robotsTag
        case "tooSmall": self = .tooSmall
        case "areaTooLarge": self = .areaTooLarge
        case "aspectRatio": self = .aspectRatio
        case "hashMismatch": self = .hashMismatch
        case "duplicate": self = .duplicate
        case "truncated": self = .truncated
        case "encoding": self = .encoding
        case "unusableSample": self = .unusableSample
        default: self = .download(code: code)
        }
    }

    /// The failure of a download that threw `error`.
    public init(error: any Error) {
        guard let failure = error as? ImageDownloaderError else {
            self = .download(code: "unknown")
            return
        }
        self.init(code: failure.code.description)
    }

    /// The `error_code` written in the record.
    public var code: String {
        switch self {
        case .invalidURL: "invalidURL"
        case .robotsTag: "robotsTag"
        case .tooSmall: "tooSmall"
        case .areaTooLarge: "areaTooLarge"
        case .aspectRatio: "aspectRatio"
        case .hashMismatch: "hashMismatch"
        case .duplicate: "duplicate"
        case .truncated: "truncated"
        case .encoding: "encoding"
        case .unusableSample: "unusableSample"
        case .download(let code): code
        }
    }

    /// The `error_code`.
    public var description: String { code }

    /// Whether the row failed before or after it had an image file: img2dataset's record `status`
    /// (`failed_to_download` or `failed_to_resize`) and the stats' two failure counts.
    ///
    /// img2dataset fails in its downloader for the URL, the connection, the server, the robots tag and a
    /// digest that differs, and in its resizer for a file that does not decode, the size filters and the
    /// encoder; `badImageData` (an undecodable body) is a resizer failure for the same reason.
    public var isResizeFailure: Bool {
        switch self {
        case .tooSmall, .areaTooLarge, .aspectRatio, .truncated, .encoding: true
        case .download(let code): code == "badImageData"
        case .invalidURL, .robotsTag, .hashMismatch, .duplicate, .unusableSample: false
        }
    }

    /// Whether no later attempt can change the outcome: an invalid URL, the robots tag, the size, area
    /// and aspect-ratio filters, a file whose digest is not the expected one, and a duplicate.
    /// `--retry-failed` leaves these rows alone.
    public var isPermanent: Bool {
        switch self {
        case .invalidURL, .robotsTag, .tooSmall, .areaTooLarge, .aspectRatio, .hashMismatch, .duplicate,
            .unusableSample:
            true
        case .truncated, .encoding, .download: false
        }
    }
}
