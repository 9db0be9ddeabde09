import Foundation

/// Which URLs a downloader may fetch, by prefix: an image proxy's allowed sources (imgproxy's
/// `ALLOWED_SOURCES`), checked on the first URL and on every redirect hop.
///
/// Each prefix is parsed once into a scheme, a host, a port and a path, and a URL is matched on the same
/// parts of its parsed, normalised form, never on its text:
/// - the scheme and the port (the scheme's default when absent) must be equal;
/// - the host must be equal (any case; a trailing dot ignored), or, for a prefix host `*.example.com`,
///   end with `.example.com`;
/// - the path must start with the prefix's path on a segment boundary: `/img` matches `/img` and
///   `/img/a.jpg`, not `/imgs/a.jpg`; `/img/` matches only below `/img/`. Segments are compared
///   percent-decoded, after the URL's `.` and `..` segments were resolved as curl resolves them before
///   sending (RFC 3986), so `/img/../admin` is `/admin`;
/// - a URL with a user name or password never matches (`http://allowed.example@other.example/`), and
///   neither does one whose path hides a segment boundary or a dot segment in percent-encoding (`%2F`,
///   `%5C`, `%2E%2E`), which some origins decode after this check.
///
/// ```swift
/// let sources = try URLPrefixList(["https://images.example.com/uploads/", "https://*.cdn.example.net"])
/// sources.allows(URL(string: "https://images.example.com/uploads/a.jpg")!)            // true
/// sources.allows(URL(string: "https://images.example.com/uploads/../private.jpg")!)  // false
/// ```
public struct URLPrefixList: Sendable, Hashable, CustomStringConvertible {
    /// One parsed prefix.
    struct Prefix: Sendable, Hashable {
        var scheme: String
        /// Lowercased, without a trailing dot; without the `*.` of a wildcard.
        var host: String
        var matchesSubdomains: Bool
        var port: Int
        /// Percent-decoded segments the path must start with.
        var segments: [String]
        /// Whether the prefix's path ends with `/`: the URL's path must go on past `segments`.
        var needsMore: Bool
    }

    /// A prefix that cannot be parsed, and why.
    public struct InvalidPrefix: Error, Sendable, Hashable, CustomStringConvertible {
        /// The prefix as given.
        public var prefix: String
        /// What is wrong with it.
        public var reason: String

        /// "'…': reason".
        public var description: String { "'\(prefix)': \(reason)" }
    }

    let prefixes: [Prefix]
    /// The prefixes as given.
    public let texts: [String]

    /// Parses `prefixes`: each an absolute `http` or `https` URL with a host, optionally a port and a
    /// path, no user name, password, query or fragment. The host may start with `*.`.
    ///
    /// - Throws: `InvalidPrefix` naming the first prefix that is not one.
    public init(_ prefixes: [String]) throws(InvalidPrefix) {
        var parsed: [Prefix] = []
        for text in prefixes {
            parsed.append(try Self.parse(text))
        }
        self.prefixes = parsed
        self.texts = prefixes
    }

    /// Whether `url` starts with one of the prefixes (see the type's rules).
    public func allows(_ url: URL) -> Bool {
        guard let candidate = Self.candidate(url) else { return false }
        return prefixes.contains { prefix in
            guard prefix.scheme == candidate.scheme, prefix.port == candidate.port else { return false }
            if prefix.matchesSubdomains {
                guard candidate.host.hasSuffix("." + prefix.host) else { return false }
            } else {
                guard candidate.host == prefix.host else { return false }
            }
            guard candidate.segments.starts(with: prefix.segments) else { return false }
            return !prefix.needsMore || candidate.segments.count > prefix.segments.count
        }
    }

    /// The prefixes, comma-separated.
    public var description: String { texts.joined(separator: ", ") }

    // MARK: Parsing

    private static func parse(_ text: String) throws(InvalidPrefix) -> Prefix {
        func invalid(_ reason: String) -> InvalidPrefix { InvalidPrefix(prefix: text, reason: reason) }
        // `*` is not a URL character: it stands for a label, so parse with a placeholder label in its place.
        let wildcard = text.contains("://*.")
        let spelled = wildcard ? text.replacingOccurrences(of: "://*.", with: "://wildcard-label.") : text
        guard let components = URLComponents(string: spelled), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else {
            throw invalid("an allowed source is an absolute http:// or https:// URL prefix")
        }
        guard var host = components.host?.lowercased(), !host.isEmpty else { throw invalid("it has no host") }
        guard components.user == nil, components.password == nil else {
            throw invalid("a user name or password has no place in an allowed source")
        }
        guard components.query == nil, components.fragment == nil else {
            throw invalid("an allowed source is matched on scheme, host, port and path: no query or fragment")
        }
        guard !host.contains("*"), !(wildcard && host == "wildcard-label.") else {
            throw invalid("a wildcard is only '*.' at the start of the host")
        }
        if wildcard { host.removeFirst("wildcard-label.".count) }
        if host.hasSuffix(".") { host.removeLast() }
        let path = components.percentEncodedPath
        guard let segments = pathSegments(path.isEmpty ? "/" : path) else {
            throw invalid("its path has a '.' or '..' segment, or one hidden in percent-encoding")
        }
        let needsMore = path.hasSuffix("/") && !segments.isEmpty
        return Prefix(
            scheme: scheme, host: host, matchesSubdomains: wildcard, port: components.port ?? defaultPort(scheme),
            segments: segments, needsMore: needsMore)
    }

    private static func defaultPort(_ scheme: String) -> Int { scheme == "https" ? 443 : 80 }

    /// A URL's parts as they are matched; nil for one that never matches.
    private static func candidate(_ url: URL) -> (scheme: String, host: String, port: Int, segments: [String])? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let scheme = components.scheme?.lowercased(), var host = components.host?.lowercased(), !host.isEmpty,
            components.user == nil, components.password == nil
        else { return nil }
        if host.hasSuffix(".") { host.removeLast() }
        let path = components.percentEncodedPath
        guard let segments = pathSegments(removingDotSegments(path.isEmpty ? "/" : path)) else { return nil }
        return (scheme, host, components.port ?? defaultPort(scheme), segments)
    }

    /// The percent-decoded segments of a path without dot segments, the empty last one of a path ending in
    /// `/` dropped; nil when a segment is `.` or `..`, or decodes to one, or decodes to text with `/` or `\`.
    private static func pathSegments(_ path: String) -> [String]? {
        var segments: [String] = []
        for raw in path.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            guard let decoded = String(raw).removingPercentEncoding else { return nil }
            guard decoded != ".", decoded != "..", !decoded.contains("/"), !decoded.contains("\\") else { return nil }
            segments.append(decoded)
        }
        if segments.last == "" { segments.removeLast() }
        return segments
    }

    /// RFC 3986's remove_dot_segments (section 5.2.4) on a path starting with `/`: what curl sends for it.
    static func removingDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let input = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in input.enumerated() {
            let isLast = index == input.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/")
    }
}
