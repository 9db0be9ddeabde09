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

    /// The name img2dataset gives the saved image in its Parquet and TFRecord outputs (its `encode_format`):
    /// `jpg`, `png`, `webp` or `avif` after the encoder, and `jpg` when the downloaded bytes are kept, as
    /// img2dataset's default `encode_format` names the column when it does not re-encode either.
    public var imageFieldName: String {
        guard let encoder else { return "jpg" }
        return encoder.format == .jpeg ? "jpg" : encoder.format.rawValue
    }

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
    /// Whether rows whose file another row of the output kept fail as duplicates (``BulkDeduplication``),
    /// through the index in the output directory; none by default.
    public var deduplication: BulkDeduplication?
    /// The most bits two perceptual hashes may differ in to be one picture (``BulkDeduplication/phash``),
    /// 0…7; 4 by default.
    public var deduplicationThreshold = 4
    /// How many more passes ``BulkEngine/run(progress:)`` makes over the shards still not done after a
    /// shard fails (img2dataset's `max_shard_retry`); 1 by default, as img2dataset's.
    public var maxShardRetry = 1
    /// Whether each record has img2dataset's `exif` field: the downloaded file's EXIF as img2dataset
    /// writes it (``EXIFSummary``), null for a failed row; `true` by default, as img2dataset's
    /// `extract_exif`.
    public var extractsEXIF = true
    /// Whether every row must carry the expected digest (``BulkColumns/verifyHash`` is set): a row without
    /// one fails with `hashMismatch`, as img2dataset's `verify_hash` fails it; `false` by default.
    public var verifiesHash = false

    // MARK: Images

    /// The resize; nil keeps the decoded size.
    public var resize: BulkResize?
    /// The encoder; nil keeps the downloaded bytes as they came.
    public var encoder: (any ImageEncoding)?
    /// img2dataset's `skip_reencode`: a file already in the encoder's format that the resize and the blur
    /// left as it was (same size, no boxes) and that has no alpha channel is kept byte for byte instead of
    /// being decoded and encoded again; `false` by default.
    public var skipsReencoding = false
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
    /// The downloaded file's EXIF text (``BulkSettings/extractsEXIF``).
    var exif: String?
    /// The image's perceptual hash, hex (``BulkDeduplication/phash``).
    var phash: String?
    var errorMessage: String?
    var width: Int?
    var height: Int?
    var originalWidth: Int?
    var originalHeight: Int?
    var milliseconds = 0
    var attempts = 1
    /// The size of the downloaded file; 0 when no file arrived.
    var downloadedBytes = 0

    var succeeded: Bool { bytes != nil && failure == nil }

    mutating func fail(_ failure: BulkFailure, _ message: String) {
        self.failure = failure
        errorMessage = message
    }

    /// The record of this sample under `key`. Its URL is the input's text as given, as img2dataset
    /// writes it (not re-encoded: `not a url` stays `not a url`), unless it carries credentials: then it is
    /// `URL.redactedString` (a password written as `***`), since a dataset's metadata is often shared.
    func record(
        key: String, hashAlgorithm: BulkHashAlgorithm?, recordsEXIF: Bool = false, recordsPHash: Bool = false
    ) -> BulkSampleRecord {
        let url = URL(string: row.url).flatMap { $0.hasUserInfo ? $0.redactedString : nil } ?? row.url
        return BulkSampleRecord(
            key: key, url: url,
            status: .init(failure: succeeded ? nil : failure ?? .download(code: "unknown")),
            errorMessage: errorMessage, errorCode: failure?.code, caption: row.caption, milliseconds: milliseconds,
            attempts: attempts, width: width, height: height, originalWidth: originalWidth,
            originalHeight: originalHeight, hashAlgorithm: hashAlgorithm, hash: succeeded ? hash : nil,
            recordsEXIF: recordsEXIF, exif: succeeded ? exif : nil, recordsPHash: recordsPHash, phash: phash,
            saved: row.saved)
    }
}

/// Per-shard totals: `{shard:05}_stats.json`, in img2dataset's fields (`count`, `successes`,
/// `failed_to_download`, `failed_to_resize`, `duration`, `start_time`, `end_time`, `status_dict`) plus
/// WebImage's `shard`, `bytes` and `bytes_downloaded`.
///
/// img2dataset keys `status_dict` by each failure's message; WebImage keys it by the failure's
/// ``BulkFailure/code`` (messages carry each row's numbers, so they would rarely repeat), and counts
/// `success` there too, as img2dataset does. Stats written before these names (`failures`, `started`,
/// `finished`) read too.
public struct BulkShardStats: Codable, Sendable, Equatable {
    /// The shard's number.
    public var shard: Int
    /// Rows run.
    public var count = 0
    /// Rows that gave an image.
    public var successes = 0
    /// Rows that failed before there was an image file (``BulkSampleRecord/Status/failedToDownload``).
    public var failedToDownload = 0
    /// Rows whose file did not decode or whose image was refused (``BulkSampleRecord/Status/failedToResize``).
    public var failedToResize = 0
    /// Rows per outcome: `success`, and each ``BulkFailure/code``.
    public var statusDict: [String: Int] = [:]
    /// Bytes of the saved images.
    public var bytes = 0
    /// Bytes of the downloaded files (every row that got one, failed later or not); 0 in stats written
    /// before it was recorded.
    public var bytesDownloaded = 0
    /// Seconds from opening the shard to writing its stats.
    public var duration = 0.0
    /// When the shard was opened, in seconds since 1970; nil in stats written before it was recorded.
    public var startTime: Double?
    /// When its stats were written, in seconds since 1970; nil in stats written before it was recorded.
    public var endTime: Double?

    /// Empty totals of shard `shard`.
    public init(shard: Int) { self.shard = shard }

    /// Failed rows per ``BulkFailure/code``: ``statusDict`` without `success`.
    public var failures: [String: Int] { statusDict.filter { $0.key != Self.success } }

    /// Counts one row, successful (nil) or failed with `failure`.
    mutating func tally(_ failure: BulkFailure?) {
        count += 1
        guard let failure else {
            successes += 1
            statusDict[Self.success, default: 0] += 1
            return
        }
        if failure.isResizeFailure { failedToResize += 1 } else { failedToDownload += 1 }
        statusDict[failure.code, default: 0] += 1
    }

    private static let success = "success"

    private enum CodingKeys: String, CodingKey {
        case shard, count, successes, bytes, duration
        case bytesDownloaded = "bytes_downloaded"
        case failedToDownload = "failed_to_download"
        case failedToResize = "failed_to_resize"
        case statusDict = "status_dict"
        case startTime = "start_time"
        case endTime = "end_time"
        // Stats written before img2dataset's names.
        case failures, started, finished
    }

    /// Reads stats in img2dataset's fields, or in the older ones (`failures`, `started`, `finished`).
    ///
    /// - Throws: `DecodingError` for a file that is not stats; ``BulkInputError`` for old stats whose
    ///   failure counts are negative or overflow an `Int`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        shard = try container.decodeIfPresent(Int.self, forKey: .shard) ?? -1
        count = try container.decode(Int.self, forKey: .count)
        successes = try container.decode(Int.self, forKey: .successes)
        bytes = try container.decodeIfPresent(Int.self, forKey: .bytes) ?? 0
        bytesDownloaded = try container.decodeIfPresent(Int.self, forKey: .bytesDownloaded) ?? 0
        duration = try container.decodeIfPresent(Double.self, forKey: .duration) ?? 0
        startTime =
            try container.decodeIfPresent(Double.self, forKey: .startTime)
            ?? container.decodeIfPresent(Double.self, forKey: .started)
        endTime =
            try container.decodeIfPresent(Double.self, forKey: .endTime)
            ?? container.decodeIfPresent(Double.self, forKey: .finished)
        if let statusDict = try container.decodeIfPresent([String: Int].self, forKey: .statusDict) {
            self.statusDict = statusDict
            failedToDownload = try container.decodeIfPresent(Int.self, forKey: .failedToDownload) ?? 0
            failedToResize = try container.decodeIfPresent(Int.self, forKey: .failedToResize) ?? 0
        } else {
            let failures = try container.decodeIfPresent([String: Int].self, forKey: .failures) ?? [:]
            statusDict = failures
            if successes != 0 { statusDict[Self.success] = successes }
            // The old file kept no stage: each code says where it failed. A count that overflows is a
            // damaged or forged file: ``BulkStatsTotals`` reports the error rather than passing over it.
            for (code, rows) in failures {
                let resize = BulkFailure(code: code).isResizeFailure
                let (sum, overflow) = (resize ? failedToResize : failedToDownload).addingReportingOverflow(rows)
                guard !overflow, rows >= 0 else { throw BulkInputError("counts out of range (\(rows))") }
                if resize { failedToResize = sum } else { failedToDownload = sum }
            }
        }
    }

    /// Writes img2dataset's fields and WebImage's `shard`, `bytes` and `bytes_downloaded`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(shard, forKey: .shard)
        try container.encode(count, forKey: .count)
        try container.encode(successes, forKey: .successes)
        try container.encode(failedToDownload, forKey: .failedToDownload)
        try container.encode(failedToResize, forKey: .failedToResize)
        try container.encode(statusDict, forKey: .statusDict)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(bytesDownloaded, forKey: .bytesDownloaded)
        try container.encode(duration, forKey: .duration)
        try container.encodeIfPresent(startTime, forKey: .startTime)
        try container.encodeIfPresent(endTime, forKey: .endTime)
    }
}
