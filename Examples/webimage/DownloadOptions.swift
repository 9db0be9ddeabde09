import ArgumentParser
import Foundation
import WebImage

/// The downloader's knobs as command-line options: every `ImageDownloaderOptions` flag and the
/// configuration fields a user would set. Shared by commands through `@OptionGroup`.
struct DownloadOptions: ParsableArguments {
    // MARK: Queue

    @Option(help: "Downloads running at once (1…256).")
    var concurrency: Int = 6

    @Flag(help: "Start the most recently queued download first (LIFO) instead of FIFO.")
    var lifo = false

    @Option(help: "Queue priority of the downloads: high (.highPriority), normal or low (.lowPriority).")
    var priority: Priority = .normal

    // MARK: Transfer

    @Option(
        help: ArgumentHelp("Idle timeout in seconds: fail when no byte arrives for this long.", valueName: "seconds"))
    var timeout: Double = 15
    @Option(
        name: .customLong("max-time"),
        help: ArgumentHelp(
            "Total timeout in seconds: fail any download not finished by then, however steadily bytes arrive.",
            valueName: "seconds"))
    var maxTime: Double = 60

    @Option(
        name: .customLong("header"),
        help: ArgumentHelp(
            "Send a header field with every request, e.g. 'Referer: https://x/' (repeatable).",
            valueName: "name: value"),
        transform: HeaderArgument.init(parsing:))
    var headers: [HeaderArgument] = []

    @Option(
        name: .customLong("secret-header"),
        help: ArgumentHelp(
            "Treat this header field as a secret (repeatable): sent to the URL's own origin only, never after a "
                + "redirect elsewhere, and its requests skip the HTTP cache. Adds to the built-in list "
                + "(Authorization, Cookie, X-Api-Key, names containing token, secret, api-key or session, ...).",
            valueName: "name"),
        transform: DownloadOptions.parseFieldName)
    var secretHeaders: [String] = []

    @Option(help: "User name, sent only after a 401 challenge.")
    var user: String?

    @Option(
        help:
            "Password for --user (visible to other users in the process list: prefer --password-stdin or WEBIMAGE_PASSWORD)."
    )
    var password: String?

    @Flag(help: "Read the password for --user from the first line of stdin.")
    var passwordStdin = false

    @Flag(help: "Send --user's credentials over plain http too (they travel readable; https only by default).")
    var allowCredentialsOverHttp = false

    @Flag(help: "Accept any TLS certificate and host name (.allowInvalidSSLCertificates).")
    var insecure = false

    @Flag(
        help: """
            Connect to public addresses only (destinationPolicy .publicOnly): a URL or redirect that reaches a \
            loopback, private, link-local or reserved address fails with destinationNotAllowed, nothing sent. \
            Skips the HTTP cache.
            """)
    var publicOnly = false

    @Flag(help: "Send and store cookies (.handleCookies), in memory for this run.")
    var cookies = false

    @Option(
        name: .customLong("cookies-file"),
        help: ArgumentHelp(
            "Like --cookies, loading and saving them in FILE (a Netscape cookie file).", valueName: "file"))
    var cookiesFile: String?

    @Flag(
        name: .customLong("http-cache"),
        help: "Use the RFC 9111 HTTP cache (.useURLCache) in its default location ($XDG_CACHE_HOME/webimage).")
    var httpCache = false

    @Option(
        name: .customLong("http-cache-dir"),
        help: ArgumentHelp("Like --http-cache, with the cache in DIR.", valueName: "dir"))
    var httpCacheDirectory: String?

    @Flag(
        help:
            "With --http-cache(-dir): fail with cacheNotModified (1002) when the cache answers (.ignoreCachedResponse)."
    )
    var ignoreCached = false

    // MARK: Decoding

    @Flag(help: "Decode partial images while the bytes arrive (.progressiveLoad).")
    var progressive = false

    @Flag(help: "Decode huge images at a smaller size, at most 60 MB of pixels (.scaleDownLargeImages).")
    var scaleDown = false

    @Option(
        help: ArgumentHelp("Decode to fit inside this size, e.g. 256x256.", valueName: "WxH"),
        transform: DownloadOptions.parseSize)
    var thumbnail: PixelSize?

    @Flag(help: "Decode only the first frame of animations (.decodeFirstFrameOnly).")
    var firstFrameOnly = false

    // MARK: Validation

    mutating func validate() throws {
        guard (1...256).contains(concurrency) else {
            throw ValidationError("--concurrency must be between 1 and 256, got \(concurrency).")
        }
        guard maxTime > 0, maxTime.isFinite else {
            throw ValidationError("--max-time must be a positive number of seconds, got \(maxTime).")
        }
        guard timeout > 0, timeout.isFinite else {
            throw ValidationError("--timeout must be a positive number of seconds, got \(timeout).")
        }
        if password != nil && user == nil { throw ValidationError("--password needs --user.") }
        if passwordStdin && user == nil { throw ValidationError("--password-stdin needs --user.") }
        if passwordStdin && password != nil {
            throw ValidationError("--password and --password-stdin exclude each other.")
        }
        if ignoreCached && !usesHTTPCache {
            throw ValidationError("--ignore-cached needs --http-cache or --http-cache-dir.")
        }
        if httpCache && httpCacheDirectory != nil {
            throw ValidationError("--http-cache and --http-cache-dir exclude each other; give one.")
        }
        if cookies && cookiesFile != nil {
            throw ValidationError("--cookies and --cookies-file exclude each other; give one.")
        }
        for (name, value) in [("--cookies-file", cookiesFile), ("--http-cache-dir", httpCacheDirectory)]
        where value?.isEmpty == true {
            throw ValidationError("\(name) needs a non-empty path.")
        }
    }

    /// "WxH" (or "W×H") with both sides in 1…16384; `--thumbnail`'s parser.
    static func parseSize(_ text: String) throws -> PixelSize {
        let parts = text.lowercased().split(whereSeparator: { $0 == "x" || $0 == "×" })
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]),
            (1...16384).contains(width), (1...16384).contains(height)
        else {
            throw ValidationError("not a size like 256x256 (two whole numbers from 1 to 16384)")
        }
        return PixelSize(width: width, height: height)
    }

    /// A header field name (a token), `--secret-header`'s parser.
    static func parseFieldName(_ text: String) throws -> String {
        guard HTTPHeaders.isValidFieldName(text) else {
            throw ValidationError("not a header field name (letters, digits and !#$%&'*+-.^_`|~ only)")
        }
        return text
    }

    /// Whether a request uses the HTTP cache (`--http-cache` or `--http-cache-dir`).
    var usesHTTPCache: Bool { httpCache || httpCacheDirectory != nil }

    /// Whether requests handle cookies (`--cookies` or `--cookies-file`).
    var handlesCookies: Bool { cookies || cookiesFile != nil }

    // MARK: Library values

    /// The option set these flags select.
    var downloaderOptions: ImageDownloaderOptions {
        var options: ImageDownloaderOptions = []
        switch priority {
        case .high: options.insert(.highPriority)
        case .low: options.insert(.lowPriority)
        case .normal: break
        }
        if progressive { options.insert(.progressiveLoad) }
        if insecure { options.insert(.allowInvalidSSLCertificates) }
        if scaleDown { options.insert(.scaleDownLargeImages) }
        if firstFrameOnly { options.insert(.decodeFirstFrameOnly) }
        if handlesCookies { options.insert(.handleCookies) }
        if usesHTTPCache { options.formUnion(HTTPCacheSupport.options(ignoreCached: ignoreCached)) }
        return options
    }

    /// The per-request context: the thumbnail size.
    var context: ImageDownloadContext? {
        thumbnail.map { ImageDownloadContext(thumbnailPixelSize: $0) }
    }

    /// The cookie jar `--cookies` or `--cookies-file` asks for: in memory for the run, or persisted to FILE.
    func makeCookieJar() -> CookieJar? {
        if let cookiesFile { return CookieJar(fileURL: URL(fileURLWithPath: cookiesFile)) }
        return cookies ? CookieJar() : nil
    }

    /// The password for `--user`: `--password`, else the first line of stdin with `--password-stdin`, else
    /// the `WEBIMAGE_PASSWORD` environment variable, else empty.
    func resolvedPassword() -> String {
        if let password { return password }
        if passwordStdin {
            var line = Data()
            var byte: UInt8 = 0
            while read(STDIN_FILENO, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            return String(decoding: line, as: UTF8.self)
        }
        return ProcessInfo.processInfo.environment["WEBIMAGE_PASSWORD"] ?? ""
    }

    /// A downloader configuration for these options.
    func makeConfig(cookieJar: CookieJar?) throws -> ImageDownloaderConfig {
        var config = ImageDownloaderConfig.default
        config.maxConcurrentDownloads = concurrency
        config.executionOrder = lifo ? .lifo : .fifo
        config.downloadTimeout = timeout
        config.totalTimeout = maxTime
        for header in headers { config.headers[header.name] = header.value }
        config.secretHeaderFields.formUnion(secretHeaders.map { $0.lowercased() })
        config.username = user
        config.password = user == nil ? nil : resolvedPassword()
        config.allowsCredentialsOverPlainHTTP = allowCredentialsOverHttp
        if publicOnly { config.destinationPolicy = .publicOnly }
        if let cookieJar { config.cookieStorage = cookieJar }
        if usesHTTPCache { try HTTPCacheSupport.configure(&config, directory: httpCacheDirectory) }
        return config
    }
}

/// `--priority`: the queue priority option a download carries.
enum Priority: String, CaseIterable, ExpressibleByArgument {
    case high, normal, low
}

/// One `--header 'Name: value'`, checked when the command line is parsed.
struct HeaderArgument {
    let name: String
    let value: String

    /// Splits at the first colon; the name must be a token and the value free of CR, LF and NUL (the
    /// library's own header-injection rule).
    init(parsing text: String) throws {
        let colon = text.firstIndex(of: ":")
        let name = colon.map { text[..<$0].trimmingCharacters(in: .whitespaces) } ?? ""
        let value = colon.map { text[text.index(after: $0)...].trimmingCharacters(in: .whitespaces) } ?? ""
        guard colon != nil, HTTPHeaders.isValidFieldName(name), HTTPHeaders.isValidFieldValue(value) else {
            throw ValidationError("not of the form 'Name: value' (a token name, and no CR, LF or NUL in the value)")
        }
        self.name = name
        self.value = value
    }
}
