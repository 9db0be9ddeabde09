import Crypto
import Foundation
import WebImageTransport

/// Signed GETs of objects, for a program that fetches by URL and header fields (the image proxy's
/// downloader): query-signed URLs (AWS Signature Version 4 in the query string, "presigned URLs"), valid for
/// `lifetime` seconds from their date (S3 allows at most 7 days), or the signing header fields of one GET
/// (`signingHeaders(for:date:)`), which every S3-compatible store takes.
///
/// Both cover the method, the path, the query and the signed header fields, with the payload unsigned
/// (`UNSIGNED-PAYLOAD`).
///
/// ```swift
/// let presigner = S3Presigner(configuration: try .fromEnvironment())
/// let url = try presigner.url(for: S3Location(bucket: "images", key: "cat.jpg"))
/// ```
public struct S3Presigner: Sendable {
    /// Whose credentials sign, where the store is, and the region.
    public let configuration: S3Configuration
    /// How long a URL stays valid, in seconds: 1…604,800. 300 by default.
    public var lifetime = 300

    /// A presigner for `configuration`.
    public init(configuration: S3Configuration) {
        self.configuration = configuration
    }

    /// The unsigned URL of `location` (the address the signed one adds its query to): path-style under a
    /// custom endpoint, virtual-hosted on AWS.
    ///
    /// - Throws: ``S3Error/Kind/configuration`` for a bucket name S3 does not allow (3 to 63 lowercase
    ///   letters, digits, `.` and `-`): a bucket becomes part of a host name, and nothing else may.
    public func objectURL(for location: S3Location) throws(S3Error) -> URL {
        guard Self.isValidBucket(location.bucket) else {
            throw S3Error(.configuration, "'\(S3Error.printable(location.bucket))' is not a valid S3 bucket name")
        }
        guard let url = URL(string: configuration.url(bucket: location.bucket, key: location.key)) else {
            throw S3Error(.configuration, "cannot make a URL for \(location)")
        }
        return url
    }

    /// `location`'s object URL, signed at `date`.
    public func url(for location: S3Location, date: Date = Date()) throws(S3Error) -> URL {
        try signed(try objectURL(for: location), date: date)
    }

    /// `url` (an unsigned object URL, without a query) with the signature's query added, signed at `date`.
    public func signed(_ url: URL, date: Date = Date()) throws(S3Error) -> URL {
        var (components, host) = try Self.parts(of: url)
        guard (1...604_800).contains(lifetime) else {
            throw S3Error(.configuration, "a presigned URL lives 1…604,800 seconds, not \(lifetime)")
        }
        let (day, time) = Self.timestamps(date)
        let scope = "\(day)/\(configuration.region)/s3/aws4_request"
        var query = [
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), ("X-Amz-Credential", "\(configuration.accessKeyID)/\(scope)"),
            ("X-Amz-Date", time), ("X-Amz-Expires", String(lifetime)), ("X-Amz-SignedHeaders", "host"),
        ]
        if let token = configuration.sessionToken { query.append(("X-Amz-Security-Token", token)) }
        let canonicalQuery = S3Configuration.query(query)
        let canonicalRequest = [
            "GET", Self.path(components), canonicalQuery, "host:\(host)", "", "host", Self.unsignedPayload,
        ].joined(separator: "\n")
        let signature = self.signature(of: canonicalRequest, day: day, time: time)
        components.percentEncodedQuery = canonicalQuery + "&X-Amz-Signature=" + signature
        guard let signed = components.url else {
            throw S3Error(.configuration, "cannot sign \(S3Error.printable(url.absoluteString))")
        }
        return signed
    }

    /// The header fields that sign a GET of `url` (an object URL without a query) at `date`:
    /// `Authorization`, `x-amz-date`, `x-amz-content-sha256` (`UNSIGNED-PAYLOAD`) and, with temporary
    /// credentials, `x-amz-security-token`. Some S3-compatible stores take only these, not a presigned URL.
    public func signingHeaders(for url: URL, date: Date = Date()) throws(S3Error) -> [(name: String, value: String)] {
        let (components, host) = try Self.parts(of: url)
        let (day, time) = Self.timestamps(date)
        var headers = [("host", host), ("x-amz-content-sha256", Self.unsignedPayload), ("x-amz-date", time)]
        if let token = configuration.sessionToken { headers.append(("x-amz-security-token", token)) }
        let names = headers.map(\.0).joined(separator: ";")
        let canonicalRequest =
            (["GET", Self.path(components), ""] + headers.map { "\($0.0):\($0.1)" }
            + ["", names, Self.unsignedPayload]).joined(separator: "\n")
        let signature = self.signature(of: canonicalRequest, day: day, time: time)
        let scope = "\(day)/\(configuration.region)/s3/aws4_request"
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(configuration.accessKeyID)/\(scope), SignedHeaders=\(names), "
            + "Signature=\(signature)"
        return [("Authorization", authorization)] + headers.dropFirst().map { (name: $0.0, value: $0.1) }
    }

    static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// `url`'s components and its `host` header (with a port that is not the scheme's default).
    private static func parts(of url: URL) throws(S3Error) -> (URLComponents, String) {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false), let host = components.host,
            !host.isEmpty, components.percentEncodedQuery == nil
        else {
            throw S3Error(.configuration, "cannot sign \(S3Error.printable(url.absoluteString))")
        }
        return (components, components.port.map { "\(host):\($0)" } ?? host)
    }

    private static func path(_ components: URLComponents) -> String {
        components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
    }

    /// SigV4's signature of `canonicalRequest`: the string to sign, with the key derived for the day,
    /// region and service.
    private func signature(of canonicalRequest: String, day: String, time: String) -> String {
        let scope = "\(day)/\(configuration.region)/s3/aws4_request"
        let stringToSign = [
            "AWS4-HMAC-SHA256", time, scope, Self.hex(SHA256.hash(data: Data(canonicalRequest.utf8))),
        ].joined(separator: "\n")
        var key = SymmetricKey(data: Data("AWS4\(configuration.secretAccessKey)".utf8))
        for part in [day, configuration.region, "s3", "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return Self.hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key))
    }

    /// Whether S3 allows `name` as a bucket: 3 to 63 of `a-z`, `0-9`, `.` and `-`, starting and ending with
    /// a letter or digit.
    public static func isValidBucket(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        func isAlphanumeric(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        guard (3...63).contains(bytes.count), let first = bytes.first, let last = bytes.last,
            isAlphanumeric(first), isAlphanumeric(last)
        else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }

    /// SigV4's `YYYYMMDD` and `YYYYMMDD'T'HHMMSS'Z'` of `date`, in UTC.
    static func timestamps(_ date: Date) -> (day: String, time: String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let day = String(format: "%04d%02d%02d", c.year ?? 1970, c.month ?? 1, c.day ?? 1)
        return (day, day + String(format: "T%02d%02d%02dZ", c.hour ?? 0, c.minute ?? 0, c.second ?? 0))
    }

    private static func hex(_ bytes: some Sequence<UInt8>) -> String {
        HexDigits.lowercase(bytes)
    }
}
