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
    /// - Throws: ``S3Error`` (``S3Error/Kind/configuration``) for an `s3://` address without a bucket.
    public static func parse(_ text: String) throws(S3Error) -> S3Location? {
        guard text.lowercased().hasPrefix("s3://") else { return nil }
        let rest = text.dropFirst(5)
        let bucket = String(rest.prefix { $0 != "/" })
        guard !bucket.isEmpty else {
            throw S3Error(.configuration, "'\(text)' names no bucket: write s3://bucket/key")
        }
        return S3Location(bucket: bucket, key: String(rest.dropFirst(bucket.count).drop { $0 == "/" }))
    }

    /// `s3://bucket/key`.
    public var description: String { "s3://\(bucket)/\(key)" }

    /// The key of `name` inside this prefix: `prefix/name`, or `name` when the prefix is empty.
    public func child(_ name: String) -> S3Location {
        let base = key.hasSuffix("/") || key.isEmpty ? key : key + "/"
        return S3Location(bucket: bucket, key: base + name)
    }
}
