import Foundation

/// Where the object store is and who signs the requests: read from the standard AWS variables, as the
/// AWS CLI and SDKs read them.
///
/// - `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (both required) and `AWS_SESSION_TOKEN` (temporary
///   credentials, sent as `x-amz-security-token`);
/// - `AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`;
/// - `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`: another S3-compatible store (MinIO, Ceph, Cloudflare R2, Google Cloud Storage's
///   interoperability API), addressed path-style (`ENDPOINT/bucket/key`), which such stores all accept.
///   Without it, AWS itself, virtual-hosted style (`https://bucket.s3.REGION.amazonaws.com/key`);
/// - `AWS_MAX_ATTEMPTS`: ``maximumAttempts`` (1 to 20), as the AWS SDKs read it.
///
/// A store is not trusted to end what it starts: a download stops at ``maximumDownloadBytes`` (16 GiB by
/// default), any request that moves fewer than ``lowSpeedLimit`` bytes a second (1 KiB) for
/// ``stallTimeout`` seconds (60) fails as a network error, and a listing ends with an error at a repeated
/// continuation token or after ``maximumListPages`` pages (10,000, ten million keys).
///
/// Requests are signed with AWS Signature Version 4 by libcurl (`CURLOPT_AWS_SIGV4`).
public struct S3Configuration: Sendable {
    /// The access key id.
    public var accessKeyID: String
    /// The secret access key.
    public var secretAccessKey: String
    /// The session token of temporary credentials; nil for long-term keys.
    public var sessionToken: String?
    /// The region the requests are signed for; `us-east-1` by default.
    public var region: String
    /// A custom endpoint (`http://127.0.0.1:9000`), addressed path-style; nil for AWS.
    public var endpoint: URL?
    /// Objects up to this size go up in one PUT; larger ones in parts of ``partSize``. 16 MiB by default.
    public var multipartThreshold = 16 << 20
    /// The size of each part of a multipart upload (S3 wants at least 5 MiB but for the last); 16 MiB by
    /// default. One part is in memory at a time.
    public var partSize = 16 << 20
    /// Attempts of a request that fails with 500, 502, 503, 504 or a network error; 4 by default. The
    /// waits between them double from ``retryDelay``.
    public var maximumAttempts = 4
    /// The wait before the second attempt, in seconds; 0.25 by default.
    public var retryDelay = 0.25
    /// Seconds one request may take; 600 by default (a 16 MiB part over a slow link).
    public var requestTimeout = 600.0
    /// Seconds to connect; 15 by default.
    public var connectTimeout = 15.0
    /// A request that moves fewer than ``lowSpeedLimit`` bytes a second, in either direction, for this many
    /// seconds fails as a ``S3Error/Kind/network`` error (and is tried again); 60 by default. A store that
    /// trickles an answer then holds a run for minutes, not for ``requestTimeout`` per attempt.
    public var stallTimeout = 60.0
    /// The speed, in bytes a second, under which ``stallTimeout`` counts; 1,024 by default.
    public var lowSpeedLimit = 1024
    /// The largest object ``S3Client/download(_:to:)`` writes to a file; 16 GiB by default. A larger
    /// object (by its `Content-Length`, or as its bytes arrive) is a ``S3Error/Kind/tooLarge`` error and
    /// its partial file is removed, so an endless answer cannot fill the disk.
    public var maximumDownloadBytes: Int64 = 16 << 30
    /// The most ListObjectsV2 pages one listing reads (each of at most 1,000 keys); 10,000 by default.
    /// A listing with more pages, or whose store repeats a continuation token, is a
    /// ``S3Error/Kind/badResponse`` instead of a loop that does not end.
    public var maximumListPages = 10_000
    /// The largest answer kept in memory (listings, errors, small objects); 16 MiB by default. A larger
    /// one is a ``S3Error/Kind/badResponse``.
    public var maximumResponseBytes = 16 << 20

    /// The configuration as given.
    public init(
        accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil, region: String = "us-east-1",
        endpoint: URL? = nil
    ) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.region = region
        self.endpoint = endpoint
    }

    /// The configuration the AWS variables of `environment` give.
    ///
    /// - Throws: ``S3Error/Kind/configuration`` without credentials, or with an endpoint that is not an
    ///   http(s) URL.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(S3Error) -> S3Configuration {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        guard let key = value("AWS_ACCESS_KEY_ID"), let secret = value("AWS_SECRET_ACCESS_KEY") else {
            throw S3Error(
                .configuration,
                "s3:// needs credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN "
                    + "for temporary ones)")
        }
        var endpoint: URL?
        // The S3-specific variable wins over the general one, as in the AWS SDKs.
        if let text = value("AWS_ENDPOINT_URL_S3") ?? value("AWS_ENDPOINT_URL") {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                url.host?.isEmpty == false
            else {
                throw S3Error(
                    .configuration, "AWS_ENDPOINT_URL must be an http(s) URL, got '\(S3Error.printable(text))'")
            }
            endpoint = url
        }
        var attempts: Int?
        if let text = value("AWS_MAX_ATTEMPTS") {
            guard let number = Int(text), (1...20).contains(number) else {
                throw S3Error(
                    .configuration, "AWS_MAX_ATTEMPTS must be a whole number 1…20, got '\(S3Error.printable(text))'")
            }
            attempts = number
        }
        let region = value("AWS_REGION") ?? value("AWS_DEFAULT_REGION") ?? "us-east-1"
        guard region.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
            throw S3Error(
                .configuration, "AWS_REGION must be a region name such as eu-west-1, got '\(S3Error.printable(region))'"
            )
        }
        var configuration = S3Configuration(
            accessKeyID: key, secretAccessKey: secret, sessionToken: value("AWS_SESSION_TOKEN"), region: region,
            endpoint: endpoint)
        if let attempts { configuration.maximumAttempts = attempts }
        return configuration
    }

    /// The URL of `key` in `bucket` (percent-encoded as SigV4 canonicalises it), with `query` (already
    /// encoded, its names sorted).
    func url(bucket: String, key: String, query: String = "") -> String {
        let path = "/" + Self.encode(key, keepingSlashes: true)
        let suffix = query.isEmpty ? "" : "?" + query
        if let endpoint {
            var base = endpoint.absoluteString
            while base.hasSuffix("/") { base.removeLast() }
            // A bucket's own address (a listing) has no trailing slash: `ENDPOINT/bucket?list-type=2`.
            let bucketPath = "/" + Self.encode(bucket, keepingSlashes: false)
            return base + bucketPath + (key.isEmpty ? "" : path) + suffix
        }
        // A bucket name with a dot does not match the certificate's `*.s3.REGION.amazonaws.com`: AWS
        // addresses such a bucket path-style, as its SDKs do.
        if bucket.contains(".") {
            return "https://s3.\(region).amazonaws.com/\(Self.encode(bucket, keepingSlashes: false))"
                + (key.isEmpty ? "" : path) + suffix
        }
        return "https://\(bucket).s3.\(region).amazonaws.com" + path + suffix
    }

    /// SigV4's URI encoding: every byte but the unreserved characters (`A-Z a-z 0-9 - . _ ~`), and `/`
    /// in a path, as `%XX`.
    static func encode(_ text: String, keepingSlashes: Bool) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepingSlashes:
                result += "/"
            default:
                result += String(format: "%%%02X", byte)
            }
        }
        return result
    }

    /// A query string of `items`, encoded and sorted by name, as SigV4's canonical request has it (so
    /// libcurl's signature matches whatever order it canonicalises in).
    static func query(_ items: [(String, String)]) -> String {
        items.map { (encode($0.0, keepingSlashes: false), encode($0.1, keepingSlashes: false)) }
            .sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }
}
