// swift-tools-version:6.1
import PackageDescription

// The library products (WebImage, WebImageCodecs) need only swift-log and swift-metrics. Everything else
// serves the programs built on them — the `webimage` command, its image proxy and its dataset engine —
// and is named only under the `Tools` trait, which is off unless asked for. SwiftPM resolves a
// dependency package only if a target reachable without disabled traits names it (test targets of a
// dependency count for nothing), so an app that depends on this package clones two packages, not 26
// (README, "Using WebImage in your package", has the measurement). Here, build with `--traits Tools`
// (the Makefile does): `swift build --traits Tools`, `swift test --traits Tools`.
let tools: TargetDependencyCondition? = .when(traits: ["Tools"])

let package = Package(
    name: "WebImage",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "WebImage", targets: ["WebImage"]),
        // Decoding, colour management, transformers and encoders alone: no curl, SQLite or downloader.
        .library(name: "WebImageCodecs", targets: ["WebImageCodecs"]),
        // The dataset engine: `webimage bulk`'s engine, Parquet reading and writing.
        .library(name: "WebImageDataset", targets: ["WebImageDataset"]),
        // The S3 client the dataset engine and the proxy share: SigV4, multipart uploads, listing, presigned URLs.
        .library(name: "WebImageObjectStore", targets: ["WebImageObjectStore"]),
        // The image proxy as a library: mount it in a Hummingbird application (`addProxyRoutes(_:under:)`).
        // Needs the `Tools` trait, which brings its server stack.
        .library(name: "WebImageProxy", targets: ["WebImageProxy"]),
        .executable(name: "webimage", targets: ["webimage"]),
        .executable(name: "thumbnailer", targets: ["thumbnailer"]),
    ],
    traits: [
        .trait(
            name: "Tools",
            description: "The webimage command, its image proxy (WebImageProxy) and dataset engine (WebImageDataset)."
        ),
        // Kept apart from `Tools` so `make demo` does not build it: swift-otel's OTLP/HTTP exporter brings
        // swift-protobuf, async-http-client and swift-nio-ssl's BoringSSL into the `webimage` binary.
        .trait(
            name: "OTel",
            description: "`webimage serve` exports its spans over OTLP/HTTP (swift-otel), set by the OTEL_* variables.",
            enabledTraits: ["Tools"]
        ),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // SHA-256 of each saved image in `webimage bulk`, and the HMAC of `webimage serve`'s signatures.
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        // `webimage serve`: the HTTP server and its service lifecycle.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // `webimage serve`'s `/metrics` in Prometheus's text format.
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // The proxy's spans (request, cache, fetch, decode, transform, encode); Hummingbird already needs it.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // Their OTLP/HTTP export from `webimage serve`, under the `OTel` trait; its gRPC exporter is left out.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // `webimage serve`'s IMGPROXY_* environment. Hummingbird's package already names it (so it is resolved
        // either way); no traits: only the environment provider is used, not its JSON files.
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: []),
    ],
    targets: [
        // C libraries. Each system library is a module map over Debian's headers; the variadic or
        // longjmp-based entry points get small C shims (see each target's header).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CWebP", pkgConfig: "libwebpdemux", providers: [.apt(["libwebp-dev"])]),
        .systemLibrary(name: "CGIF", providers: [.apt(["libgif-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // No pkgConfig for these two: their .pc files carry -D flags SwiftPM refuses (and warns about); the
        // headers are in /usr/include and the module maps name the libraries.
        .systemLibrary(name: "CAVIF", providers: [.apt(["libavif-dev"])]),
        .systemLibrary(name: "CHEIF", providers: [.apt(["libheif-dev"])]),
        .systemLibrary(name: "CJXL", providers: [.apt(["libjxl-dev"])]),
        .systemLibrary(name: "CLCMS", pkgConfig: "lcms2", providers: [.apt(["liblcms2-dev"])]),
        // zlib for the test server's gzip route, the gzip input of `webimage bulk`, Parquet's GZIP pages and
        // PNG's compressed XMP (libpng links it anyway).
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        // Parquet's SNAPPY and ZSTD pages (WebImageDataset only). Snappy has no .pc file; its module map names
        // the library.
        .systemLibrary(name: "CSnappy", providers: [.apt(["libsnappy-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .target(
            name: "CJPEG",
            linkerSettings: [.linkedLibrary("jpeg")]
        ),
        // The Lanczos resampler's opaque passes with AVX2 and FMA, chosen at run time.
        .target(name: "CPixelKernels"),
        // Keeps what a C library prints to stderr (libjxl's failed checks) per thread, for the log.
        .target(name: "CMessageCapture"),
        // An AV1 encode in a child process, so a stop check can end it (libavif has no cancel call).
        .target(name: "CAVIFChild", dependencies: ["CAVIF"]),
        // Debian's libpng-dev links png.h into /usr/include, so no header search path (and no unsafe compiler
        // flags, which SwiftPM refuses in a dependency) is needed.
        .target(
            name: "CPNG",
            linkerSettings: [.linkedLibrary("png16")]
        ),

        // A pthread-based lock that ThreadSanitizer understands (see Lock.swift for why not Mutex).
        .target(name: "Locking", swiftSettings: [.swiftLanguageMode(.v6)]),
        // The layers import downward only: WebImage uses WebImageCodecs and WebImageTransport, which know
        // nothing of it or of each other (see docs/ARCHITECTURE.md).
        .target(
            name: "WebImageCodecs",
            dependencies: [
                "Locking", "CWebP", "CJPEG", "CPNG", "CGIF", "CAVIF", "CHEIF", "CJXL", "CLCMS", "CPixelKernels",
                "CMessageCapture", "CAVIFChild",
                // zlib (libpng's own dependency) inflates a PNG's compressed XMP packet.
                "CZlib",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // libcurl, the destination policy and the HTTP types; knows nothing of images or of the downloader.
        // The only target that depends on CCurl: cookies, the object-store client and the version strings
        // reach libcurl through it (LayerBoundaryTests checks the imports).
        .target(
            name: "WebImageTransport",
            dependencies: ["Locking", "CCurl"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "WebImage",
            dependencies: [
                "WebImageCodecs", "WebImageTransport", "Locking", "CSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "LocalImageServer",
            dependencies: [
                "Locking",
                "CZlib",
                .product(name: "NIOCore", package: "swift-nio", condition: tools),
                .product(name: "NIOPosix", package: "swift-nio", condition: tools),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: tools),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The local server's HTTPS and HTTP/2 (`.selfSigned`, `.selfSignedHTTP2`), for the tests: kept apart
        // so that `webimage` (whose demo serves plain HTTP) builds neither swift-nio-ssl's BoringSSL nor
        // swift-nio-http2.
        .target(
            name: "LocalImageServerTLS",
            dependencies: [
                "LocalImageServer",
                .product(name: "NIOCore", package: "swift-nio", condition: tools),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: tools),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: tools),
                .product(name: "NIOHTTP2", package: "swift-nio-http2", condition: tools),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The image proxy behind `webimage serve`: imgproxy's URL grammar and signatures, fetch through the
        // downloader, process with the codecs, answer over Hummingbird.
        .target(
            name: "WebImageProxy",
            dependencies: [
                "WebImage", "WebImageCodecs", "WebImageObjectStore", "Locking",
                .product(name: "Hummingbird", package: "hummingbird", condition: tools),
                // The connection limit and the idle timeout (`ProxyServer.maximumConnections`, `readTimeout`).
                .product(name: "HummingbirdCore", package: "hummingbird", condition: tools),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: tools),
                .product(name: "Crypto", package: "swift-crypto", condition: tools),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: tools),
                .product(name: "NIOCore", package: "swift-nio", condition: tools),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus", condition: tools),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: tools),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The S3 client (SigV4 signing, multipart, listing) on the transport's blocking transfers: `bulk`'s
        // object storage and `serve`'s s3:// sources.
        .target(
            name: "WebImageObjectStore",
            dependencies: [
                "WebImageTransport",
                .product(name: "Crypto", package: "swift-crypto", condition: tools),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The dataset engine: the bulk engine (row readers, plan, shard runner, sample writers) on top of the
        // downloader, and its Parquet reader and writer.
        .target(
            name: "WebImageDataset",
            dependencies: [
                "WebImage", "WebImageTransport", "WebImageObjectStore", "Locking", "CSnappy", "CZstd", "CZlib",
                .product(name: "Crypto", package: "swift-crypto", condition: tools),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "webimage",
            dependencies: [
                "WebImage",
                "WebImageDataset",
                "WebImageObjectStore",
                "WebImageProxy",
                "LocalImageServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: tools),
                .product(name: "Configuration", package: "swift-configuration", condition: tools),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTel"])),
            ],
            path: "Examples/webimage",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The smallest embedding of the library: URLs in, PNG thumbnails out.
        .executableTarget(
            name: "thumbnailer",
            dependencies: ["WebImage"],
            path: "Examples/thumbnailer",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // What several test targets share: fixture paths, waits, child processes (the built `webimage`, curl,
        // moto's S3 server), log capture, a seeded generator. Not a test target (test targets cannot depend
        // on one another); of this package it names only Locking, so the codecs' tests stay free of the
        // other layers.
        .target(
            name: "TestSupport",
            dependencies: [
                "Locking",
                .product(name: "Logging", package: "swift-log", condition: tools),
            ],
            path: "Tests/TestSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The corpus served by LocalImageServer (`Fixtures.server`), for the test targets that may use it.
        .target(
            name: "ServerTestSupport",
            dependencies: ["TestSupport", "LocalImageServer"],
            path: "Tests/ServerTestSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Decoding, colour, transformers and encoders, with nothing above the codecs: no downloader, curl or server.
        .testTarget(
            name: "WebImageCodecsTests",
            dependencies: [
                "WebImageCodecs", "TestSupport", "Locking",
                // LittleCMS and the libjpeg shim, so colour tests drive the C libraries themselves; zlib to
                // write compressed PNG chunks.
                "CLCMS", "CJPEG", "CZlib",
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // libcurl's transport, its destination policy and its parsers, with no downloader above them.
        .testTarget(
            name: "WebImageTransportTests",
            dependencies: [
                "WebImageTransport", "LocalImageServer", "LocalImageServerTLS", "Locking", "TestSupport",
                "ServerTestSupport",
                // Tests that drive easy and share handles themselves.
                "CCurl",
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "WebImageTests",
            dependencies: [
                "WebImage", "WebImageCodecs", "WebImageTransport", "LocalImageServer", "LocalImageServerTLS",
                "Locking", "TestSupport", "ServerTestSupport",
                // DestinationPolicyTests seeds the DNS cache of a share handle itself.
                "CCurl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The S3 client against moto's S3 server and a hostile store of the tests' own.
        .testTarget(
            name: "WebImageObjectStoreTests",
            dependencies: ["WebImageObjectStore", "LocalImageServer", "Locking", "TestSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The dataset engine and Parquet.
        .testTarget(
            name: "WebImageDatasetTests",
            dependencies: ["WebImageDataset", "WebImage", "LocalImageServer", "Locking", "TestSupport", "CZlib"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The image proxy's own types: URL grammar, signatures, scheduling, its caches and metrics.
        .testTarget(
            name: "WebImageProxyTests",
            dependencies: [
                "WebImageProxy", "WebImage", "WebImageCodecs", "LocalImageServer", "Locking", "TestSupport",
                "ServerTestSupport",
                // ProxyRoutesTests mounts the proxy in a Hummingbird application of its own.
                .product(name: "Hummingbird", package: "hummingbird", condition: tools),
                // READMESignatureExample: the README's signing example, with swift-crypto.
                .product(name: "Crypto", package: "swift-crypto", condition: tools),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The built `webimage` run as a child process (CLIRunner, ServeProcess): every command, its output
        // and exit codes. The library is here only to read what the commands write.
        .testTarget(
            name: "WebImageCLITests",
            dependencies: [
                "WebImage", "LocalImageServer", "LocalImageServerTLS", "Locking", "TestSupport", "ServerTestSupport",
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The tests' own loopback servers, checked with the curl command.
        .testTarget(
            name: "LocalImageServerTests",
            dependencies: ["LocalImageServer", "LocalImageServerTLS", "TestSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
