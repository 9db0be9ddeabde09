/// Which header fields carry a secret: `ImageDownloaderConfig.secretHeaderFields`, read once.
///
/// An entry is a field name, or a pattern with `*` at either end: `*token*` is any name containing
/// `token`, `x-goog-*` any name starting with `x-goog-`, `*-key` any name ending in `-key`. Names and
/// entries compare case-insensitively. Both rules that keep a secret where it belongs ask this one list:
/// the redirect rule (a secret field goes to the request's own origin only) and the HTTP cache rule (a
/// request that sends one neither reads nor writes the shared cache).
package struct SecretHeaderFields: Sendable, Hashable {
    private var names: Set<String> = []
    private var fragments: Set<String> = []
    private var prefixes: Set<String> = []
    private var suffixes: Set<String> = []

    package init(_ entries: Set<String>) {
        for entry in entries.map({ $0.lowercased() }) {
            let leading = entry.hasPrefix("*")
            let trailing = entry.count > 1 && entry.hasSuffix("*")
            let core = String(entry.dropFirst(leading ? 1 : 0).dropLast(trailing ? 1 : 0))
            guard !core.isEmpty else { continue }  // "*" alone would make every field a secret: ignored
            switch (leading, trailing) {
            case (true, true): fragments.insert(core)
            case (false, true): prefixes.insert(core)
            case (true, false): suffixes.insert(core)
            case (false, false): names.insert(core)
            }
        }
    }

    /// The default entries (lowercased), also `ImageDownloaderConfig.defaultSecretHeaderFields`.
    package static let defaultEntries: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "x-api-key", "x-auth-token", "x-amz-security-token",
        "x-goog-api-key", "*token*", "*secret*", "*api-key*", "*session*",
    ]

    /// The default list.
    package static let `default` = SecretHeaderFields(defaultEntries)

    /// Whether the field `name` carries a secret.
    package func contains(_ name: String) -> Bool {
        let name = name.lowercased()
        return names.contains(name) || fragments.contains { Self.bytes(of: name, contain: $0) }
            || prefixes.contains { name.hasPrefix($0) } || suffixes.contains { name.hasSuffix($0) }
    }

    /// Whether `fragment` (not empty) occurs in `name`, byte by byte. Every request asks `contains` for each
    /// of its fields, and Foundation's `String.contains(_:)` costs about a microsecond a call.
    private static func bytes(of name: String, contain fragment: String) -> Bool {
        var name = name
        var fragment = fragment
        return name.withUTF8 { haystack in
            fragment.withUTF8 { needle in
                guard let first = needle.first, needle.count <= haystack.count else { return false }
                for start in 0...(haystack.count - needle.count) where haystack[start] == first {
                    if haystack[start..<start + needle.count].elementsEqual(needle) { return true }
                }
                return false
            }
        }
    }

    /// Whether any field of `headers` carries a secret.
    package func containsAny(of headers: HTTPHeaders) -> Bool {
        headers.fields.contains { contains($0.name) }
    }
}
