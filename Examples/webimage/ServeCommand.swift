import ArgumentParser
import Foundation
import Logging
import WebImage
import WebImageProxy

extension WebImageCLI {
    /// `webimage serve`: the imgproxy-compatible image proxy (`WebImageProxy`) on an HTTP port.
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve resized images over HTTP with imgproxy's URL format and signatures.",
            discussion: """
                GET /{signature}/{options}/plain/{source-url}[@{ext}] or /{signature}/{options}/{base64url}[.{ext}] \
                fetches the source, resizes it and answers in the requested format (else JPEG, or PNG with \
                alpha; WebP or AVIF from Accept with --enable-webp-detection or --enable-avif-detection). Options: imgproxy's rs, s, rt, w, h, mw, mh, z, dpr, el, ex, exar, g, \
                c, t, pd, ar, rot, fl, bg, bl, sh, pix, wm (--watermark-path), q, fq, mb, f, sm, kcr, scp, eth, skp, \
                raw, cb, exp, fn, att and pr (--preset). Sources: http(s), local:// (--local-filesystem-root), \
                s3:// (--use-s3). \
                GET /health answers 200 (liveness), GET \
                /health/ready 200 or 503 while draining (readiness), GET /metrics Prometheus's text format. Only \
                public source addresses are fetched unless --allow-destination names a network. SIGTERM drains \
                gracefully: readiness turns 503, the listener closes after --drain-delay, requests in flight \
                get --drain-timeout to finish, and the exit status is 0.

                imgproxy's IMGPROXY_* variables configure it too (IMGPROXY_KEY, IMGPROXY_SALT, IMGPROXY_BIND, \
                IMGPROXY_QUALITY, …; the README lists them); a flag wins over its variable, a malformed value \
                stops the start, and a variable serve does not read is logged.

                Examples:
                  webimage serve --key $KEY --salt $SALT --port 8080
                  IMGPROXY_KEY=$KEY IMGPROXY_SALT=$SALT IMGPROXY_BIND=:8080 webimage serve
                  webimage serve --allow-unsigned --allow-destination 127.0.0.0/8   # local development
                """)

        @Option(
            help: "The address to listen on (env WEBIMAGE_HOST, else IMGPROXY_BIND's host; 127.0.0.1 by default).")
        var host: String?

        @Option(
            help:
                "The port to listen on, 0 for any free one (env WEBIMAGE_PORT, else IMGPROXY_BIND's; 8080 by default).")
        var port: Int?

        @Option(
            name: .customLong("key"),
            help: ArgumentHelp(
                "A hex signing key (repeatable, paired in order with --salt, for key rotation; env WEBIMAGE_KEY or "
                    + "IMGPROXY_KEY, comma-separated, which ps does not show).", valueName: "hex"))
        var keys: [String] = []

        @Option(
            name: .customLong("salt"),
            help: ArgumentHelp(
                "The hex salt of the --key at the same position (env WEBIMAGE_SALT or IMGPROXY_SALT).", valueName: "hex"
            ))
        var salts: [String] = []

        @Option(help: "How many bytes of the HMAC a signature has, 1…32 (env IMGPROXY_SIGNATURE_SIZE; 32 by default).")
        var signatureSize: Int?

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
                "Only fetch source URLs under this prefix, redirects included (repeatable; env IMGPROXY_ALLOWED_SOURCES, "
                    + "comma-separated): scheme, host (*.example.com for subdomains), port and path on segment "
                    + "boundaries; any source by default.",
                valueName: "prefix"))
        var allowedSources: [String] = []

        @Option(help: "The largest source file in bytes (env IMGPROXY_MAX_SRC_FILE_SIZE; 32 MiB by default).")
        var maxSourceBytes: Int64?

        @Option(
            help:
                "The most pixels a source image may have (env IMGPROXY_MAX_SRC_RESOLUTION, in megapixels; 16.8 million by default)."
        )
        var maxSourcePixels: Int?

        @Option(
            help: ArgumentHelp(
                "The most frames an animated source may have; more is answered 422 (env "
                    + "IMGPROXY_MAX_ANIMATION_FRAMES, whose 1 makes every result a still of the first frame; 256 by "
                    + "default).", valueName: "count"))
        var maxAnimationFrames: Int?

        @Option(
            help:
                "The largest width or height a result may be asked for, after dpr (env IMGPROXY_MAX_RESULT_DIMENSION; 8192 by default)."
        )
        var maxResultDimension: Int?

        @Flag(
            help: ArgumentHelp(
                "Let a URL lower these limits for itself with msr, msfs, maf, mafr and mrd (env "
                    + "IMGPROXY_ALLOW_SECURITY_OPTIONS); a URL using one is answered 403 otherwise. They never "
                    + "raise a limit."))
        var allowSecurityOptions = false

        @Option(
            help:
                "Seconds a request may take, fetch and processing together, before it is answered 504 (env IMGPROXY_TIMEOUT; 30 by default)."
        )
        var deadline: Double?

        @Option(help: "Seconds responses may be cached, Cache-Control max-age (env IMGPROXY_TTL; one year by default).")
        var ttl: Int?

        @Option(
            help:
                "The quality of every format --format-quality does not name, 1…100 (env IMGPROXY_QUALITY; 80 by default)."
        )
        var quality: Int?

        @Option(
            help: ArgumentHelp(
                "Qualities per format, e.g. webp=79,avif=63 (env IMGPROXY_FORMAT_QUALITY; imgproxy's webp=79,avif=63 by "
                    + "default). A URL's q and fq win.", valueName: "format=quality,…"))
        var formatQuality: String?

        @Flag(
            inversion: .prefixedEnableDisable,
            help: ArgumentHelp(
                "Answer Accept: image/webp with WebP when the URL names no format (env IMGPROXY_AUTO_WEBP or "
                    + "IMGPROXY_ENABLE_WEBP_DETECTION, IMGPROXY_ENFORCE_WEBP to override the URL's format; off by "
                    + "default, as in imgproxy). Any detection on adds Vary: Accept."))
        var webpDetection: Bool?

        @Flag(
            inversion: .prefixedEnableDisable,
            help: ArgumentHelp(
                "Answer Accept: image/avif with AVIF when the URL names no format (env IMGPROXY_AUTO_AVIF or "
                    + "IMGPROXY_ENABLE_AVIF_DETECTION, IMGPROXY_ENFORCE_AVIF; off by default: an AVIF encode costs "
                    + "several times a WebP or JPEG one, and the client would pick it). @avif in a signed URL always "
                    + "works."))
        var avifDetection: Bool?

        @Flag(
            inversion: .prefixedEnableDisable,
            help: ArgumentHelp(
                "Answer Accept: image/jxl with JPEG XL when the URL names no format, once the proxy encodes it (env "
                    + "IMGPROXY_AUTO_JXL or IMGPROXY_ENABLE_JXL_DETECTION, IMGPROXY_ENFORCE_JXL; off by default)."))
        var jxlDetection: Bool?

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
                "How many results may be made at once (fetch, decode, resize, encode; env IMGPROXY_WORKERS); the number of cores by default."
        )
        var maxConcurrency: Int?

        @Option(
            help:
                "How many more results may wait for a slot; past that requests get 503 with Retry-After (env IMGPROXY_REQUESTS_QUEUE_SIZE; 64 by default)."
        )
        var maxQueue: Int?

        @Option(
            help: ArgumentHelp(
                "Seconds a source's whole download may take, redirects included, however steadily it sends, before "
                    + "the request is answered 504; at most --deadline (env IMGPROXY_DOWNLOAD_TIMEOUT; --deadline's "
                    + "by default).", valueName: "seconds"))
        var downloadTimeout: Double?

        @Option(
            help: ArgumentHelp(
                "Seconds a connection may go without sending a whole request head (or body part), idle between "
                    + "requests included, before it is closed (env IMGPROXY_READ_REQUEST_TIMEOUT; 10 by default).",
                valueName: "seconds"))
        var readTimeout: Double?

        @Option(
            help: ArgumentHelp(
                "The most connections open at once, 0 for no limit; more wait unaccepted until one closes (env "
                    + "IMGPROXY_MAX_CLIENTS; 2048 by default).", valueName: "count"))
        var maxClients: Int?

        @Option(
            name: .customLong("path-prefix"),
            help: ArgumentHelp(
                "Answer every path under this prefix, such as /images: image and /info URLs, /health, "
                    + "/health/ready and /metrics; other paths are 404, and a signature covers the path after it "
                    + "(env IMGPROXY_PATH_PREFIX); none by default.", valueName: "path"))
        var pathPrefix: String?

        @Option(
            name: .customLong("metrics-bind"),
            help: ArgumentHelp(
                "Answer the metrics on this address, host:port or :port, instead of /metrics on the main port (env "
                    + "IMGPROXY_PROMETHEUS_BIND).", valueName: "host:port"))
        var metricsBind: String?

        @Option(
            name: .customLong("metrics-namespace"),
            help: ArgumentHelp(
                "Start every metric name with this and _ (env IMGPROXY_PROMETHEUS_NAMESPACE).", valueName: "name"))
        var metricsNamespace: String?

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
            name: .customLong("watermark-url"),
            help: ArgumentHelp(
                "The watermark fetched once at the start from this URL, as sources are (env IMGPROXY_WATERMARK_URL; "
                    + "IMGPROXY_WATERMARK_DATA in Base64, then IMGPROXY_WATERMARK_PATH, come first as in imgproxy).",
                valueName: "url"))
        var watermarkURL: String?

        @Option(
            help: ArgumentHelp(
                "The base opacity every wm: opacity is multiplied by, greater than 0 and at most 1 (env "
                    + "IMGPROXY_WATERMARK_OPACITY; 1 when neither is given).", valueName: "opacity"))
        var watermarkOpacity: Double?

        @Option(
            name: .customLong("local-filesystem-root"),
            help: ArgumentHelp(
                "Serve local:///path sources from this directory, never outside it (env "
                    + "IMGPROXY_LOCAL_FILESYSTEM_ROOT); none by default.", valueName: "directory"))
        var localFilesystemRoot: String?

        @Option(
            name: .customLong("base-url"),
            help: ArgumentHelp(
                "Put this before every source URL that does not start with it (env IMGPROXY_BASE_URL).",
                valueName: "url"))
        var baseURL: String?

        @Flag(
            name: .customLong("use-s3"),
            help: ArgumentHelp(
                "Serve s3://bucket/key sources (env IMGPROXY_USE_S3), with the AWS_* credentials and region, and "
                    + "IMGPROXY_S3_ENDPOINT or AWS_ENDPOINT_URL for a store other than AWS."))
        var useS3 = false

        @Option(
            name: .customLong("fallback-image-path"),
            help: ArgumentHelp(
                "Answer this image, processed as the URL asks, when a source cannot be fetched (env "
                    + "IMGPROXY_FALLBACK_IMAGE_PATH, or IMGPROXY_FALLBACK_IMAGE_DATA in Base64; status "
                    + "IMGPROXY_FALLBACK_IMAGE_HTTP_CODE, 200 by default; max-age IMGPROXY_FALLBACK_IMAGE_TTL).",
                valueName: "file"))
        var fallbackImagePath: String?

        @Option(
            name: .customLong("fallback-image-url"),
            help: ArgumentHelp(
                "The fallback image fetched once at the start from this URL, as sources are (env "
                    + "IMGPROXY_FALLBACK_IMAGE_URL; IMGPROXY_FALLBACK_IMAGE_DATA, then _PATH, come first as in "
                    + "imgproxy).", valueName: "url"))
        var fallbackImageURL: String?

        func validate() throws {
            _ = try self.settings(ProcessInfo.processInfo.environment)
            guard (ImageProxyConfiguration.byteCount(cacheSize) ?? 0) > 0 else {
                throw ValidationError("--cache-size takes a size such as 500M or 2G, got '\(cacheSize)'.")
            }
            guard sourceCacheSize == "0" || (ImageProxyConfiguration.byteCount(sourceCacheSize) ?? 0) > 0 else {
                throw ValidationError(
                    "--source-cache-size takes a size such as 64M, or 0, got '\(sourceCacheSize)'.")
            }
            guard (0...Self.longestWait).contains(drainTimeout), (0...Self.longestWait).contains(drainDelay) else {
                throw ValidationError(
                    "--drain-timeout and --drain-delay must be 0 or more and at most \(Int(Self.longestWait)) seconds.")
            }
        }

        func run() async throws {
            let settings = try self.settings(ProcessInfo.processInfo.environment)  // checked in validate()
            var configuration = settings.configuration
            try await loadImages(settings, into: &configuration)
            let logger = Logger(label: "webimage.serve")
            let tuned = Self.tuneAllocator(environment: ProcessInfo.processInfo.environment)
            let thresholds = tuned ? "set (mmap 16 MiB, trim 32 MiB)" : "left as the environment says"
            logger.debug("malloc thresholds \(thresholds)")
            for name in settings.unreadVariables {
                let hint = ImgproxyEnvironment.suggestion(for: name).map { " (did you mean \($0)?)" } ?? ""
                let reason = "an imgproxy feature it does not have or a misspelt name"
                logger.warning("\(name) is not a setting webimage serve reads, \(reason); ignored\(hint)")
            }
            if let cacheDir {
                // Entries live as long as clients may keep the answer (--ttl): the source URL is taken as
                // immutable for that long either way.
                configuration.resultCache = ImageDiskCache(
                    directory: URL(fileURLWithPath: cacheDir, isDirectory: true),
                    byteLimit: ImageProxyConfiguration.byteCount(cacheSize) ?? 0,
                    maximumAge: TimeInterval(configuration.cacheMaxAge), logger: logger)
            }
            if let bytes = ImageProxyConfiguration.byteCount(sourceCacheSize), bytes > 0 {
                configuration.sourceCache = HTTPCache(memoryCapacity: bytes, directory: nil, logger: logger)
            }
            if allowUnsigned {
                logger.warning("--allow-unsigned: requests signed 'insecure' are served; never use this in production")
            }
            let host = settings.host
            var server = ProxyServer(
                proxy: ImageProxy(configuration: configuration, logger: logger), host: host, port: settings.port,
                drainTimeout: Self.duration(drainTimeout), drainDelay: Self.duration(drainDelay), logger: logger)
            server.readTimeout = settings.readTimeout
            server.maximumConnections = settings.maximumConnections
            server.metricsAddress = settings.metricsAddress
            server.services = try Self.tracingServices(ProcessInfo.processInfo.environment, logger: logger)
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
    }
}
