import Foundation

/// The metadata of one input row's outcome: a line of the shard's jsonl, the `{key}.json` beside a saved
/// image, and a row of the shard's Parquet file. Every sample writer writes this one structure.
///
/// Its fields are img2dataset's (`key`, `url`, `status`, `error_message`, `caption`, `width`, `height`,
/// `original_width`, `original_height`, the hash named after its algorithm, and the kept columns), so
/// readers written for img2dataset's output read it; WebImage's own fields (`error_code`, `ms`, `attempts`)
/// use names img2dataset does not. Its JSON has every field, `null` when absent, plus one field per kept
/// column (`--save-cols`), and sorted keys.
public struct BulkSampleRecord: Sendable, Equatable, Codable {
    /// Whether the row gave an image, and if not, where it failed: img2dataset's three statuses.
    public enum Status: String, Sendable, Codable {
        /// An image was saved.
        case success
        /// No image file: the URL, the connection, the server, the robots tag or the digest (see
        /// ``BulkSampleRecord/errorCode``).
        case failedToDownload = "failed_to_download"
        /// A file that did not decode, or an image the filters refused or the encoder failed on.
        case failedToResize = "failed_to_resize"

        /// The status of a row that failed with `failure`, or succeeded (nil).
        public init(failure: BulkFailure?) {
            guard let failure else {
                self = .success
                return
            }
            self = failure.isResizeFailure ? .failedToResize : .failedToDownload
        }
    }

    /// The sample key, which names its files: shard and row as img2dataset writes them (``BulkKeyFormat``).
    public var key: String
    /// The input's URL text as given, a password in it written as `***`.
    public var url: String
    /// Whether the row gave an image.
    public var status: Status
    /// What went wrong, in words (`error_message`); nil on success.
    public var errorMessage: String?
    /// Why the row has no image (``BulkFailure/code``); nil on success.
    public var errorCode: String?
    /// The caption column's value, when there is one.
    public var caption: String?
    /// Milliseconds the row took, download and processing.
    public var milliseconds: Int
    /// Download attempts made (more than 1 after retries).
    public var attempts: Int
    /// The saved image's width, after resizing.
    public var width: Int?
    /// The saved image's height, after resizing.
    public var height: Int?
    /// The downloaded image's width.
    public var originalWidth: Int?
    /// The downloaded image's height.
    public var originalHeight: Int?
    /// The algorithm of ``hash``, whose name is its field (`md5`, `sha256`, `sha512`); nil for no hash
    /// field (`--compute-hash none`).
    public var hashAlgorithm: BulkHashAlgorithm?
    /// The digest of the downloaded file (not of the saved, re-encoded image: img2dataset's, so it can be
    /// checked against a dataset's own hash column), lowercase hex; nil on failure.
    public var hash: String?
    /// Whether the record has img2dataset's `exif` field (``BulkSettings/extractsEXIF``).
    public var recordsEXIF: Bool
    /// The downloaded file's EXIF as img2dataset writes it (``EXIFSummary``): a JSON object's text, `{}`
    /// without EXIF; nil on failure, or where img2dataset's reader would fail.
    public var exif: String?
    /// Whether the record has the `phash` field (``BulkDeduplication/phash``).
    public var recordsPHash: Bool
    /// The image's 64-bit perceptual hash (``PerceptualHash``) as 16 hex digits, a duplicate's included;
    /// nil when no image was decoded.
    public var phash: String?
    /// The kept columns (`--save-cols`), in their order.
    public var saved: [BulkColumnValue]

    /// The field names of the record itself, every hash algorithm's and `exif` included; a kept column may
    /// not use one of them.
    public static let fieldNames: Set<String> = Set(
        Field.allCases.filter { $0 != .hash }.map(\.rawValue) + BulkHashAlgorithm.allCases.map(\.rawValue))

    /// The record's own fields, in the order a Parquet file's columns list them; ``hash`` is named after
    /// its algorithm.
    enum Field: String, CaseIterable {
        case key, url, status
        case errorMessage = "error_message"
        case errorCode = "error_code"
        case caption
        case milliseconds = "ms"
        case attempts, width, height
        case originalWidth = "original_width"
        case originalHeight = "original_height"
        case exif
        case phash
        case hash
    }

    /// A record of every field; see each property.
    public init(
        key: String, url: String, status: Status, errorMessage: String? = nil, errorCode: String? = nil,
        caption: String? = nil, milliseconds: Int = 0, attempts: Int = 1, width: Int? = nil, height: Int? = nil,
        originalWidth: Int? = nil, originalHeight: Int? = nil, hashAlgorithm: BulkHashAlgorithm? = .sha256,
        hash: String? = nil, recordsEXIF: Bool = false, exif: String? = nil, recordsPHash: Bool = false,
        phash: String? = nil, saved: [BulkColumnValue] = []
    ) {
        self.key = key
        self.url = url
        self.status = status
        self.errorMessage = errorMessage
        self.errorCode = errorCode
        self.caption = caption
        self.milliseconds = milliseconds
        self.attempts = attempts
        self.width = width
        self.height = height
        self.originalWidth = originalWidth
        self.originalHeight = originalHeight
        self.hashAlgorithm = hashAlgorithm
        self.hash = hash
        self.recordsEXIF = recordsEXIF
        self.exif = exif
        self.recordsPHash = recordsPHash
        self.phash = phash
        self.saved = saved
    }

    /// The failure ``errorCode`` names; nil on success.
    public var failure: BulkFailure? { errorCode.map(BulkFailure.init(code:)) }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Reads a record; every field not of the record's own is a kept column, in key order.
    ///
    /// Records of runs before the img2dataset names read too: `status` `failed` (then ``errorCode`` says
    /// which stage) and `error` for `error_message`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        func field<T: Decodable>(_ field: Field, _ type: T.Type) throws -> T? {
            try container.decodeIfPresent(type, forKey: Key(field.rawValue))
        }
        key = try field(.key, String.self) ?? ""
        url = try field(.url, String.self) ?? ""
        errorCode = try field(.errorCode, String.self)
        let statusText = try field(.status, String.self)
        // An old record's `failed` takes its stage from the error code.
        status =
            statusText.flatMap(Status.init(rawValue:))
            ?? Status(failure: BulkFailure(code: errorCode ?? "unknown"))
        // An old record's message is its `error`; in a new one `error` can only be a kept column.
        let legacyMessage = !container.contains(Key(Field.errorMessage.rawValue)) && container.contains(Key("error"))
        errorMessage =
            try legacyMessage
            ? container.decodeIfPresent(String.self, forKey: Key("error")) : field(.errorMessage, String.self)
        caption = try field(.caption, String.self)
        milliseconds = try field(.milliseconds, Int.self) ?? 0
        attempts = try field(.attempts, Int.self) ?? 1
        width = try field(.width, Int.self)
        height = try field(.height, Int.self)
        originalWidth = try field(.originalWidth, Int.self)
        originalHeight = try field(.originalHeight, Int.self)
        hashAlgorithm = BulkHashAlgorithm.allCases.first { container.contains(Key($0.rawValue)) }
        hash = try hashAlgorithm.flatMap { try container.decodeIfPresent(String.self, forKey: Key($0.rawValue)) }
        recordsEXIF = container.contains(Key(Field.exif.rawValue))
        exif = try field(.exif, String.self)
        recordsPHash = container.contains(Key(Field.phash.rawValue))
        phash = try field(.phash, String.self)
        saved = try container.allKeys.filter {
            !Self.fieldNames.contains($0.stringValue) && !(legacyMessage && $0.stringValue == "error")
        }
        .sorted { $0.stringValue < $1.stringValue }
        .map { BulkColumnValue(name: $0.stringValue, value: try container.decode(BulkValue.self, forKey: $0)) }
    }

    /// Writes every field (`null` when absent) and the kept columns.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        func put<T: Encodable>(_ value: T?, _ field: Field) throws {
            if let value {
                try container.encode(value, forKey: Key(field.rawValue))
            } else {
                try container.encodeNil(forKey: Key(field.rawValue))
            }
        }
        try put(key, .key)
        try put(url, .url)
        try put(status, .status)
        try put(errorMessage, .errorMessage)
        try put(errorCode, .errorCode)
        try put(caption, .caption)
        try put(milliseconds, .milliseconds)
        try put(attempts, .attempts)
        for column in saved { try container.encode(column.value, forKey: Key(column.name)) }
        try put(width, .width)
        try put(height, .height)
        try put(originalWidth, .originalWidth)
        try put(originalHeight, .originalHeight)
        if recordsEXIF { try put(exif, .exif) }
        if recordsPHash { try put(phash, .phash) }
        if let hashAlgorithm {
            try container.encode(hash, forKey: Key(hashAlgorithm.rawValue))
        }
    }

    /// The record as one line of JSON (sorted keys, slashes unescaped), without the line break.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
