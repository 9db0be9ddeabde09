// swift-tools-version:6.1
// The benchmarks are a package of their own, so `make test` (and every package that depends on WebImage)
// never compiles them. `make bench` builds and runs them (see README.md here).
import Foundation
import PackageDescription

// A path dependency is known by its folder's name, which is whatever the clone was called.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let webImage = root.lastPathComponent

let package = Package(
    name: "WebImageBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..", traits: ["Tools"])],
    targets: [
        // The physical-limit client: one libcurl multi handle in C.
        .target(name: "CBenchCurl", path: "CBenchCurl", linkerSettings: [.linkedLibrary("curl")]),
        // The baseline decoders (TurboJPEG, libpng's simplified API, libwebp, libavif, libjxl, libheif) and the
        // file-set encoders (libheif's for the HEIC files).
        .target(
            name: "CBenchCodecs",
            path: "CBenchCodecs",
            linkerSettings: [
                .linkedLibrary("turbojpeg"), .linkedLibrary("png16"), .linkedLibrary("webp"), .linkedLibrary("avif"),
                .linkedLibrary("jxl"), .linkedLibrary("heif"),
            ]
        ),
        .executableTarget(
            name: "WebImageBench",
            dependencies: [
                .product(name: "WebImage", package: webImage),
                .product(name: "WebImageDataset", package: webImage),
                "CBenchCurl",
                "CBenchCodecs",
            ],
            path: "WebImageBench",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
