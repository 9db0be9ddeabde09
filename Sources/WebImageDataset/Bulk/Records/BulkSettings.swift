import Foundation
import WebImage

/// What the bulk engine does to each image and how it writes the shards.
public struct BulkSettings: Sendable {
    // MARK: Output

    /// The shards' format; `.webdataset` by default.
    public var outputFormat: SampleOutputFormat = .webdataset
    /// Whether each shard also writes `{shard:05}.parquet` (the jsonl's rows and columns); `true` by default.
    public var writesParquet = true
    /// The kept columns (`--save-cols`); none by default.
    public var savedColumns: [String] = []
    /// Whether each sample gets a `{key}.txt` caption; `false` by default.
    public var writesCaptions = false

    // MARK: Downloading

    /// Downloads at once, all hosts together; 64 by default.
    public var concurrency = 64
    /// Rows under way at once (holding a ``DownloadSlots`` slot, queued in the downloader): four times
    /// `concurrency`. `concurrency` bounds the downloads running (`maximumTotalConnections`) and `--per-host`
    /// each host's (`maximumConnectionsPerHost`); a row waiting for its host's turn takes neither, only one
    /// of these, so host-sorted input lets other hosts' rows run beside a slow host's queue of rows.
    public var rowsUnderWay: Int { concurrency * Self.rowsPerConnection }
    /// Row slots per connection.
    public static let rowsPerConnection = 4
    /// How the downloader connects: per-host limit, retries, timeouts, `User-Agent` and the destination
    /// policy (public addresses only by default); ``downloaderConfig()`` turns it, with ``concurrency``, into
    /// the downloader's configuration.
    public var download = BulkDownloadSettings()
    /// The `X-Robots-Tag` directives that fail a row (error code `robotsTag`), lowercase; img2dataset's
    /// `noai`, `noimageai`, `noindex` and `noimageindex` by default, none to ignore the header. A directive
    /// scoped to a user agent (`X-Robots-Tag: otherbot: noai`) counts only when the agent is
    /// ``userAgentToken``.
    public var disallowedHeaderDirectives: Set<String> = ["noai", "noimageai", "noindex", "noimageindex"]
    /// The token naming this crawler in `X-Robots-Tag` (`--user-agent-token`), lowercase; none by default.
    public var userAgentToken: String?
    /// The digest each record carries of the downloaded file, under the algorithm's name; SHA-256 by
    /// default, nil for none.
    public var hashAlgorithm: BulkHashAlgorithm? = .sha256
    /// Whether every row must carry the expected digest (``BulkColumns/verifyHash`` is set): a row without
    /// one fails with `hashMismatch`, as img2dataset's `verify_hash` fails it; `false` by default.
    public var verifiesHash = false

    // MARK: Images

    /// The resize; nil keeps the decoded size.
    public var resize: BulkResize?
    /// The encoder; nil keeps the downloaded bytes as they came.
    public var encoder: (any ImageEncoding)?
    /// Images whose smaller side (the file's, before resizing) is below this fail with `tooSmall`; 0 by
    /// default.
    public var minimumSize = 0
    /// Images of more pixels than this (width × height of the file) fail with `areaTooLarge`; no limit by
    /// default.
    public var maximumArea: Int?
    /// Images whose longer side is more than this many times the shorter fail with `aspectRatio`; no
    /// limit by default.
    public var maximumAspectRatio: Double?
    /// Whether an image decoded from a file that ends early (`Image.isPartial`) is kept; by default the
    /// row fails with `truncated`, as img2dataset rejects such an image.
    public var allowsPartial = false

    /// The defaults, as each property gives them.
    public init() {}

    /// Why an image of `width`×`height` (the file's size) fails the size filters, in img2dataset's words
    /// ("image too small", "image area too large", "aspect ratio too large") followed by the numbers;
    /// nil when it passes. Checked in img2dataset's order.
    func rejection(width: Int, height: Int) -> (BulkFailure, String)? {
        let shorter = min(width, height)
        if shorter < minimumSize {
            return (.tooSmall, "image too small: \(width)×\(height) is below --min-image-size \(minimumSize)")
        }
        if let maximumArea, width * height > maximumArea {
            return (
                .areaTooLarge,
                "image area too large: \(width)×\(height) is \(width * height) pixels, over --max-image-area "
                    + "\(maximumArea)"
            )
        }
        if let maximumAspectRatio {
            let ratio = Double(max(width, height)) / Double(max(1, shorter))
            if ratio > maximumAspectRatio {
                return (
                    .aspectRatio,
                    "aspect ratio too large: \(width)×\(height) is \(String(format: "%.2f", ratio)), over "
                        + "--max-aspect-ratio \(maximumAspectRatio)"
                )
            }
        }
        return nil
    }
}

/// One row's outcome, as the shard's files record it.
struct BulkSample: Sendable {
    /// The sample's key (``BulkShardRunner/key(shard:index:)``).
    var key: String
    var row: BulkRow
    var bytes: Data?
    var fileExtension: String = ""
    var failure: BulkFailure?
    /// The digest of the downloaded file (``BulkSettings/hashAlgorithm``).
    var hash: String?
    var errorMessage: String?
    var width: Int?
    var height: Int?
    var originalWidth: Int?
    var originalHeight: Int?
    var milliseconds = 0
    var attempts = 1

    var succeeded: Bool { bytes != nil && failure == nil }

    mutating func fail(_ failure: BulkFailure, _ message: String) {
        self.failure = failure
        errorMessage = message
    }

    /// The record of this sample under `key`. A password in the URL is written as `***`
    /// (`URL.redactedString`): a dataset's metadata is often shared.
    func record(key: String, hashAlgorithm: BulkHashAlgorithm?) -> BulkSampleRecord {
        BulkSampleRecord(
            key: key, url: URL(string: row.url)?.redactedString ?? row.url, status: succeeded ? .success : .failed,
            error: errorMessage, errorCode: failure?.code, caption: row.caption, milliseconds: milliseconds,
            attempts: attempts, width: width, height: height, originalWidth: originalWidth,
            originalHeight: originalHeight, hashAlgorithm: hashAlgorithm, hash: succeeded ? hash : nil,
            saved: row.saved)
    }
}

/// Per-shard totals: `{shard:05}_stats.json`.
public struct BulkShardStats: Codable, Sendable, Equatable {
    /// The shard's number.
    public var shard: Int
    /// Rows run.
    public var count = 0
    /// Rows that gave an image.
    public var successes = 0
    /// Failed rows per ``BulkFailure/code``.
    public var failures: [String: Int] = [:]
    /// Bytes of the saved images.
    public var bytes = 0
    /// Seconds from opening the shard to writing its stats.
    public var duration = 0.0
    /// When the shard was opened, in seconds since 1970; nil in stats written before it was recorded.
    public var started: Double?
    /// When its stats were written, in seconds since 1970; nil in stats written before it was recorded.
    public var finished: Double?

    /// Empty totals of shard `shard`.
    public init(shard: Int) { self.shard = shard }
}
