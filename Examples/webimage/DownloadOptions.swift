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

    @Flag(help: "Queue downloads with high priority (.highPriority).")
    var high = false

    @Flag(help: "Queue downloads with low priority (.lowPriority).")
    var low = false

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
            valueName: "name: value"))
    var headers: [String] = []

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

    @Option(
        help: ArgumentHelp(
            "Send and store cookies (.handleCookies); with FILE, load and save them as a Netscape cookie file.",
            valueName: "file"))
    var cookies: String?

    @Option(
        name: .customLong("http-cache"),
        help: ArgumentHelp(
            "Use the RFC 9111 HTTP cache (.useURLCache), in DIR or the default location.", valueName: "dir"))
    var httpCache: String?

    @Flag(help: "With --http-cache: fail with cacheNotModified (1002) when the cache answers (.ignoreCachedResponse).")
    var ignoreCached = false

    // MARK: Decoding

    @Flag(help: "Decode partial images while the bytes arrive (.progressiveLoad).")
    var progressive = false

    @Flag(help: "Decode huge images at a smaller size, at most 60 MB of pixels (.scaleDownLargeImages).")
    var scaleDown = false

    @Option(help: ArgumentHelp("Decode to fit inside this size, e.g. 256x256.", valueName: "WxH"))
    var thumbnail: String?

    @Flag(help: "Decode only the first frame of animations (.decodeFirstFrameOnly).")
    var firstFrameOnly = false

    // MARK: Validation

    mutating func validate() throws {
        guard (1...256).contains(concurrency) else {
            throw ValidationError("--concurrency must be between 1 and 256, got \(concurrency).")
        }
        guard !(high && low) else { throw ValidationError("--high and --low cannot be used together.") }
        guard maxTime > 0, maxTime.isFinite else {
            throw ValidationError("--max-time must be a positive number of seconds, got \(maxTime).")
        }
        guard timeout > 0, timeout.isFinite else {
            throw ValidationError("--timeout must be a positive number of seconds, got \(timeout).")
        }
        for header in headers where Self.parseHeader(header) == nil {
            throw ValidationError(
                "--header \(header.debugDescription) is not of the form 'Name: value' (a token name, and no CR, LF "
                    + "or NUL in the value).")
        }
        if password != nil && user == nil { throw ValidationError("--password needs --user.") }
        if passwordStdin && user == nil { throw ValidationError("--password-stdin needs --user.") }
        if passwordStdin && password != nil {
            throw ValidationError("--password and --password-stdin exclude each other.")
        }
        if let thumbnail, Self.parseSize(thumbnail) == nil {
            throw ValidationError(
                "--thumbnail '\(thumbnail)' is not a size like 256x256 (two whole numbers from 1 to 16384).")
        }
        if ignoreCached && httpCache == nil { throw ValidationError("--ignore-cached needs --http-cache.") }
        for (name, value) in [("--cookies", cookies), ("--http-cache", httpCache)] where value?.isEmpty == true {
            throw ValidationError("\(name) needs a non-empty path, or no value at all for the default.")
        }
    }

    /// "Name: value" split at the first colon; nil unless the name is a non-empty token without spaces.
    static func parseHeader(_ text: String) -> (name: String, value: String)? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let name = text[..<colon].trimmingCharacters(in: .whitespaces)
        let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        // The library's own rule: a token name, and no CR, LF or NUL in the value (header injection).
        guard HTTPHeaders.isValidFieldName(name), HTTPHeaders.isValidFieldValue(value) else { return nil }
        return (name, value)
    }

    /// "WxH" (or "W×H") with both sides in 1…16384.
    static func parseSize(_ text: String) -> PixelSize? {
        let parts = text.lowercased().split(whereSeparator: { $0 == "x" || $0 == "×" })
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]),
            (1...16384).contains(width), (1...16384).contains(height)
        else { return nil }
        return PixelSize(width: width, height: height)
    }

    // MARK: Library values

    /// The option set these flags select.
    var downloaderOptions: ImageDownloaderOptions {
        var options: ImageDownloaderOptions = []
        if high { options.insert(.highPriority) }
        if low { options.insert(.lowPriority) }
        if progressive { options.insert(.progressiveLoad) }
        if insecure { options.insert(.allowInvalidSSLCertificates) }
        if scaleDown { options.insert(.scaleDownLargeImages) }
        if firstFrameOnly { options.insert(.decodeFirstFrameOnly) }
        if cookies != nil { options.insert(.handleCookies) }
        if httpCache != nil { options.formUnion(HTTPCacheSupport.options(ignoreCached: ignoreCached)) }
        return options
    }

    /// The per-request context: the thumbnail size.
    var context: ImageDownloadContext? {
        guard let thumbnail, let size = Self.parseSize(thumbnail) else { return nil }
        return ImageDownloadContext(thumbnailPixelSize: size)
    }

    /// The cookie jar `--cookies` asks for: persisted to FILE, or in memory for the run.
    func makeCookieJar() -> CookieJar? {
        guard let cookies else { return nil }
        guard cookies != OptionalValueOptions.defaultMarker else { return CookieJar() }
        return CookieJar(fileURL: URL(fileURLWithPath: cookies))
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
        for header in headers {
            if let (name, value) = Self.parseHeader(header) { config.headers[name] = value }
        }
        config.username = user
        config.password = user == nil ? nil : resolvedPassword()
        config.allowsCredentialsOverPlainHTTP = allowCredentialsOverHttp
        if let cookieJar { config.cookieStorage = cookieJar }
        if let httpCache { try HTTPCacheSupport.configure(&config, directory: httpCache) }
        return config
    }
}
