import Foundation

/// What an `ImageProxy` accepts and how far it goes for one request. The safe choices are the defaults:
/// signatures required, private and loopback sources refused, sources and results bounded.
///
/// ```swift
/// var configuration = ImageProxyConfiguration()
/// configuration.signingKeys = [SigningKey(hexKey: key, hexSalt: salt)].compactMap { $0 }
/// configuration.allowedSources = ["https://images.example.com/"]
/// ```
public struct ImageProxyConfiguration: Sendable {
    // MARK: Signatures

    /// The key and salt pairs a signature may be made with (several while keys rotate). Empty by default.
    public var signingKeys: [SigningKey] = []
    /// Whether `insecure` in the signature segment is accepted instead of a signature: for local
    /// development only. `false` by default.
    public var allowsUnsigned = false

    // MARK: Sources

    /// URL prefixes a source must start with (imgproxy's `ALLOWED_SOURCES`); a source matching none is
    /// refused with 403. Empty (every source) by default.
    public var allowedSources: [String] = []
    /// Networks (CIDR) the proxy may fetch from besides public addresses; everything private, loopback
    /// and link-local is refused otherwise (`DestinationPolicy.publicOnly`). Empty by default.
    public var allowedDestinations: [String] = []
    /// The largest source body in bytes (`ImageDownloaderConfig.maximumResponseSize`). 32 MiB by default.
    public var maximumSourceBytes: Int64 = 32 << 20
    /// The most pixels a source may declare (`ImageDownloaderConfig.maximumImagePixels`). 16.8 million
    /// (imgproxy's default) by default.
    public var maximumSourcePixels = 16_800_000
    /// The most frames an animated source may have; only the first is used. 256 by default.
    public var maximumAnimationFrames = 256

    // MARK: Requests

    /// How long one request may take, fetch, decode, resize and encode together, before it is answered
    /// with 504. 30 seconds by default.
    public var requestDeadline: Duration = .seconds(30)
    /// The largest width or height a result may be asked for (after `dpr`). 8,192 by default.
    public var maximumResultDimension = 8192
    /// `Cache-Control: public, max-age=` this many seconds. One year by default.
    public var cacheMaxAge = 31_536_000

    /// The defaults.
    public init() {}
}
