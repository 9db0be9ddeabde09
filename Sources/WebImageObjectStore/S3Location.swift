import Crypto
import Foundation
import WebImageTransport

/// An object, or a prefix of objects, in a bucket: `s3://bucket/key`.
public struct S3Location: Sendable, Equatable, CustomStringConvertible {
    /// The bucket's name.
    public var bucket: String
    /// The key (or the prefix), without a leading slash; may be empty.
    public var key: String

    /// `bucket` and `key` as they are.
    public init(bucket: String, key: String) {
        self.bucket = bucket
        self.key = key
    }

    /// Parses `s3://bucket/key`; nil when `text` does not start with `s3://`.
    ///
    /// A key or prefix with a `.` or `..` segment (`s3://data/../other/`, `s3://data/dir/./in.csv`) is
    /// refused: S3 keeps such a key as written, but most tools (and HTTP libraries that normalise paths)
    /// read it as another object or another bucket, so it is far more often a mistake than a name.
    ///
    /// - Throws: ``S3Error`` (``S3Error/Kind/configuration``) for an `s3://` address without a bucket, or
    ///   with a `.` or `..` segment.
    public static func parse(_ text: String) throws(S3Error) -> S3Location? {
        guard text.lowercased().hasPrefix("s3://") else { return nil }
        let rest = text.dropFirst(5)
        let bucket = String(rest.prefix { $0 != "/" })
        guard !bucket.isEmpty else {
            throw S3Error(.configuration, "'\(S3Error.printable(text))' names no bucket: write s3://bucket/key")
        }
        let location = S3Location(bucket: bucket, key: String(rest.dropFirst(bucket.count).drop { $0 == "/" }))
        if let segment = location.dotSegment {
            throw S3Error(
                .configuration,
                "'\(S3Error.printable(text))' has a '\(segment)' segment: an s3:// location names its bucket and key "
                    + "as written, without '.' or '..' (write the key the object has)")
        }
        return location
    }

    /// `s3://bucket/key`.
    public var description: String { "s3://\(bucket)/\(key)" }

    /// The key of `name` inside this prefix: `prefix/name`, or `name` when the prefix is empty.
    public func child(_ name: String) -> S3Location {
        let base = key.hasSuffix("/") || key.isEmpty ? key : key + "/"
        return S3Location(bucket: bucket, key: base + name)
    }

    /// A name for a local copy of the object: the SHA-256 of the bucket and key in hex, then the key's
    /// extension when it is a short one (`.csv.gz`, `.parquet`), which says the input's format. Never
    /// the key itself: a key's last segment may be over the 255 bytes a file name may have, or be `.`.
    public var localFileName: String {
        let digest = HexDigits.lowercase(SHA256.hash(data: Data((bucket + "/" + key).utf8)))
        let last = key.split(separator: "/").last.map(String.init) ?? ""
        func isExtension(_ text: Substring) -> Bool {
            (1...10).contains(text.utf8.count) && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
        var parts = last.split(separator: ".", omittingEmptySubsequences: false).dropFirst().suffix(2)
        // `.csv.gz`: the compression's extension and the format's; else only the last.
        if parts.count == 2, parts.last?.lowercased() != "gz" { parts = parts.suffix(1) }
        guard !parts.isEmpty, parts.allSatisfy(isExtension) else { return digest }
        return digest + "." + parts.joined(separator: ".")
    }

    /// The first `.` or `..` segment of the bucket or the key; nil when there is none.
    var dotSegment: String? {
        if bucket == "." || bucket == ".." { return bucket }
        return key.split(separator: "/", omittingEmptySubsequences: false).first { $0 == "." || $0 == ".." }
            .map(String.init)
    }
}
