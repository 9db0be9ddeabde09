import Foundation
import WebImage
import WebImageObjectStore

/// A bulk run as `webimage bulk` describes it: the input, the output, and every choice of the run as a
/// plain value, checked by ``validate()`` and turned into the engine's ``BulkSettings`` (``settings()``),
/// columns (``columns``) and shard assignment (``assignment(environment:)``). ``open(environment:)`` stages
/// an `s3://` input or output, ``plan(in:)`` settles the plan, and
/// ``makeEngine(plan:assigned:in:retrying:)`` makes the engine, with a downloader these settings configure.
///
/// The defaults are `webimage bulk`'s (only public addresses are connected to), and the errors name its
/// options (`--concurrency must be 1…4096.`).
///
/// ```swift
/// var job = BulkJob(input: "urls.csv.gz", output: "dataset")
/// job.captionColumn = "caption"
/// job.resizeMode = .keepRatio
/// try job.validate()
/// let assignment = try job.assignment(environment: ProcessInfo.processInfo.environment)
/// let workspace = try await job.open()
/// defer { workspace.removeTemporaryFiles() }
/// let plan = try await job.plan(in: workspace)
/// let engine = try await job.makeEngine(plan: plan, assigned: plan.assigned(assignment), in: workspace)
/// let summary = try await engine.run()
/// ```
public struct BulkJob: Sendable {
    /// The formats a sample is encoded to; ``BulkJob/encoding`` nil keeps the downloaded bytes.
    public enum Encoding: String, Sendable, CaseIterable {
        /// JPEG at ``BulkJob/quality``, optionally with optimized Huffman tables.
        case jpeg
        /// WebP at ``BulkJob/quality``, or lossless.
        case webp
        /// PNG.
        case png
        /// AVIF at ``BulkJob/quality``.
        case avif
    }

    // MARK: Input and output

    /// The URL list: a `.txt`, `.csv`, `.tsv`, `.json` or `.jsonl` file (optionally `.gz`), or `.parquet`; a path or
    /// `s3://bucket/key`.
    public var input: String
    /// The output directory, or `s3://bucket/prefix`.
    public var output: String
    /// The shards' format; `.webdataset` by default.
    public var format: SampleOutputFormat = .webdataset
    /// Rows per shard, 1…1,000,000; 10,000 by default. An open shard keeps some hundred bytes per finished
    /// row until its files are written (``BulkShardRunner/maximumOpenShards`` are open at once).
    public var shardSize = 10_000
    /// The least digits of a shard's number in its files' names and its samples' keys (``BulkKeyFormat``,
    /// img2dataset's `oom_shard_count`), 1…12; 5 by default.
    public var shardDigits = 5
    /// The longest input line (a CSV record with its quoted line breaks) read; longer is an input error.
    public var maxLineBytes = TextRowReader.defaultMaxLineBytes
    /// The largest `s3://` input downloaded; ``S3Configuration``'s bound when nil.
    public var maxInputBytes: Int64?
    /// Seconds an object-store request may move under 1 KiB/s before it fails, 1…86,400; ``S3Configuration``'s
    /// when nil.
    public var objectStoreStallTimeout: Double?

    // MARK: Columns

    /// The column holding the URL; `url` when nil.
    public var urlColumn: String?
    /// The column holding the caption (each sample's `{key}.txt`); none by default.
    public var captionColumn: String?
    /// Other columns each record keeps; none of them may be a field of ``BulkSampleRecord``.
    public var savedColumns: [String] = []
    /// The column of regions to blur (``BulkColumns/boxes``); none by default.
    public var boxesColumn: String?
    /// The column of expected digests (``BulkColumns/verifyHash``); none by default.
    public var verifyHashColumn: String?

    // MARK: Images

    /// How an image meets the ``size`` box; nil keeps the decoded size. `.centerCrop` by default.
    public var resizeMode: BulkResize.Mode? = .centerCrop
    /// The resize box's side in pixels; 256 by default.
    public var size = 256
    /// Whether an image is never enlarged (``BulkResize/onlyIfBigger``); `false` by default.
    public var resizeOnlyIfBigger = false
    /// The samples' format; nil keeps the downloaded bytes (then ``resizeMode`` must be nil and there may be
    /// no ``boxesColumn``). `.jpeg` by default.
    public var encoding: Encoding? = .jpeg
    /// The quality of JPEG, WebP and AVIF, 1…100 (a lossless WebP's effort); 95 by default.
    public var quality = 95
    /// Whether WebP is lossless; only with `.webp`. `false` by default.
    public var lossless = false
    /// Whether JPEG's Huffman tables are made for each image; only with `.jpeg`. `false` by default.
    public var optimizesJPEGHuffmanTables = false
    /// ``BulkSettings/skipsReencoding``; needs an encoding. `false` by default.
    public var skipsReencoding = false
    /// ``BulkSettings/minimumSize``; 0 by default.
    public var minimumImageSize = 0
    /// ``BulkSettings/maximumArea``; no limit by default.
    public var maximumImageArea: Int?
    /// ``BulkSettings/maximumAspectRatio``, at least 1; no limit by default.
    public var maximumAspectRatio: Double?
    /// ``BulkSettings/allowsPartial``; `false` by default.
    public var allowsPartial = false
    /// ``BulkSettings/hashAlgorithm``; SHA-256 by default, nil for none.
    public var hashAlgorithm: BulkHashAlgorithm? = .sha256
    /// ``BulkSettings/extractsEXIF``; `true` by default.
    public var extractsEXIF = true
    /// ``BulkSettings/maxShardRetry``, at least 0; 1 by default.
    public var maxShardRetry = 1
    /// ``BulkSettings/deduplication``: its index is in the output (``BulkDeduplicationIndex``; for an
    /// `s3://` output, objects under the prefix: ``BulkDeduplication/exact`` only); none by default.
    public var deduplication: BulkDeduplication?
    /// ``BulkSettings/deduplicationThreshold``, 0…7; 4 by default.
    public var deduplicationThreshold = 4

    // MARK: Downloading

    /// Downloads at once, all hosts together, 1…4096; 64 by default.
    public var concurrency = 64
    /// Downloads at once per host; 8 by default.
    public var perHost = 8
    /// Retries of a timeout, a lost connection, a 5xx or a 429; 0 by default.
    public var retries = 0
    /// Seconds a whole download may take; 30 by default.
    public var timeout: Double = 30
    /// Seconds a download may receive nothing; 15 by default.
    public var stallTimeout: Double = 15
    /// The `User-Agent` sent; ``BulkDownloadSettings/defaultUserAgent`` by default.
    public var userAgent = BulkDownloadSettings.defaultUserAgent
    /// Added to the `User-Agent` as `(compatible; TOKEN)`, and the agent whose scoped `X-Robots-Tag`
    /// directives count; none by default.
    public var userAgentToken: String?
    /// The `X-Robots-Tag` directives that fail a row; ``BulkSettings``'s when nil, none when empty.
    public var disallowedHeaderDirectives: [String]?
    /// Whether `X-Robots-Tag` is ignored (the same as an empty ``disallowedHeaderDirectives``, which it
    /// excludes); `false` by default.
    public var ignoresRobotsTag = false
    /// Networks connected to besides public addresses, such as `10.1.0.0/16` or `::1/128`; none by default.
    public var allowedDestinations: [String] = []
    /// Whether every address is connected to, private and loopback ones included (it excludes
    /// ``allowedDestinations``); `false` by default.
    public var allowsPrivateDestinations = false
    /// ``BulkDownloadSettings/acceptsAnyCertificate``; `false` by default.
    public var acceptsAnyCertificate = false
    /// ``BulkDownloadSettings/dnsConcurrency``, 1…1024; nil by default (curl resolves).
    public var dnsConcurrency: Int?
    /// ``BulkDownloadSettings/resolver``: a DNS server's numeric address, with an optional port; nil by
    /// default.
    public var resolver: String?

    // MARK: Shards

    /// This process's index among ``shardCount`` processes; from the array job's environment when nil.
    public var shardIndex: Int?
    /// How many processes share the shards.
    public var shardCount: Int?
    /// Exactly these shards, whatever the index; nil to use the index.
    public var shards: [Int]?

    /// The largest ``shardSize``.
    public static let largestShardSize = 1_000_000

    /// A job reading `input` into `output`, every other choice at its default.
    public init(input: String, output: String) {
        self.input = input
        self.output = output
    }

    /// The columns the input is read with.
    public var columns: BulkColumns {
        BulkColumns(
            url: urlColumn ?? "url", caption: captionColumn, saved: savedColumns, boxes: boxesColumn,
            verifyHash: verifyHashColumn)
    }

    /// Checks every choice that needs no file: the settings, the destination networks, the shard list and
    /// the columns a `.txt` input cannot have.
    ///
    /// - Throws: ``BulkJobError`` naming the first choice that is wrong.
    public func validate() throws(BulkJobError) {
        _ = try settings()
        if let negative = shards?.first(where: { $0 < 0 }) {
            throw BulkJobError(option: "--shards", "--shards takes shard numbers, got '\(negative)'.")
        }
        try checkColumnsApply()
    }

    /// The engine's settings, the downloader's included.
    ///
    /// - Throws: ``BulkJobError`` naming the first choice that is wrong.
    public func settings() throws(BulkJobError) -> BulkSettings {
        try checkLimits()
        var settings = BulkSettings()
        settings.outputFormat = format
        settings.concurrency = concurrency
        settings.minimumSize = minimumImageSize
        settings.maximumArea = maximumImageArea
        settings.maximumAspectRatio = maximumAspectRatio
        settings.download.maximumConnectionsPerHost = perHost
        settings.download.retries = retries
        settings.download.timeout = timeout
        settings.download.stallTimeout = stallTimeout
        settings.download.userAgent = userAgent
        settings.download.acceptsAnyCertificate = acceptsAnyCertificate
        try applyDNSChoices(to: &settings)
        if let token = userAgentToken {
            let trimmed = token.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.contains(where: { $0 == ":" || $0 == ";" || $0.isNewline }) else {
                throw BulkJobError(
                    option: "--user-agent-token", "--user-agent-token takes a name without ':', ';' or line breaks.")
            }
            settings.userAgentToken = trimmed.lowercased()
            settings.download.userAgent = "\(userAgent) (compatible; \(trimmed))"
        }
        if let list = disallowedHeaderDirectives {
            guard !ignoresRobotsTag else {
                throw BulkJobError(
                    option: "--disallowed-header-directives",
                    "--disallowed-header-directives and --ignore-robots-tag exclude each other.")
            }
            settings.disallowedHeaderDirectives = Set(
                list.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty })
        } else if ignoresRobotsTag {
            settings.disallowedHeaderDirectives = []
        }
        settings.hashAlgorithm = hashAlgorithm
        settings.extractsEXIF = extractsEXIF
        settings.maxShardRetry = maxShardRetry
        settings.deduplication = deduplication
        settings.deduplicationThreshold = deduplicationThreshold
        if verifyHashColumn != nil {
            guard hashAlgorithm != nil else {
                throw BulkJobError(
                    option: "--verify-hash",
                    "--verify-hash checks the --compute-hash digest: it needs one other than none.")
            }
            settings.verifiesHash = true
        }
        settings.allowsPartial = allowsPartial
        settings.savedColumns = savedColumns
        // An input column never overwrites a field of the record: a `status` column would turn a failure
        // into a success, a `key` column would name the files a retry writes.
        if let clash = savedColumns.first(where: BulkSampleRecord.fieldNames.contains) {
            throw BulkJobError(
                option: "--save-cols",
                "--save-cols cannot keep '\(clash)': the record has a field of that name "
                    + "(\(BulkSampleRecord.fieldNames.sorted().joined(separator: ", "))).")
        }
        // Reprocessed webdataset shards keep their captions (each sample's txt, empty when it had none).
        settings.writesCaptions = captionColumn != nil || BulkInputFormat(path: input) == .webdataset
        try applyImageChoices(to: &settings)
        // The Parquet and TFRecord outputs hold the image beside the columns, under the format's name.
        if format == .parquet || format == .tfrecord, savedColumns.contains(settings.imageFieldName) {
            throw BulkJobError(
                option: "--save-cols",
                "--save-cols cannot keep '\(settings.imageFieldName)': --format \(format.rawValue) names the image so.")
        }
        settings.download.destinationPolicy = try destinationPolicy()
        return settings
    }

    /// The numeric bounds, in the order `webimage bulk` has always checked them.
    private func checkLimits() throws(BulkJobError) {
        func check(_ holds: Bool, _ option: String, _ message: String) throws(BulkJobError) {
            guard holds else { throw BulkJobError(option: option, message) }
        }
        try check(
            (1...BulkJob.largestShardSize).contains(shardSize), "--shard-size",
            "--shard-size must be between 1 and \(BulkJob.largestShardSize), got \(shardSize).")
        try check(
            (1...BulkKeyFormat.maximumShardDigits).contains(shardDigits), "--shard-digits",
            "--shard-digits must be between 1 and \(BulkKeyFormat.maximumShardDigits), got \(shardDigits).")
        try check((1...4096).contains(concurrency), "--concurrency", "--concurrency must be 1…4096.")
        try check(perHost >= 1, "--per-host", "--per-host must be at least 1.")
        try check(
            dnsConcurrency.map { (1...1024).contains($0) } ?? true, "--dns-concurrency",
            "--dns-concurrency must be 1…1024.")
        try check(maxShardRetry >= 0, "--max-shard-retry", "--max-shard-retry must not be negative.")
        try check(
            (0...PerceptualHashTable.maximumThreshold).contains(deduplicationThreshold), "--dedup-threshold",
            "--dedup-threshold must be 0…\(PerceptualHashTable.maximumThreshold) (bits of the 64-bit phash).")
        try check(retries >= 0, "--retries", "--retries must not be negative.")
        try check((1...100).contains(quality), "--quality", "--quality must be 1…100.")
        try check(size >= 1, "--size", "--size must be at least 1.")
        try check(timeout > 0, "--timeout", "--timeout must be positive.")
        try check(stallTimeout > 0, "--stall-timeout", "--stall-timeout must be positive.")
        try check(
            maxInputBytes.map { $0 >= 1 } ?? true, "--max-input-bytes", "--max-input-bytes must be at least 1.")
        try check(
            objectStoreStallTimeout.map { (1...86_400).contains($0) } ?? true, "--s3-stall-timeout",
            "--s3-stall-timeout must be 1…86400.")
        try check(maxLineBytes >= 1, "--max-line-bytes", "--max-line-bytes must be at least 1.")
        try check(!userAgent.isEmpty, "--user-agent", "--user-agent must not be empty.")
        try check(minimumImageSize >= 0, "--min-image-size", "--min-image-size must not be negative.")
        try check(
            maximumImageArea.map { $0 >= 1 } ?? true, "--max-image-area", "--max-image-area must be at least 1.")
        try check(
            maximumAspectRatio.map { $0 >= 1 } ?? true, "--max-aspect-ratio",
            "--max-aspect-ratio must be at least 1 (the longer side over the shorter).")
    }

    /// The resize and the encoder, and the choices that only make sense with one.
    private func applyImageChoices(to settings: inout BulkSettings) throws(BulkJobError) {
        let encodingName = encoding?.rawValue ?? "none"
        if resizeOnlyIfBigger && resizeMode == nil {
            throw BulkJobError(
                option: "--resize-only-if-bigger", "--resize-only-if-bigger needs a --resize-mode other than none.")
        }
        if let resizeMode {
            settings.resize = BulkResize(
                mode: resizeMode, size: size, onlyIfBigger: resizeOnlyIfBigger,
                borderColor: encoding == .jpeg ? .white : .clear)
        }
        if lossless && encoding != .webp {
            throw BulkJobError(
                option: "--lossless", "--lossless applies to --encode webp only, not \(encodingName).")
        }
        if optimizesJPEGHuffmanTables && encoding != .jpeg {
            throw BulkJobError(
                option: "--optimize-jpeg", "--optimize-jpeg applies to --encode jpeg only, not \(encodingName).")
        }
        if skipsReencoding && encoding == nil {
            throw BulkJobError(
                option: "--skip-reencode",
                "--skip-reencode applies to an --encode format; --encode none keeps every file.")
        }
        settings.skipsReencoding = skipsReencoding
        switch encoding {
        case .jpeg: settings.encoder = JPEGEncoder(quality: quality, optimizesHuffmanTables: optimizesJPEGHuffmanTables)
        case .webp: settings.encoder = WebPEncoder(quality: quality, lossless: lossless)
        case .png: settings.encoder = PNGEncoder()
        case .avif: settings.encoder = AVIFEncoder(quality: quality)
        case nil:
            guard resizeMode == nil else {
                throw BulkJobError(
                    option: "--encode", "--encode none keeps the downloaded bytes: it needs --resize-mode none.")
            }
            guard boxesColumn == nil else {
                throw BulkJobError(
                    option: "--encode", "--encode none keeps the downloaded bytes: --bbox-col needs an encoder.")
            }
        }
    }

    /// Public addresses only, plus ``allowedDestinations``' networks; every address with
    /// ``allowsPrivateDestinations``.
    private func destinationPolicy() throws(BulkJobError) -> DestinationPolicy {
        if let invalid = allowedDestinations.first(where: { !DestinationPolicy.isValidNetwork($0) }) {
            throw BulkJobError(
                option: "--allow-destination",
                "--allow-destination takes a network such as 10.1.0.0/16 or ::1/128, got '\(invalid)'.")
        }
        guard !allowsPrivateDestinations else {
            guard allowedDestinations.isEmpty else {
                throw BulkJobError(
                    option: "--allow-destination",
                    "--allow-destination and --allow-private-destinations exclude each other.")
            }
            return .allowAll
        }
        return DestinationPolicy.publicOnly.allowing(allowedDestinations)
    }

    /// `--dns-concurrency` and `--resolver`, the latter checked.
    private func applyDNSChoices(to settings: inout BulkSettings) throws(BulkJobError) {
        settings.download.dnsConcurrency = dnsConcurrency
        guard let resolver else { return }
        guard DNSClient(server: resolver) != nil else {
            throw BulkJobError(
                option: "--resolver",
                "--resolver takes a DNS server's numeric address and an optional port (127.0.0.1, 10.0.0.2:5353, "
                    + "[::1]:53), got '\(resolver.prefix(100))'.")
        }
        settings.download.resolver = resolver
    }

    /// A URL list (`.txt`) has no columns: a column named for it would be ignored, so it is refused.
    private func checkColumnsApply() throws(BulkJobError) {
        guard BulkInputFormat(fileName: input) == .txt else { return }
        let named: [(String, Bool)] = [
            ("--url-col", urlColumn != nil), ("--caption-col", captionColumn != nil),
            ("--save-cols", !savedColumns.isEmpty), ("--bbox-col", boxesColumn != nil),
            ("--verify-hash", verifyHashColumn != nil),
        ]
        let given = named.filter(\.1).map(\.0)
        guard let first = given.first else { return }
        throw BulkJobError(
            option: first,
            "\(given.joined(separator: ", ")) name\(given.count == 1 ? "s" : "") a column, and a .txt input has "
                + "none (one URL per line): use a .csv, .tsv, .json, .jsonl or .parquet input.")
    }
}

/// A choice of a ``BulkJob`` that is wrong before any file is read: a value out of range, two choices that
/// exclude each other. No retry fixes it (`webimage bulk` exits with 2 and prints ``description``).
public struct BulkJobError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `webimage bulk` option of the choice, such as `--concurrency`.
    public let option: String
    /// The sentence that says what is wrong, naming the option.
    public let description: String

    /// The error of `option`, saying `description`.
    public init(option: String, _ description: String) {
        self.option = option
        self.description = description
    }
}
