import ArgumentParser
import Foundation
import Logging
import WebImage
import WebImageObjectStore
import WebImageProxy

extension WebImageCLI {
    /// `webimage serve`: the imgproxy-compatible image proxy (`WebImageProxy`) on an HTTP port.
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve resized images over HTTP with imgproxy's URL format and signatures.",
            discussion: """
                GET /{signature}/{options}/plain/{source-url}[@{ext}] or /{signature}/{options}/{base64url}[.{ext}] \
                fetches the source, resizes it and answers in the requested format (or WebP, JPEG or \
                PNG from Accept). Options: imgproxy's rs, s, rt, w, h, mw, mh, z, dpr, el, ex, exar, g (not sm), \
                c, pd, ar, rot, wm (--watermark-path), q, fq, mb, f, sm, kcr, scp, eth, skp, raw, cb, exp, fn, att \
                and pr (--preset). \
                GET /health answers 200 (liveness), GET \
                /health/ready 200 or 503 while draining (readiness), GET /metrics Prometheus's text format. Only \
                public source addresses are fetched unless --allow-destination names a network. SIGTERM drains \
                gracefully: readiness turns 503, the listener closes after --drain-delay, requests in flight \
                get --drain-timeout to finish, and the exit status is 0.

                Examples:
                  webimage serve --key $KEY --salt $SALT --port 8080
                  webimage serve --allow-unsigned --allow-destination 127.0.0.0/8   # local development
                """)

        @Option(help: "The address to listen on (env WEBIMAGE_HOST; 127.0.0.1 when neither is given).")
        var host: String?

        @Option(help: "The port to listen on, 0 for any free one (env WEBIMAGE_PORT; 8080 when neither is given).")
        var port: Int?

        @Option(
            name: .customLong("key"),
            help: ArgumentHelp(
                "A hex signing key (repeatable, paired in order with --salt, for key rotation; env WEBIMAGE_KEY, "
                    + "comma-separated).", valueName: "hex"))
        var keys: [String] = []

        @Option(
            name: .customLong("salt"),
            help: ArgumentHelp("The hex salt of the --key at the same position (env WEBIMAGE_SALT).", valueName: "hex"))
        var salts: [String] = []

        @Flag(help: "Accept 'insecure' in place of a signature. For local development only: logs a warning.")
        var allowUnsigned = false

        @Option(
            name: .customLong("allow-destination"),
            help: ArgumentHelp(
                "Also fetch from this network, e.g. 10.1.0.0/16 (repeatable); only public addresses by default.",
                valueName: "cidr"))
        var allowDestinations: [String] = []

        @Option(
            name: .customLong("allowed-sources"),
            help: ArgumentHelp(
                "Only fetch source URLs under this prefix, redirects included (repeatable): scheme, host "
                    + "(*.example.com for subdomains), port and path on segment boundaries; any source by default.",
                valueName: "prefix"))
        var allowedSources: [String] = []

        @Option(
            name: .customLong("local-filesystem-root"),
            help: ArgumentHelp(
                "Serve local:///path sources from this directory, never outside it (IMGPROXY_LOCAL_FILESYSTEM_ROOT); "
                    + "none by default.",
                valueName: "directory"))
        var localFilesystemRoot: String?

        @Option(
            name: .customLong("base-url"),
            help: ArgumentHelp(
                "Put this before every source URL that does not start with it (IMGPROXY_BASE_URL).",
                valueName: "url"))
        var baseURL: String?

        @Flag(
            name: .customLong("use-s3"),
            help: ArgumentHelp(
                "Serve s3://bucket/key sources (IMGPROXY_USE_S3), with the AWS_* credentials and region, and "
                    + "IMGPROXY_S3_ENDPOINT or AWS_ENDPOINT_URL for a store other than AWS."))
        var useS3 = false

        @Option(
            name: .customLong("fallback-image-path"),
            help: ArgumentHelp(
                "Answer this image, processed as the URL asks, when a source cannot be fetched "
                    + "(IMGPROXY_FALLBACK_IMAGE_PATH, or IMGPROXY_FALLBACK_IMAGE_DATA in Base64; status "
                    + "IMGPROXY_FALLBACK_IMAGE_HTTP_CODE, 200 by default; max-age IMGPROXY_FALLBACK_IMAGE_TTL).",
                valueName: "file"))
        var fallbackImagePath: String?

        @Option(help: "The largest source file in bytes.")
        var maxSourceBytes: Int64 = ImageProxyConfiguration().maximumSourceBytes

        @Option(help: "The most pixels a source image may have.")
        var maxSourcePixels = ImageProxyConfiguration().maximumSourcePixels

        @Option(help: "The most frames an animated source may have (WebP, GIF and JPEG XL results keep every frame).")
        var maxAnimationFrames = ImageProxyConfiguration().maximumAnimationFrames

        @Option(help: "The largest width or height a result may be asked for, after dpr.")
        var maxResultDimension = ImageProxyConfiguration().maximumResultDimension

        @Option(help: "Seconds a request may take, fetch and processing together, before it is answered 504.")
        var deadline: Double = 30

        @Option(help: "Seconds responses may be cached (Cache-Control max-age); one year by default.")
        var ttl = ImageProxyConfiguration().cacheMaxAge

        @Flag(
            inversion: .prefixedEnableDisable,
            help: ArgumentHelp(
                "Answer Accept: image/avif with AVIF when the URL names no format (env "
                    + "IMGPROXY_ENABLE_AVIF_DETECTION; off when neither is given: an AVIF encode costs several times a "
                    + "WebP or JPEG one, and the client would pick it). @avif in a signed URL always works."))
        var avifDetection: Bool?

        @Option(
            help: ArgumentHelp(
                "Keep finished results in this folder and serve repeats from it (no result cache without it).",
                valueName: "folder"))
        var cacheDir: String?

        @Option(
            help: ArgumentHelp(
                "The most bytes the result cache keeps, e.g. 500M or 2G (K, M, G: powers of 1024); least recently "
                    + "used results are evicted first.", valueName: "size"))
        var cacheSize = "1G"

        @Option(
            help: ArgumentHelp(
                "The most bytes of source files kept in memory by HTTP's caching rules (freshness, revalidation), "
                    + "so different results of one source fetch it once; 0 turns it off.", valueName: "size"))
        var sourceCacheSize = "64M"

        @Option(
            help:
                "How many results may be made at once (fetch, decode, resize, encode); the number of cores by default.")
        var maxConcurrency = ImageProxyConfiguration().maximumConcurrentJobs

        @Option(help: "How many more results may wait for a slot; past that requests get 503 with Retry-After.")
        var maxQueue = ImageProxyConfiguration().maximumQueuedJobs

        @Option(
            help:
                "Seconds requests in flight may take to finish once the listener closed (after --drain-delay); then they are cut."
        )
        var drainTimeout: Double = 30

        @Option(
            help:
                "Seconds after SIGTERM during which new connections are still accepted while /health/ready answers 503."
        )
        var drainDelay: Double = 0

        @Option(
            name: .customLong("preset"),
            help: ArgumentHelp(
                "A named option list, NAME=OPTIONS such as thumb=rs:fill:150:150/q:70 (repeatable; env "
                    + "IMGPROXY_PRESETS, comma-separated, read first). pr:NAME in a URL applies it; a preset named "
                    + "default applies to every request first.", valueName: "name=options"))
        var presetDefinitions: [String] = []

        @Flag(
            help: ArgumentHelp(
                "Accept only preset names, colon-separated, as a URL's options segment (env IMGPROXY_ONLY_PRESETS)."))
        var onlyPresets = false

        @Option(
            help: ArgumentHelp(
                "An image drawn where a URL asks for wm:opacity[:position:x:y:scale], read once at the start (env "
                    + "IMGPROXY_WATERMARK_PATH); without one, wm: draws nothing.", valueName: "file"))
        var watermarkPath: String?

        @Option(
            help: ArgumentHelp(
                "The base opacity every wm: opacity is multiplied by, greater than 0 and at most 1 (env "
                    + "IMGPROXY_WATERMARK_OPACITY; 1 when neither is given).", valueName: "opacity"))
        var watermarkOpacity: Double?

        mutating func validate() throws {
            let environment = ProcessInfo.processInfo.environment
            try validateSigning(environment)
            try validateSources(environment)
            try validatePresets(environment)
            try validateListener(environment)
            try validateWatermark(environment)
            try validateLimits()
        }

        /// The key and salt pairs, from the flags or WEBIMAGE_KEY / WEBIMAGE_SALT.
        private mutating func validateSigning(_ environment: [String: String]) throws {
            if keys.isEmpty, salts.isEmpty, let key = environment["WEBIMAGE_KEY"],
                let salt = environment["WEBIMAGE_SALT"]
            {
                keys = key.split(separator: ",").map(String.init)
                salts = salt.split(separator: ",").map(String.init)
            }
            guard keys.count == salts.count else {
                throw ValidationError("give one --salt for each --key (\(keys.count) keys, \(salts.count) salts).")
            }
            guard zip(keys, salts).allSatisfy({ SigningKey(hexKey: $0, hexSalt: $1) != nil }) else {
                throw ValidationError(
                    "--key and --salt take hex strings (an even number of hex digits; the key not empty).")
            }
            guard !keys.isEmpty || allowUnsigned else {
                throw ValidationError("give --key and --salt (or WEBIMAGE_KEY and WEBIMAGE_SALT), or --allow-unsigned.")
            }
        }

        /// Which sources and destinations are allowed, and AVIF detection.
        private mutating func validateSources(_ environment: [String: String]) throws {
            do throws(URLPrefixList.InvalidPrefix) {
                _ = try URLPrefixList(allowedSources.filter { !ImageProxyConfiguration.isStorageSourcePrefix($0) })
            } catch {
                throw ValidationError("--allowed-sources \(error.description)")
            }
            if localFilesystemRoot == nil { localFilesystemRoot = environment["IMGPROXY_LOCAL_FILESYSTEM_ROOT"] }
            if let localFilesystemRoot {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: localFilesystemRoot, isDirectory: &isDirectory),
                    isDirectory.boolValue, (localFilesystemRoot as NSString).resolvingSymlinksInPath != "/"
                else {
                    throw ValidationError(
                        "--local-filesystem-root (IMGPROXY_LOCAL_FILESYSTEM_ROOT) must be an existing directory other "
                            + "than /, got '\(localFilesystemRoot)'.")
                }
            }
            _ = try Self.s3Configuration(useS3: useS3, environment)
            _ = try fallbackImage(environment)
            for name in [
                "IMGPROXY_USE_LAST_MODIFIED", "IMGPROXY_CACHE_CONTROL_PASSTHROUGH", "IMGPROXY_ENABLE_CLIENT_HINTS",
            ] {
                if let text = environment[name], Self.boolean(text) == nil {
                    throw ValidationError("\(name) must be true or false, got '\(text)'.")
                }
            }
            if let invalid = allowDestinations.first(where: { !DestinationPolicy.isValidNetwork($0) }) {
                throw ValidationError("--allow-destination takes a network such as 10.1.0.0/16, got '\(invalid)'.")
            }
            if avifDetection == nil, let text = environment["IMGPROXY_ENABLE_AVIF_DETECTION"] {
                guard let value = Self.boolean(text) else {
                    throw ValidationError("IMGPROXY_ENABLE_AVIF_DETECTION must be true or false, got '\(text)'.")
                }
                avifDetection = value
            }
        }

        /// `--preset`, IMGPROXY_PRESETS and the only-presets mode.
        private mutating func validatePresets(_ environment: [String: String]) throws {
            if let text = environment["IMGPROXY_PRESETS"] {
                presetDefinitions = text.split(separator: ",").map(String.init) + presetDefinitions
            }
            if !onlyPresets, let text = environment["IMGPROXY_ONLY_PRESETS"] {
                guard let value = Self.boolean(text) else {
                    throw ValidationError("IMGPROXY_ONLY_PRESETS must be true or false, got '\(text)'.")
                }
                onlyPresets = value
            }
            let presets: ProxyPresets
            do throws(ProxyPresets.InvalidPreset) {
                presets = try ProxyPresets(presetDefinitions)
            } catch {
                throw ValidationError("--preset: \(error.description).")
            }
            if onlyPresets, presets.names.isEmpty {
                throw ValidationError("--only-presets needs at least one --preset (or IMGPROXY_PRESETS).")
            }
        }

        /// The address and port, from the flags or WEBIMAGE_HOST / WEBIMAGE_PORT.
        private mutating func validateListener(_ environment: [String: String]) throws {
            if host == nil { host = environment["WEBIMAGE_HOST"] ?? "127.0.0.1" }
            if port == nil {
                if let text = environment["WEBIMAGE_PORT"] {
                    guard let value = Int(text) else {
                        throw ValidationError("WEBIMAGE_PORT must be a number, got '\(text)'.")
                    }
                    port = value
                } else {
                    port = 8080
                }
            }
            guard let port, (0...65_535).contains(port) else { throw ValidationError("--port must be 0…65535.") }
        }

        /// The watermark's file and base opacity, from the flags or IMGPROXY_WATERMARK_PATH and
        /// IMGPROXY_WATERMARK_OPACITY; the file is read in `run()`, once.
        private mutating func validateWatermark(_ environment: [String: String]) throws {
            if watermarkPath == nil { watermarkPath = environment["IMGPROXY_WATERMARK_PATH"] }
            if watermarkOpacity == nil, let text = environment["IMGPROXY_WATERMARK_OPACITY"] {
                guard let value = Double(text) else {
                    throw ValidationError("IMGPROXY_WATERMARK_OPACITY must be a number, got '\(text)'.")
                }
                watermarkOpacity = value
            }
            guard let opacity = watermarkOpacity else { return }
            guard opacity > 0, opacity <= 1 else {
                throw ValidationError(
                    "--watermark-opacity (or IMGPROXY_WATERMARK_OPACITY) must be greater than 0 and at most 1, got "
                        + "\(opacity).")
            }
        }

        /// The limits, waits and sizes.
        private func validateLimits() throws {
            guard maxSourceBytes > 0, maxSourcePixels > 0, maxAnimationFrames > 0, maxResultDimension > 0 else {
                throw ValidationError("the --max-… limits must be greater than 0.")
            }
            // Seconds become `Duration`s by whole milliseconds: a value past a day (or NaN, or infinite)
            // is refused here rather than overflowing there.
            guard deadline > 0, deadline <= Self.longestWait else {
                throw ValidationError("--deadline must be greater than 0 and at most \(Int(Self.longestWait)) seconds.")
            }
            guard ttl >= 0 else { throw ValidationError("--ttl must be 0 or more.") }
            guard sourceCacheSize == "0" || (ImageProxyConfiguration.byteCount(sourceCacheSize) ?? 0) > 0 else {
                throw ValidationError(
                    "--source-cache-size takes a size such as 64M, or 0, got '\(sourceCacheSize)'.")
            }
            guard (ImageProxyConfiguration.byteCount(cacheSize) ?? 0) > 0 else {
                throw ValidationError("--cache-size takes a size such as 500M or 2G, got '\(cacheSize)'.")
            }
            guard (1...Self.mostJobs).contains(maxConcurrency) else {
                throw ValidationError("--max-concurrency must be 1…\(Self.mostJobs).")
            }
            guard (0...Self.mostQueued).contains(maxQueue) else {
                throw ValidationError("--max-queue must be 0…\(Self.mostQueued).")
            }
            guard (0...Self.longestWait).contains(drainTimeout), (0...Self.longestWait).contains(drainDelay) else {
                throw ValidationError(
                    "--drain-timeout and --drain-delay must be 0 or more and at most \(Int(Self.longestWait)) seconds.")
            }
        }

        func run() async throws {
            var configuration = ImageProxyConfiguration()
            configuration.signingKeys = zip(keys, salts).compactMap { SigningKey(hexKey: $0, hexSalt: $1) }
            configuration.allowsUnsigned = allowUnsigned
            configuration.allowedDestinations = allowDestinations
            configuration.allowedSources = allowedSources
            configuration.localFilesystemRoot = localFilesystemRoot
            configuration.baseURL = baseURL ?? ProcessInfo.processInfo.environment["IMGPROXY_BASE_URL"] ?? ""
            configuration.s3 = try Self.s3Configuration(useS3: useS3, ProcessInfo.processInfo.environment)
            let environment = ProcessInfo.processInfo.environment
            configuration.usesLastModified = environment["IMGPROXY_USE_LAST_MODIFIED"].flatMap(Self.boolean) ?? false
            configuration.usesClientHints = environment["IMGPROXY_ENABLE_CLIENT_HINTS"].flatMap(Self.boolean) ?? false
            configuration.passesCacheControlThrough =
                environment["IMGPROXY_CACHE_CONTROL_PASSTHROUGH"].flatMap(Self.boolean) ?? false
            if let (image, status, ttl) = try fallbackImage(ProcessInfo.processInfo.environment) {
                (configuration.fallbackImage, configuration.fallbackImageStatus) = (image, status)
                configuration.fallbackImageTTL = ttl
            }
            configuration.maximumSourceBytes = maxSourceBytes
            configuration.maximumSourcePixels = maxSourcePixels
            configuration.maximumAnimationFrames = maxAnimationFrames
            configuration.maximumResultDimension = maxResultDimension
            configuration.requestDeadline = Self.duration(deadline)
            configuration.cacheMaxAge = ttl
            configuration.detectsAVIF = avifDetection ?? false
            configuration.maximumConcurrentJobs = maxConcurrency
            configuration.maximumQueuedJobs = maxQueue
            configuration.presets = try ProxyPresets(presetDefinitions)  // checked in validate()
            configuration.onlyPresets = onlyPresets
            if let watermarkPath, !watermarkPath.isEmpty {
                do throws(ProxyWatermark.LoadError) {
                    configuration.watermark = try ProxyWatermark(
                        contentsOfFile: watermarkPath, opacity: watermarkOpacity ?? 1)
                } catch {
                    throw CLIError(error.description)
                }
            }

            let logger = Logger(label: "webimage.serve")
            if let cacheDir {
                // Entries live as long as clients may keep the answer (--ttl): the source URL is taken as
                // immutable for that long either way.
                configuration.resultCache = ImageDiskCache(
                    directory: URL(fileURLWithPath: cacheDir, isDirectory: true),
                    byteLimit: ImageProxyConfiguration.byteCount(cacheSize) ?? 0, maximumAge: TimeInterval(ttl),
                    logger: logger)
            }
            if let bytes = ImageProxyConfiguration.byteCount(sourceCacheSize), bytes > 0 {
                configuration.sourceCache = HTTPCache(memoryCapacity: bytes, directory: nil, logger: logger)
            }
            if allowUnsigned {
                logger.warning("--allow-unsigned: requests signed 'insecure' are served; never use this in production")
            }
            let host = self.host ?? "127.0.0.1"
            let server = ProxyServer(
                proxy: ImageProxy(configuration: configuration, logger: logger), host: host, port: port ?? 8080,
                drainTimeout: Self.duration(drainTimeout), drainDelay: Self.duration(drainDelay), logger: logger)
            try await server.run { port in
                Console.write("webimage serve: listening on http://\(host):\(port)\n", to: .standardOutput)
            }
        }

        /// The longest --deadline, --drain-timeout and --drain-delay: a day.
        static let longestWait: Double = 86_400
        /// The most --max-concurrency: far past any machine's cores, each slot a decode in memory.
        static let mostJobs = 4096
        /// The most --max-queue.
        static let mostQueued = 1_000_000

        /// The store of `s3://` sources with `--use-s3` or `IMGPROXY_USE_S3`: the `AWS_*` variables, with
        /// `IMGPROXY_S3_ENDPOINT` and `IMGPROXY_S3_REGION` (imgproxy's) winning over theirs; nil without S3.
        static func s3Configuration(useS3: Bool, _ environment: [String: String]) throws -> S3Configuration? {
            var enabled = useS3
            if !enabled, let text = environment["IMGPROXY_USE_S3"] {
                guard let value = boolean(text) else {
                    throw ValidationError("IMGPROXY_USE_S3 must be true or false, got '\(text)'.")
                }
                enabled = value
            }
            guard enabled else { return nil }
            var variables = environment
            if let endpoint = environment["IMGPROXY_S3_ENDPOINT"] { variables["AWS_ENDPOINT_URL_S3"] = endpoint }
            if let region = environment["IMGPROXY_S3_REGION"] { variables["AWS_REGION"] = region }
            do {
                return try S3Configuration.fromEnvironment(variables)
            } catch {
                throw ValidationError("--use-s3 (IMGPROXY_USE_S3): \(error.description)")
            }
        }

        /// The fallback image's bytes (checked to decode), status and TTL from `--fallback-image-path` or
        /// imgproxy's variables; nil without one.
        func fallbackImage(_ environment: [String: String]) throws -> (Data, Int, Int?)? {
            var image: Data?
            if let path = fallbackImagePath ?? environment["IMGPROXY_FALLBACK_IMAGE_PATH"] {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ValidationError(
                        "--fallback-image-path (IMGPROXY_FALLBACK_IMAGE_PATH): cannot read '\(path)'.")
                }
                image = data
            } else if let text = environment["IMGPROXY_FALLBACK_IMAGE_DATA"] {
                guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                    throw ValidationError("IMGPROXY_FALLBACK_IMAGE_DATA must be Base64.")
                }
                image = data
            }
            guard let image else { return nil }
            guard (try? ImageDecoderRegistry.shared.decode(image)) != nil else {
                throw ValidationError("the fallback image is not an image WebImage can decode.")
            }
            var status = 200
            if let text = environment["IMGPROXY_FALLBACK_IMAGE_HTTP_CODE"] {
                guard let code = Int(text), code == 0 || (100...599).contains(code) else {
                    throw ValidationError("IMGPROXY_FALLBACK_IMAGE_HTTP_CODE must be 0 or 100…599, got '\(text)'.")
                }
                status = code
            }
            var ttl: Int?
            if let text = environment["IMGPROXY_FALLBACK_IMAGE_TTL"], !text.isEmpty {
                guard let seconds = Int(text), seconds >= 0 else {
                    throw ValidationError("IMGPROXY_FALLBACK_IMAGE_TTL must be whole seconds, got '\(text)'.")
                }
                ttl = seconds == 0 ? nil : seconds
            }
            return (image, status, ttl)
        }

        /// A boolean environment value as imgproxy reads one (Go's `strconv.ParseBool`), nil for anything else.
        private static func boolean(_ text: String) -> Bool? {
            switch text {
            case "1", "t", "T", "true", "TRUE", "True": true
            case "0", "f", "F", "false", "FALSE", "False": false
            default: nil
            }
        }

        private static func duration(_ seconds: Double) -> Duration {
            .milliseconds(Int((seconds * 1000).rounded()))
        }
    }
}
