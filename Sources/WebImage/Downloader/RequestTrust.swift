import Foundation

/// Everything about a request that shapes the bytes a server sends, or how far they may be trusted:
/// whether TLS is verified, whether cookies are sent and stored, the credentials, and every header field
/// after the request modifier.
///
/// Two requests for one URL share a transfer, and a decoded image is served from the image cache, only
/// when their trust is equal (README, "Security model"). Otherwise a strict caller could receive bytes an insecure
/// caller fetched without checking the certificate, or a caller without cookies could be handed the
/// image a signed-in caller's cookies unlocked.
struct RequestTrust: Hashable, Sendable {
    /// `false` with `allowInvalidSSLCertificates`.
    var verifiesTLS: Bool
    /// `.handleCookies`.
    var handlesCookies: Bool
    /// The user name and password curl may send after a 401, or nil: those written into the URL, else
    /// `config.username` and `config.password`.
    var credentials: Credentials?
    /// The header fields sent, names lowercased, sorted by name (values in their order), so the order
    /// in which they were set does not split otherwise equal requests.
    var headers: [HTTPHeaders.Field]

    struct Credentials: Hashable, Sendable {
        var user: String
        var password: String
    }

    init(
        request: ImageDownloadRequest, options: ImageDownloaderOptions, config: ImageDownloaderConfig,
        urlCredentials: Credentials? = nil
    ) {
        verifiesTLS = !options.contains(.allowInvalidSSLCertificates)
        handlesCookies = options.contains(.handleCookies)
        credentials = urlCredentials ?? config.username.map { Credentials(user: $0, password: config.password ?? "") }
        headers = request.headers.fields
            .map { HTTPHeaders.Field(name: $0.name.lowercased(), value: $0.value) }
            .enumerated()
            .sorted { ($0.element.name, $0.offset) < ($1.element.name, $1.offset) }
            .map(\.element)
    }

    /// Whether a request of this trust may read and write the caches every downloader and process of the
    /// user shares: the HTTP cache and the processed-image cache. Not when its answer may depend on who
    /// asks (credentials, cookies, an `Authorization`, `Proxy-Authorization` or `Cookie` field, a field of
    /// `config.secretHeaderFields` such as an API key) or its bytes were not verified (TLS checks off); nor
    /// under a destination policy that refuses anything or a list of allowed URLs, since an answer stored by
    /// a looser downloader (from a private address, or after a redirect elsewhere) would be served without a
    /// connection or redirect for them to judge.
    func allowsSharedCaches(
        secretHeaderFields: SecretHeaderFields, destinationPolicy: DestinationPolicy, allowedURLs: URLPrefixList? = nil
    ) -> Bool {
        destinationPolicy.allowsEverything && allowedURLs == nil && verifiesTLS && !handlesCookies
            && credentials == nil
            && !headers.contains { field in
                Self.identifyingFields.contains(field.name) || secretHeaderFields.contains(field.name)
            }
    }

    /// Fields that say who is asking, whatever `secretHeaderFields` holds (names lowercased).
    private static let identifyingFields: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// The trust as text for the in-memory image-cache key: exact (no hashing, so two different trusts
    /// never share a key). It holds the same secrets the configuration already holds in this process and
    /// is never written anywhere.
    var cacheKeyComponent: String {
        var text = "tls=\(verifiesTLS ? 1 : 0);cookies=\(handlesCookies ? 1 : 0)"
        if let credentials { text += ";user=\(credentials.user.count):\(credentials.user)\(credentials.password)" }
        for field in headers { text += ";\(field.name.count):\(field.name)=\(field.value.count):\(field.value)" }
        return text
    }
}

/// The URL → operation table's key: one live operation per URL *and* trust *and* body limit.
struct MergeKey: Hashable, Sendable {
    var url: URL
    var trust: RequestTrust
    /// The transfer's body limit (`ImageDownloadContext.maximumResponseSize` under the configuration's): a
    /// transfer stopped at one caller's limit must not fail another's.
    var maximumResponseSize: Int64 = .max
}
