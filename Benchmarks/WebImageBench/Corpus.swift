import CBenchCodecs
import Foundation
import WebImage

/// The file set nginx serves, generated into a temporary directory on every run (deterministic: the
/// same bytes every time).
///
/// ```
/// www/small/s0000.bin … s1999.bin   2,000 × 20 KiB   pseudo-random bytes
/// www/large/l00.bin … l19.bin       20 × 5 MiB       pseudo-random bytes
/// www/photos/pNN.{jpg,webp,png}      2 MP (1632×1224) images made from the corpus photos
/// www/photos/pNN.{avif,jxl}          the same, encoded by avifenc (speed 8) and cjxl (distance 1, effort 3)
/// www/photos/pNN.heic                the same, encoded by libheif (x265, quality 50, 4:2:0, no alpha)
/// www/big/54mp.jpg                   9000×6000 JPEG, astronaut-36mp.jpg upscaled
/// ```
struct Corpus {
    static let smallCount = 2000
    static let smallSize = 20 * 1024
    static let largeCount = 20
    static let largeSize = 5 * 1024 * 1024
    static let photoSize = PixelSize(width: 1632, height: 1224)
    static let bigSize = PixelSize(width: 9000, height: 6000)
    static let photoFormats = ["jpg", "webp", "png"]
    /// AVIF and JPEG XL are made from the PNGs by libavif's and libjxl's command-line encoders (`make
    /// deps-bench` installs them); HEIC from the same pixels by libheif's HEVC encoder (x265, built into
    /// Debian's libheif), called from `CBenchCodecs` at libheif's default quality of 50, as an opaque
    /// 4:2:0 photo like a phone's.
    static let nextGenerationFormats = ["avif", "jxl", "heic"]
    static let heicQuality: Int32 = 50

    let root: URL
    let sourceDirectory: URL

    var www: URL { root.appendingPathComponent("www") }

    func smallPaths() -> [String] { (0..<Self.smallCount).map { String(format: "/small/s%04d.bin", $0) } }
    func largePaths() -> [String] { (0..<Self.largeCount).map { String(format: "/large/l%02d.bin", $0) } }
    func photoPaths(_ ext: String) -> [String] { (0..<photoNames.count).map { "/photos/p\($0).\(ext)" } }
    var bigPath: String { "/big/54mp.jpg" }

    /// Where each 2 MP photo comes from: a crop of the 36 MP astronaut (at half size) or a whole
    /// smaller corpus photo, resized to `photoSize`.
    let photoNames: [(file: String, crop: (x: Int, y: Int)?)] = [
        ("astronaut-36mp.jpg", (0, 0)), ("astronaut-36mp.jpg", (1368, 0)), ("astronaut-36mp.jpg", (0, 1776)),
        ("astronaut-36mp.jpg", (1368, 1776)), ("astronaut-36mp.jpg", (684, 888)),
        ("coffee-rgb.png", nil), ("rocket-cmyk.jpg", nil), ("chelsea-palette.png", nil),
    ]

    func generate() throws {
        let fm = FileManager.default
        for folder in ["small", "large", "photos", "big", "tiny"] {
            try fm.createDirectory(at: www.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        var random = SplitMix(seed: 0x5EB1_A5E5)
        let noise = (0..<(Self.largeSize + Self.smallCount * 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        for (index, path) in smallPaths().enumerated() {
            try Data(noise[(index * 64)..<(index * 64 + Self.smallSize)]).write(to: url(path))
        }
        for (index, path) in largePaths().enumerated() {
            try Data(noise[(index * 64)..<(index * 64 + Self.largeSize)]).write(to: url(path))
        }
        try generatePhotos()
        try generateBigJPEG()
        try generateTinyPNG()
    }

    /// Only the 2 MP photos (`www/photos`), for the serve workload run alone.
    func generatePhotoSet() throws {
        try FileManager.default.createDirectory(
            at: www.appendingPathComponent("photos"), withIntermediateDirectories: true)
        try generatePhotos()
    }

    /// The per-core dataset sizes: 0.5 MP and 8 MP JPEGs (quality 90) made from the 2 MP photos (the 8 MP
    /// ones upscaled 2×), `/scaled/{label}/pN.jpg`; the 2 MP set is `/photos`. Call after the photo set.
    static let perCoreSizes: [(label: String, size: PixelSize)] = [
        ("0.5mp", PixelSize(width: 816, height: 612)), ("8mp", PixelSize(width: 3264, height: 2448)),
    ]

    func generatePerCoreSets() throws {
        for (label, size) in Self.perCoreSizes {
            try FileManager.default.createDirectory(
                at: www.appendingPathComponent("scaled/\(label)"), withIntermediateDirectories: true)
            for index in photoNames.indices {
                let png = try Data(contentsOf: url("/photos/p\(index).png"))
                guard let frame = try ImageDecoderRegistry.shared.decode(png).frames.first else {
                    throw BenchError("p\(index).png has no frame")
                }
                try writeJPEG(Self.resize(frame, to: size), to: "/scaled/\(label)/p\(index).jpg")
            }
        }
    }

    func scaledPaths(_ label: String) -> [String] { photoNames.indices.map { "/scaled/\(label)/p\($0).jpg" } }

    private func writeJPEG(_ frame: ImageFrame, to path: String) throws {
        try frame.pixels.withUnsafeBufferPointer { pixels in
            guard let base = pixels.baseAddress else { throw BenchError("empty frame") }
            var output: UnsafeMutablePointer<UInt8>?
            var length = 0
            guard wi_bench_tj_encode(base, Int32(frame.width), Int32(frame.height), 90, &output, &length) == 0,
                let jpeg = output
            else { throw BenchError("JPEG encode failed") }
            try Data(bytes: jpeg, count: length).write(to: url(path))
            wi_bench_tj_free(jpeg)
        }
    }

    /// Only the tiny PNG (the DNS workload's image).
    func generateTinySet() throws {
        try FileManager.default.createDirectory(
            at: www.appendingPathComponent("tiny"), withIntermediateDirectories: true)
        try generateTinyPNG()
    }

    func url(_ path: String) -> URL { www.appendingPathComponent(String(path.dropFirst())) }

    private func decodeSource(_ name: String, options: ImageDecodingOptions = .default) throws -> ImageFrame {
        let data = try Data(contentsOf: sourceDirectory.appendingPathComponent(name))
        let image = try ImageDecoderRegistry.shared.decode(data, options: options)
        guard let frame = image.frames.first else { throw BenchError("\(name) has no frame") }
        return frame
    }

    private func generatePhotos() throws {
        let half = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 3000, height: 3000))
        let astronaut = try decodeSource("astronaut-36mp.jpg", options: half)
        let size = Self.photoSize
        for (index, source) in photoNames.enumerated() {
            let frame: ImageFrame
            if let crop = source.crop {
                frame = Self.crop(astronaut, x: crop.x, y: crop.y, size: size)
            } else {
                frame = Self.resize(try decodeSource(source.file), to: size)
            }
            try write(frame, to: "/photos/p\(index)")
            let png = url("/photos/p\(index).png").path
            try Self.run(["avifenc", "-s", "8", "-j", "1", png, url("/photos/p\(index).avif").path])
            try Self.run(["cjxl", png, url("/photos/p\(index).jxl").path, "-d", "1", "-e", "3", "--num_threads=1"])
        }
    }

    /// Runs an encoder from PATH, quietly; throws when it is missing or fails.
    private static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("\(arguments[0]) failed (status \(process.terminationStatus)); run `make deps-bench`")
        }
    }

    private func write(_ frame: ImageFrame, to stem: String) throws {
        try Self.writeJPEGWebPPNG(frame, to: url(stem).path, jpegQuality: 90, webpQuality: 80)
        try frame.pixels.withUnsafeBufferPointer { pixels in
            guard let base = pixels.baseAddress else { throw BenchError("empty frame") }
            var output: UnsafeMutablePointer<UInt8>?
            var length = 0
            guard
                wi_bench_heif_encode(
                    base, Int32(frame.width), Int32(frame.height), Self.heicQuality, &output, &length) == 0,
                let heic = output
            else { throw BenchError("HEIC encode failed (libheif without its x265 encoder?)") }
            try Data(bytes: heic, count: length).write(to: url(stem + ".heic"))
            wi_bench_heif_free(heic)
        }
    }

    /// `frame` as `stem.jpg` (libjpeg-turbo at `jpegQuality`), `stem.webp` (libwebp at `webpQuality`) and
    /// `stem.png`, `stem` a path without extension.
    static func writeJPEGWebPPNG(_ frame: ImageFrame, to stem: String, jpegQuality: Int32, webpQuality: Float) throws {
        let width = Int32(frame.width)
        let height = Int32(frame.height)
        try frame.pixels.withUnsafeBufferPointer { pixels in
            guard let base = pixels.baseAddress else { throw BenchError("empty frame") }
            var output: UnsafeMutablePointer<UInt8>?
            var length = 0
            guard wi_bench_tj_encode(base, width, height, jpegQuality, &output, &length) == 0, let jpeg = output else {
                throw BenchError("JPEG encode failed")
            }
            try Data(bytes: jpeg, count: length).write(to: URL(fileURLWithPath: stem + ".jpg"))
            wi_bench_tj_free(jpeg)
            output = nil
            guard wi_bench_webp_encode(base, width, height, webpQuality, &output, &length) == 0, let webp = output
            else { throw BenchError("WebP encode failed") }
            try Data(bytes: webp, count: length).write(to: URL(fileURLWithPath: stem + ".webp"))
            wi_bench_webp_free(webp)
            output = nil
            guard wi_bench_png_encode(base, width, height, &output, &length) == 0, let png = output else {
                throw BenchError("PNG encode failed")
            }
            try Data(bytes: png, count: length).write(to: URL(fileURLWithPath: stem + ".png"))
            wi_bench_png_free(png)
        }
    }

    /// `www/tiny/t.png`: a 64×48 photo for the bulk memory workload, where the image is not the point.
    var tinyPath: String { "/tiny/t.png" }

    private func generateTinyPNG() throws {
        let tiny = Self.resize(try decodeSource("coffee-rgb.png"), to: PixelSize(width: 64, height: 48))
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = tiny.pixels.withUnsafeBufferPointer {
            wi_bench_png_encode($0.baseAddress!, Int32(tiny.width), Int32(tiny.height), &output, &length)
        }
        guard status == 0, let png = output else { throw BenchError("tiny PNG encode failed") }
        try Data(bytes: png, count: length).write(to: url(tinyPath))
        wi_bench_png_free(png)
    }

    private func generateBigJPEG() throws {
        let source = try decodeSource("astronaut-36mp.jpg")
        let big = Self.resize(source, to: Self.bigSize)
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = big.pixels.withUnsafeBufferPointer {
            wi_bench_tj_encode($0.baseAddress!, Int32(big.width), Int32(big.height), 90, &output, &length)
        }
        guard status == 0, let jpeg = output else { throw BenchError("54 MP JPEG encode failed") }
        try Data(bytes: jpeg, count: length).write(to: url(bigPath))
        wi_bench_tj_free(jpeg)
    }

    static func crop(_ frame: ImageFrame, x: Int, y: Int, size: PixelSize) -> ImageFrame {
        var pixels = [UInt8](repeating: 0, count: size.width * size.height * 4)
        for row in 0..<size.height {
            let from = (y + row) * frame.bytesPerRow + x * 4
            let to = row * size.width * 4
            pixels[to..<(to + size.width * 4)] = frame.pixels[from..<(from + size.width * 4)]
        }
        return ImageFrame(width: size.width, height: size.height, bytesPerRow: size.width * 4, pixels: pixels)
    }

    /// Bilinear resize (any direction), enough to make photo-like test images of a given size.
    static func resize(_ frame: ImageFrame, to size: PixelSize) -> ImageFrame {
        var pixels = [UInt8](repeating: 0, count: size.width * size.height * 4)
        let scaleX = Double(frame.width - 1) / Double(max(1, size.width - 1))
        let scaleY = Double(frame.height - 1) / Double(max(1, size.height - 1))
        frame.pixels.withUnsafeBufferPointer { source in
            pixels.withUnsafeMutableBufferPointer { target in
                for y in 0..<size.height {
                    let sy = Double(y) * scaleY
                    let y0 = min(Int(sy), frame.height - 1)
                    let y1 = min(y0 + 1, frame.height - 1)
                    let fy = sy - Double(y0)
                    for x in 0..<size.width {
                        let sx = Double(x) * scaleX
                        let x0 = min(Int(sx), frame.width - 1)
                        let x1 = min(x0 + 1, frame.width - 1)
                        let fx = sx - Double(x0)
                        for channel in 0..<4 {
                            func at(_ px: Int, _ py: Int) -> Double {
                                Double(source[py * frame.bytesPerRow + px * 4 + channel])
                            }
                            let top = at(x0, y0) * (1 - fx) + at(x1, y0) * fx
                            let bottom = at(x0, y1) * (1 - fx) + at(x1, y1) * fx
                            target[(y * size.width + x) * 4 + channel] = UInt8((top * (1 - fy) + bottom * fy).rounded())
                        }
                    }
                }
            }
        }
        return ImageFrame(width: size.width, height: size.height, bytesPerRow: size.width * 4, pixels: pixels)
    }
}

/// A small deterministic generator (SplitMix64) so every run serves the same bytes.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
