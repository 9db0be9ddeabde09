import ArgumentParser
import Foundation
import WebImage
import WebImageProxy

/// Everything `webimage serve` runs with, from its flags, then `WEBIMAGE_*`, then imgproxy's `IMGPROXY_*`
/// variables (`ImgproxyEnvironment`), then the defaults: a flag given on the command line wins.
struct ServeSettings {
    var configuration = ImageProxyConfiguration()
    var host = "127.0.0.1"
    var port = 8080
    /// `IMGPROXY_*` variables present that serve does not read, logged once at start.
    var unreadVariables: [String] = []
    /// The watermark (read or fetched in `run()`, once) and its base opacity.
    var watermark: StartImage?
    var watermarkOpacity = 1.0
    /// The fallback image's URL, fetched in `run()`, once; a file or Base64 one is in `configuration`.
    var fallbackImage: StartImage?
    /// How long a connection may take to send a request part (`ProxyServer.readTimeout`).
    var readTimeout: Duration? = .seconds(10)
    /// The most connections open at once; 0 for no limit.
    var maximumConnections = 2048
    /// The metrics' own listener, when they have one.
    var metricsAddress: (host: String, port: Int)?
}

/// An image `webimage serve` is configured with (the watermark, the fallback image), as it was given: a
/// file, Base64 text or a URL, and the flag or variable that gave it, named in an error.
struct StartImage {
    enum Origin {
        case file(String)
        case data(Data)
        case url(URL)
    }

    var origin: Origin
    /// The flag or variable that gave it, such as `IMGPROXY_WATERMARK_URL`.
    var name: String
}

extension WebImageCLI.Serve {
    /// The settings the flags and `environment` describe.
    ///
    /// - Throws: `ValidationError` naming the flag or the variable whose value is wrong.
    func settings(_ environment: [String: String]) throws -> ServeSettings {
        let imgproxy = ImgproxyEnvironment(environment)
        var settings = ServeSettings()
        settings.unreadVariables = imgproxy.unread
        try applySigning(environment, imgproxy, to: &settings.configuration)
        try applySources(imgproxy, to: &settings.configuration)
        try applyFormats(imgproxy, to: &settings.configuration)
        try applyPresets(imgproxy, to: &settings.configuration)
        try applyLimits(imgproxy, to: &settings.configuration)
        try applyListener(environment, imgproxy, to: &settings)
        try applyStorage(environment, imgproxy, to: &settings)
        try applyResponses(imgproxy, to: &settings)
        try applyConnections(imgproxy, to: &settings)
        return settings
    }

    /// The key and salt pairs from `--key`/`--salt`, else WEBIMAGE_KEY/WEBIMAGE_SALT, else IMGPROXY_KEY/
    /// IMGPROXY_SALT (each a comma-separated hex list); the signature size and the `Authorization` secret.
    private func applySigning(
        _ environment: [String: String], _ imgproxy: ImgproxyEnvironment,
        to configuration: inout ImageProxyConfiguration
    ) throws {
        var keys = self.keys
        var salts = self.salts
        var source = ("--key", "--salt")
        if keys.isEmpty, salts.isEmpty {
            if let key = environment["WEBIMAGE_KEY"], let salt = environment["WEBIMAGE_SALT"] {
                keys = key.split(separator: ",").map(String.init)
                salts = salt.split(separator: ",").map(String.init)
                source = ("WEBIMAGE_KEY", "WEBIMAGE_SALT")
            } else if imgproxy.text("KEY") != nil || imgproxy.text("SALT") != nil {
                keys = imgproxy.list("KEY") ?? []
                salts = imgproxy.list("SALT") ?? []
                source = ("IMGPROXY_KEY", "IMGPROXY_SALT")
            }
        }
        guard keys.count == salts.count else {
            throw ValidationError(
                "give one salt for each key (\(source.0): \(keys.count) keys, \(source.1): \(salts.count) salts).")
        }
        let pairs = zip(keys, salts).map { SigningKey(hexKey: $0, hexSalt: $1) }
        guard pairs.allSatisfy({ $0 != nil }) else {
            throw ValidationError(
                "\(source.0) and \(source.1) take hex strings (an even number of hex digits; the key not empty).")
        }
        configuration.signingKeys = pairs.compactMap { $0 }
        guard !keys.isEmpty || allowUnsigned else {
            throw ValidationError(
                "give --key and --salt (or WEBIMAGE_KEY and WEBIMAGE_SALT, or IMGPROXY_KEY and IMGPROXY_SALT), "
                    + "or --allow-unsigned.")
        }
        configuration.allowsUnsigned = allowUnsigned
        if let size = try signatureSize ?? imgproxy.integer("SIGNATURE_SIZE", in: 1...32) {
            guard (1...32).contains(size) else { throw ValidationError("--signature-size must be 1…32.") }
            configuration.signatureSize = size
        }
        configuration.secret = imgproxy.text("SECRET")
    }

    /// Which sources and destinations are allowed: `--allowed-sources` else IMGPROXY_ALLOWED_SOURCES;
    /// `--allow-destination` plus the networks IMGPROXY_ALLOW_*_SOURCE_ADDRESSES turn on.
    private func applySources(_ imgproxy: ImgproxyEnvironment, to configuration: inout ImageProxyConfiguration)
        throws
    {
        let sources = allowedSources.isEmpty ? imgproxy.list("ALLOWED_SOURCES") ?? [] : allowedSources
        do throws(URLPrefixList.InvalidPrefix) {
            // `local://` and `s3://` prefixes are the proxy's own to match (`StorageSourcePrefix`).
            _ = try URLPrefixList(sources.filter { !ImageProxyConfiguration.isStorageSourcePrefix($0) })
        } catch {
            let name = allowedSources.isEmpty ? "IMGPROXY_ALLOWED_SOURCES" : "--allowed-sources"
            throw ValidationError("\(name) \(error.description)")
        }
        configuration.allowedSources = sources
        if let invalid = allowDestinations.first(where: { !DestinationPolicy.isValidNetwork($0) }) {
            throw ValidationError("--allow-destination takes a network such as 10.1.0.0/16, got '\(invalid)'.")
        }
        var networks = allowDestinations
        for (name, added) in Self.addressClasses {
            if try imgproxy.boolean(name) == true { networks += added }
        }
        configuration.allowedDestinations = networks
    }

    /// imgproxy's source address switches and the networks each allows (Go's `IsLoopback`, `IsPrivate` and
    /// `IsLinkLocalUnicast`). All are off here by default; imgproxy allows private addresses by default.
    static let addressClasses: [(String, [String])] = [
        ("ALLOW_LOOPBACK_SOURCE_ADDRESSES", ["127.0.0.0/8", "::1/128"]),
        ("ALLOW_PRIVATE_SOURCE_ADDRESSES", ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"]),
        ("ALLOW_LINK_LOCAL_SOURCE_ADDRESSES", ["169.254.0.0/16", "fe80::/10"]),
    ]

    /// The format negotiation and the options every URL starts from (qualities, rotation, metadata).
    private func applyFormats(_ imgproxy: ImgproxyEnvironment, to configuration: inout ImageProxyConfiguration)
        throws
    {
        var negotiation = FormatNegotiation()
        negotiation.webp = try Self.detection(webpDetection, imgproxy.detection("WEBP"))
        negotiation.avif = try Self.detection(avifDetection, imgproxy.detection("AVIF"))
        negotiation.jxl = try Self.detection(jxlDetection, imgproxy.detection("JXL"))
        configuration.formatNegotiation = negotiation

        var options = ProcessingOptions()
        guard (1...100).contains(quality ?? 80) else { throw ValidationError("--quality must be 1…100.") }
        let defaultQuality = try quality ?? imgproxy.integer("QUALITY", in: 1...100) ?? 80
        var qualities = Self.imgproxyFormatQualities
        let given =
            try formatQuality.map { try ImgproxyEnvironment.formatQualities($0, name: "--format-quality") }
            ?? imgproxy.formatQualities("FORMAT_QUALITY")
        qualities.merge(given ?? [:]) { $1 }
        for format in ProxyOutputFormat.allCases where format != .png {
            options.formatQuality[format] = qualities[format] ?? defaultQuality
        }
        options.autoRotate = try imgproxy.boolean("AUTO_ROTATE") ?? true
        options.stripMetadata = try imgproxy.boolean("STRIP_METADATA") ?? true
        options.keepCopyright = try imgproxy.boolean("KEEP_COPYRIGHT") ?? true
        options.preserveHDR = try imgproxy.boolean("PRESERVE_HDR") ?? false
        configuration.defaultOptions = options
        configuration.usesETags = try imgproxy.boolean("USE_ETAG") ?? true
    }

    /// imgproxy's `FORMAT_QUALITY` defaults; each format it leaves out takes `QUALITY` (80). Looked up by
    /// name so JPEG XL's 77 applies once the proxy has that format.
    static var imgproxyFormatQualities: [ProxyOutputFormat: Int] {
        var qualities: [ProxyOutputFormat: Int] = [:]
        for (name, quality) in [("webp", 79), ("avif", 63), ("jxl", 77)] {
            if let format = ProxyOutputFormat(rawValue: name) { qualities[format] = quality }
        }
        return qualities
    }

    /// A detection flag (`--enable-…`/`--disable-…`, which turns enforcement off too) over the variables'.
    private static func detection(_ flag: Bool?, _ variable: FormatDetection?) -> FormatDetection {
        switch flag {
        case true?: variable == .enforced ? .enforced : .auto
        case false?: .off
        case nil: variable ?? .off
        }
    }

    /// `--preset` after IMGPROXY_PRESETS, and the only-presets mode.
    private func applyPresets(_ imgproxy: ImgproxyEnvironment, to configuration: inout ImageProxyConfiguration)
        throws
    {
        let definitions = (imgproxy.list("PRESETS") ?? []).filter { !$0.isEmpty } + presetDefinitions
        let onlyPresets = try self.onlyPresets || imgproxy.boolean("ONLY_PRESETS") == true
        do throws(ProxyPresets.InvalidPreset) {
            configuration.presets = try ProxyPresets(definitions)
        } catch {
            throw ValidationError("--preset: \(error.description).")
        }
        if onlyPresets, configuration.presets.names.isEmpty {
            throw ValidationError("--only-presets needs at least one --preset (or IMGPROXY_PRESETS).")
        }
        configuration.onlyPresets = onlyPresets
    }

    /// The bounds of a request, each from its flag, else its IMGPROXY_ variable, else the default. imgproxy's
    /// 0 for "no limit" is refused: every source and result stays bounded here.
    private func applyLimits(_ imgproxy: ImgproxyEnvironment, to configuration: inout ImageProxyConfiguration)
        throws
    {
        let defaults = ImageProxyConfiguration()
        let bytes = try maxSourceBytes ?? imgproxy.integer("MAX_SRC_FILE_SIZE", in: 1...Int.max).map(Int64.init)
        configuration.maximumSourceBytes = bytes ?? defaults.maximumSourceBytes
        configuration.maximumSourcePixels =
            try maxSourcePixels ?? imgproxy.megapixels("MAX_SRC_RESOLUTION") ?? defaults.maximumSourcePixels
        // imgproxy processes at most MAX_ANIMATION_FRAMES frames, the first; 1 (its default) makes stills.
        // More than 1 is the most a source may have here, as --max-animation-frames (and `maf`) are.
        let frames = try imgproxy.integer("MAX_ANIMATION_FRAMES", in: 1...Int(Int32.max))
        configuration.maximumAnimationFrames =
            maxAnimationFrames ?? frames.flatMap { $0 > 1 ? $0 : nil } ?? defaults.maximumAnimationFrames
        configuration.keepsAnimations = maxAnimationFrames != nil || frames != 1
        configuration.maximumResultDimension =
            try maxResultDimension ?? imgproxy.integer("MAX_RESULT_DIMENSION", in: 1...Int.max)
            ?? defaults.maximumResultDimension
        guard configuration.maximumSourceBytes > 0, configuration.maximumSourcePixels > 0,
            configuration.maximumAnimationFrames > 0, configuration.maximumResultDimension > 0
        else { throw ValidationError("the --max-… limits must be greater than 0.") }
        configuration.allowsSecurityOptions =
            try allowSecurityOptions || imgproxy.boolean("ALLOW_SECURITY_OPTIONS") == true
        // Seconds become `Duration`s by whole milliseconds: a value past a day (or NaN, or infinite) is
        // refused here rather than overflowing there.
        let seconds = try deadline ?? imgproxy.integer("TIMEOUT", in: 1...Int(Self.longestWait)).map(Double.init) ?? 30
        guard seconds > 0, seconds <= Self.longestWait else {
            throw ValidationError("--deadline must be greater than 0 and at most \(Int(Self.longestWait)) seconds.")
        }
        configuration.requestDeadline = Self.duration(seconds)
        // imgproxy's DOWNLOAD_TIMEOUT: the fetch's own limit, within the deadline.
        let download =
            try downloadTimeout ?? imgproxy.integer("DOWNLOAD_TIMEOUT", in: 1...Int(Self.longestWait)).map(Double.init)
        if let download {
            guard download > 0, download <= Self.longestWait else {
                throw ValidationError(
                    "--download-timeout must be greater than 0 and at most \(Int(Self.longestWait)) seconds.")
            }
            configuration.sourceTimeout = Self.duration(min(download, seconds))
        }
        configuration.cacheMaxAge = try ttl ?? imgproxy.integer("TTL", in: 0...Int(Int32.max)) ?? defaults.cacheMaxAge
        guard configuration.cacheMaxAge >= 0 else { throw ValidationError("--ttl must be 0 or more.") }
        configuration.maximumConcurrentJobs =
            try maxConcurrency ?? imgproxy.integer("WORKERS", in: 1...Self.mostJobs) ?? defaults.maximumConcurrentJobs
        guard (1...Self.mostJobs).contains(configuration.maximumConcurrentJobs) else {
            throw ValidationError("--max-concurrency must be 1…\(Self.mostJobs).")
        }
        // imgproxy's 0 is an unbounded queue; here 0 is no queue, so the variable starts at 1.
        configuration.maximumQueuedJobs =
            try maxQueue ?? imgproxy.integer("REQUESTS_QUEUE_SIZE", in: 1...Self.mostQueued)
            ?? defaults.maximumQueuedJobs
        guard (0...Self.mostQueued).contains(configuration.maximumQueuedJobs) else {
            throw ValidationError("--max-queue must be 0…\(Self.mostQueued).")
        }
        configuration.healthCheckPath = imgproxy.urlPath("HEALTH_CHECK_PATH")
    }

    /// The address and port: `--host`/`--port`, else WEBIMAGE_HOST/WEBIMAGE_PORT, else IMGPROXY_BIND, else
    /// 127.0.0.1:8080 (imgproxy's `:8080` listens on every address; a container gives `--host 0.0.0.0`).
    private func applyListener(
        _ environment: [String: String], _ imgproxy: ImgproxyEnvironment, to settings: inout ServeSettings
    ) throws {
        let bind = try imgproxy.address("BIND")
        settings.host = host ?? environment["WEBIMAGE_HOST"] ?? bind?.host ?? "127.0.0.1"
        if let port {
            settings.port = port
        } else if let text = environment["WEBIMAGE_PORT"] {
            guard let value = Int(text) else { throw ValidationError("WEBIMAGE_PORT must be a number, got '\(text)'.") }
            settings.port = value
        } else {
            settings.port = bind?.port ?? 8080
        }
        guard (0...65_535).contains(settings.port) else { throw ValidationError("--port must be 0…65535.") }
    }

    /// The connections: the read timeout and the most open at once (`--read-timeout` else
    /// IMGPROXY_READ_REQUEST_TIMEOUT or its older name IMGPROXY_READ_TIMEOUT, `--max-clients` else
    /// IMGPROXY_MAX_CLIENTS); the paths' prefix; and the metrics' listener and namespace.
    func applyConnections(_ imgproxy: ImgproxyEnvironment, to settings: inout ServeSettings) throws {
        let longest = Int(Self.longestWait)
        let read =
            try readTimeout
            ?? (imgproxy.integer("READ_REQUEST_TIMEOUT", in: 1...longest)
            ?? imgproxy.integer("READ_TIMEOUT", in: 1...longest)).map(Double.init) ?? 10
        guard read > 0, read <= Self.longestWait else {
            throw ValidationError("--read-timeout must be greater than 0 and at most \(longest) seconds.")
        }
        settings.readTimeout = Self.duration(read)
        settings.maximumConnections = try maxClients ?? imgproxy.integer("MAX_CLIENTS", in: 0...Int(Int32.max)) ?? 2048
        guard settings.maximumConnections >= 0 else { throw ValidationError("--max-clients must be 0 or more.") }

        if let prefix = pathPrefix.flatMap(ImgproxyEnvironment.urlPath) ?? imgproxy.urlPath("PATH_PREFIX") {
            guard !prefix.contains(where: { $0 == " " || $0 == "%" }) else {
                throw ValidationError(
                    "--path-prefix (IMGPROXY_PATH_PREFIX) takes a path such as /images, got '\(prefix)'.")
            }
            settings.configuration.pathPrefix = prefix
        }

        if let metricsBind {
            guard let address = ImgproxyEnvironment.address(metricsBind) else {
                throw ValidationError("--metrics-bind takes host:port or :port, such as :9464, got '\(metricsBind)'.")
            }
            settings.metricsAddress = address
        } else {
            settings.metricsAddress = try imgproxy.address("PROMETHEUS_BIND")
        }
        if let address = settings.metricsAddress {
            guard address.port == 0 || address != (settings.host, settings.port) else {
                throw ValidationError(
                    "--metrics-bind (IMGPROXY_PROMETHEUS_BIND) must differ from the main address, "
                        + "\(address.host):\(address.port).")
            }
            settings.configuration.servesMetrics = false
        }
        if let namespace = metricsNamespace ?? imgproxy.text("PROMETHEUS_NAMESPACE") {
            guard ImageProxyConfiguration.isValidMetricsNamespace(namespace) else {
                let name = metricsNamespace == nil ? "IMGPROXY_PROMETHEUS_NAMESPACE" : "--metrics-namespace"
                throw ValidationError(
                    "\(name) must be letters, digits and _, not starting with a digit, got '\(namespace)'.")
            }
            settings.configuration.metricsNamespace = namespace
        }
    }

    /// Seconds as a `Duration`, by whole milliseconds.
    static func duration(_ seconds: Double) -> Duration {
        .milliseconds(Int((seconds * 1000).rounded()))
    }
}
