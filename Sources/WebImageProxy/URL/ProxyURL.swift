import Foundation

/// One proxy request's path, parsed: imgproxy's URL format.
///
/// ```
/// /{signature}/{options}/plain/{percent-encoded source URL}[@{extension}]
/// /{signature}/{options}/{base64url(source URL), may be split by /}[.{extension}]
/// ```
///
/// Options are `/`-separated `name:arg:arg…` segments (`ProxyURL+Options.swift` lists the ones the proxy
/// knows: imgproxy's sizes and geometry, quality and format). An option the proxy does not know, or one with
/// a bad argument, fails the request with 400 naming it.
///
/// ```swift
/// let url = try ProxyURL(path: "/insecure/rs:fill:300:200:0/plain/https://example.com/a.jpg@webp")
/// url.source         // https://example.com/a.jpg
/// url.options.format // .webp
/// ```
public struct ProxyURL: Sendable, Hashable {
    /// The first segment: the signature, or anything (`insecure`) when signatures are not checked.
    public var signature: String
    /// What the signature covers: the path after the signature segment, from its leading `/`.
    public var signedPath: String
    /// The processing options, the extension's format included.
    public var options: ProcessingOptions
    /// The source image's URL.
    public var source: URL
    /// What the proxy's downloader reads for `source` when it is not `source` itself: the checked
    /// `file://` URL of a `local://` source, the unsigned object URL of an `s3://` one. Set by `ImageProxy`.
    var fetchURL: URL?
    /// What an `/info` URL asks about its source (`ImageProxy+Info.swift`); nil for an image URL.
    var info: InfoOptions?

    /// Parses `path`, the request target's path (still percent-encoded, without the query), starting from
    /// `defaults` (the server's configured options) with the `default` preset of `presets` applied over them,
    /// and `baseURL` put before a source that does not start with it (imgproxy's `IMGPROXY_BASE_URL`:
    /// `http://example.com/images/` and `plain/a/b.png` fetch `http://example.com/images/a/b.png`).
    /// `clientHints` (with `IMGPROXY_ENABLE_CLIENT_HINTS`) set the `dpr` and `width` over the defaults,
    /// before the preset. With `onlyPresets` (imgproxy's `IMGPROXY_ONLY_PRESETS`) the options are one
    /// segment of `:`-separated preset names and nothing else.
    ///
    /// - Throws: `ProxyError` with status 400 and a sentence naming what is wrong.
    public init(
        path: String, presets: ProxyPresets = ProxyPresets(), onlyPresets: Bool = false,
        defaults: ProcessingOptions = ProcessingOptions(), baseURL: String = "", clientHints: ClientHints? = nil
    ) throws(ProxyError) {
        let split = try Self.splitSignature(path)
        var options = defaults
        // imgproxy's order: the hints, then the `default` preset, then the URL's options.
        if let ratio = clientHints?.pixelRatio { options.dpr = ratio }
        if let pixels = clientHints?.devicePixels { options.width = Int((Double(pixels) / options.dpr).rounded()) }
        if presets.hasDefault { try presets.apply(["default"], to: &options) }
        let rest = split.signedPath.dropFirst()
        let (source, sourceFormat) =
            try onlyPresets
            ? Self.parsePresetsAndSource(rest, presets: presets, into: &options, baseURL: baseURL)
            : Self.parseOptionsAndSource(rest, presets: presets, into: &options, baseURL: baseURL)
        // The extension is an alias of `f:`; read last, it wins when both are given. `raw` answers the
        // source as it is, so it has no format to take, as in imgproxy.
        if let sourceFormat, !options.raw { options.format = sourceFormat }
        self.signature = split.signature
        self.signedPath = split.signedPath
        self.options = options
        self.source = source
    }

    /// The option segments of `rest` applied to `options`, then the source after them.
    private static func parseOptionsAndSource(
        _ rest: Substring, presets: ProxyPresets, into options: inout ProcessingOptions, baseURL: String
    ) throws(ProxyError) -> (URL, ProxyOutputFormat?) {
        var rest = rest
        while true {
            let segmentEnd = rest.firstIndex(of: "/") ?? rest.endIndex
            let segment = rest[..<segmentEnd]
            if segment == "plain" { return try plainSource(rest[segmentEnd...].dropFirst(), baseURL: baseURL) }
            if segment == "enc" { throw .badRequest("encrypted source URLs (enc) are not supported") }
            guard segment.contains(":") else { return try encodedSource(rest, baseURL: baseURL) }
            try apply(segment, to: &options, presets: presets)
            guard segmentEnd < rest.endIndex else { throw .badRequest("the path has no source URL") }
            rest = rest[segmentEnd...].dropFirst()
        }
    }

    /// `names[:name…]/source`: only-presets mode, where a segment that is not a known preset is refused.
    private static func parsePresetsAndSource(
        _ rest: Substring, presets: ProxyPresets, into options: inout ProcessingOptions, baseURL: String
    ) throws(ProxyError) -> (URL, ProxyOutputFormat?) {
        guard let segmentEnd = rest.firstIndex(of: "/") else {
            throw .badRequest("the path needs preset names and a source URL (only presets are accepted)")
        }
        let names = rest[..<segmentEnd].split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard names.allSatisfy({ !$0.isEmpty }) else { throw .badRequest("a preset name is empty") }
        try presets.apply(names, to: &options)
        let source = rest[segmentEnd...].dropFirst()
        let sourceEnd = source.firstIndex(of: "/") ?? source.endIndex
        if source[..<sourceEnd] == "plain" {
            return try plainSource(source[sourceEnd...].dropFirst(), baseURL: baseURL)
        }
        if source[..<sourceEnd] == "enc" { throw .badRequest("encrypted source URLs (enc) are not supported") }
        return try encodedSource(source, baseURL: baseURL)
    }

    /// `path` (with or without its signature segment) with a source URL's user name and password written
    /// `***`, for logs; any other path as it is. A source's userinfo is a credential of its own, and a
    /// Base64 source is no less readable than a plain one, so either is rewritten as a plain source.
    static func redactingUserInfo(_ path: String) -> String {
        guard let split = try? splitSignature(path) else { return path }
        var rest = split.signedPath.dropFirst()
        while true {
            let segmentEnd = rest.firstIndex(of: "/") ?? rest.endIndex
            let segment = rest[..<segmentEnd]
            let parsed: (URL, ProxyOutputFormat?)?
            if segment == "plain" {
                let source = rest[segmentEnd...].dropFirst()
                // Without an `@`, written as it is or as `%40`, a plain source names no user (the common
                // case; parsing the URL again for every access-log line was about 8 % of a cached answer's CPU).
                guard mayNameAUser(source) else { return path }
                parsed = try? plainSource(source)
            } else if !segment.contains(":"), let source = try? encodedSource(rest) {
                parsed = source
            } else {
                // Skipped unparsed: an option segment (`pr:` names presets this function does not know), or,
                // with only presets, a segment of preset names, which may have no `:`.
                guard segmentEnd < rest.endIndex else { return path }
                rest = rest[segmentEnd...].dropFirst()
                continue
            }
            guard let (source, format) = parsed, source.hasUserInfo,
                var components = URLComponents(url: source, resolvingAgainstBaseURL: false)
            else { return path }
            if components.user != nil { components.percentEncodedUser = "***" }
            if components.password != nil { components.percentEncodedPassword = "***" }
            let redacted = (components.string ?? "").addingPercentEncoding(withAllowedCharacters: plainAllowed) ?? ""
            let head = path[..<path.index(path.endIndex, offsetBy: -rest.count)]
            return head + "plain/" + redacted + (format.map { "@\($0.rawValue)" } ?? "")
        }
    }

    /// Whether a plain source's text has an `@`, as it is or percent-encoded (`%40`): a URL
    /// without one has no userinfo.
    static func mayNameAUser(_ text: Substring) -> Bool {
        var previous: (UInt8, UInt8) = (0, 0)
        for byte in text.utf8 {
            if byte == UInt8(ascii: "@") { return true }
            if byte == UInt8(ascii: "0"), previous == (UInt8(ascii: "%"), UInt8(ascii: "4")) { return true }
            previous = (previous.1, byte)
        }
        return false
    }

    /// What a plain source keeps unencoded when the proxy writes one: URL characters but `@` and `%`.
    private static let plainAllowed = CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "@%"))

    /// The signature segment and the rest of `path` (from its `/`), before anything else is parsed: the
    /// signature is checked first, so an unsigned request learns nothing about the option grammar.
    public static func splitSignature(_ path: String) throws(ProxyError) -> (signature: String, signedPath: String) {
        guard path.hasPrefix("/") else { throw .badRequest("the path must start with /") }
        let afterSlash = path.dropFirst()
        guard let signatureEnd = afterSlash.firstIndex(of: "/") else {
            throw .badRequest("the path needs a signature, options and a source URL")
        }
        let signature = String(afterSlash[..<signatureEnd])
        guard !signature.isEmpty else { throw .badRequest("the signature segment is empty") }
        return (signature, String(afterSlash[signatureEnd...]))
    }

    /// `…/plain/{url}[@ext]`: the URL is percent-decoded; `@` in it must be written `%40`.
    static func plainSource(_ text: Substring, baseURL: String = "") throws(ProxyError)
        -> (URL, ProxyOutputFormat?)
    {
        let (encoded, format) = try splitExtension(text, at: "@")
        guard let decoded = String(encoded).removingPercentEncoding else {
            throw .badRequest("the plain source URL is not valid percent-encoding")
        }
        return (try sourceURL(decoded, baseURL: baseURL), format)
    }

    /// `…/{base64url}[.ext]`: URL-safe Base64, padding optional, split by `/` anywhere.
    static func encodedSource(_ text: Substring, baseURL: String = "") throws(ProxyError)
        -> (URL, ProxyOutputFormat?)
    {
        let (encoded, format) = try splitExtension(text, at: ".")
        guard !encoded.isEmpty, let data = Data(base64URL: encoded.filter { $0 != "/" }),
            let decoded = String(data: data, encoding: .utf8)
        else {
            throw .badRequest("the source URL is not URL-safe Base64 (or plain/ is missing)")
        }
        return (try sourceURL(decoded, baseURL: baseURL), format)
    }

    /// `text` without the extension after its last `separator`, and the extension's format.
    private static func splitExtension(
        _ text: Substring, at separator: Character
    ) throws(ProxyError) -> (Substring, ProxyOutputFormat?) {
        guard let index = text.lastIndex(of: separator) else { return (text, nil) }
        return (text[..<index], try extensionFormat(text[text.index(after: index)...]))
    }

    static func extensionFormat(_ name: Substring) throws(ProxyError) -> ProxyOutputFormat {
        guard let format = ProxyOutputFormat(extension: String(name)) else {
            throw .badRequest("unknown output format \"\(name)\" (\(ProxyOutputFormat.names))")
        }
        return format
    }

    /// An `http`/`https` URL with a host, `local:///path` or `s3://bucket/key` (whether those two are
    /// enabled is the proxy's to say, `ImageProxy.fetchURL(for:)`), after `baseURL` (imgproxy's
    /// `IMGPROXY_BASE_URL`) is put before it unless it starts with it already.
    private static func sourceURL(_ given: String, baseURL: String = "") throws(ProxyError) -> URL {
        let text = given.hasPrefix(baseURL) ? given : baseURL + given
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            throw .badRequest("the source must be an absolute http, https, local or s3 URL")
        }
        let hasHost = url.host?.isEmpty == false
        let hasPath = !url.path(percentEncoded: true).isEmpty && url.path(percentEncoded: true) != "/"
        switch scheme {
        case "http" where hasHost, "https" where hasHost: return url
        case "local" where !hasHost && hasPath && url.query == nil: return url
        case "s3" where hasHost && hasPath && url.user == nil && url.password == nil: return url
        default: throw .badRequest("the source must be an absolute http, https, local or s3 URL")
        }
    }
}
