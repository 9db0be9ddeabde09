import Foundation
import Testing

@testable import WebImageCodecs

@Suite("Size limits, scale-down and thumbnails", .timeLimit(.minutes(5)))
struct ScaleDownDecodingTests {
    /// Peak resident memory of this process in bytes (VmHWM), or nil off Linux.
    private static func peakResidentBytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            return kilobytes.map { $0 * 1024 }
        }
        return nil
    }

    /// Resets VmHWM to the current RSS (Linux: write "5" to /proc/self/clear_refs).
    private static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    @Test(
        "The 100000×100000 PNG bomb is refused from its header, without a large allocation",
        arguments: [false, true])
    func bombIsRefused(scaleDown: Bool) throws {
        let data = try DecodingCorpus.data("bomb-100000x100000.png")
        Self.resetPeak()
        let before = Self.peakResidentBytes()
        let options = ImageDecodingOptions(scaleDownLargeImages: scaleDown)
        let error = try #require(throws: ImageCodecError.self) {
            try ImageDecoderRegistry.shared.decode(data, options: options)
        }
        #expect(error.code == .badImageData)
        #expect(error.message.contains("100000×100000"))
        #expect(error.message.contains("refused before allocating"))
        // 40 GB would be allocated at full size; other tests running alongside stay far below this bound.
        if let before, let after = Self.peakResidentBytes() {
            #expect(after - before < 512 * 1024 * 1024, "peak RSS grew by \(after - before) bytes")
        }
        // The incremental path refuses too (the progressive PNG reader checks the header before allocating).
        let incremental = try #require(ImageDecoderRegistry.shared.makeIncrementalDecoder(for: data, options: options))
        #expect(incremental.decodePartial(data) == nil)
        #expect(throws: ImageCodecError.self) { try incremental.decodeFinal(data) }
    }

    @Test(
        "maximumImagePixels is checked against declared dimensions for every format",
        arguments: ["astronaut-baseline.jpg", "coffee-rgb.png", "chelsea.gif", "astronaut-lossy.webp"])
    func maximumPixels(file: String) throws {
        let data = try DecodingCorpus.data(file)
        let error = try #require(throws: ImageCodecError.self) {
            try ImageDecoderRegistry.shared.decode(data, options: .init(maximumImagePixels: 1000))
        }
        #expect(error.code == .badImageData)
        #expect(error.message.contains("maximumImagePixels"))
    }

    @Test("The 36 MP JPEG scales down with DCT scaling to at most 60 MB, aspect kept")
    func jpegScaleDown() throws {
        let data = try DecodingCorpus.data("astronaut-36mp.jpg")
        let options = ImageDecodingOptions(scaleDownLargeImages: true)
        let image = try ImageDecoderRegistry.shared.decode(data, options: options)
        #expect(image.pixelByteCount <= options.scaleDownLimitBytes)
        #expect(image.originalWidth == 6000 && image.originalHeight == 6000)
        #expect(image.width == image.height)
        // DCT scaling 1/2 is the largest that fits 60 MB: 3000×3000 (36 MB), no further resampling.
        #expect(image.width == 3000, "scale used: \(image.width)/6000")
        #expect(!image.isPartial)
    }

    @Test(
        "Scale-down keeps aspect for PNG (box averaging while reading) and WebP (use_scaling)",
        arguments: [
            "coffee-rgb.png", "coffee-interlaced.png", "astronaut-lossy.webp", "chelsea.gif",
            "chelsea-animated.webp",
        ])
    func scaleDownOtherFormats(file: String) throws {
        let data = try DecodingCorpus.data(file)
        let limit = 100 * 100 * 4
        let image = try ImageDecoderRegistry.shared.decode(
            data, options: .init(scaleDownLargeImages: true, scaleDownLimitBytes: limit))
        #expect(image.frames.allSatisfy { $0.pixels.count <= limit })
        let aspect = Double(image.originalWidth) / Double(image.originalHeight)
        #expect(abs(Double(image.width) / Double(image.height) - aspect) < 0.05)
    }

    @Test(
        "Thumbnails fit inside the requested size with aspect kept, for each format",
        arguments: [
            "astronaut-baseline.jpg", "coffee-progressive.jpg", "rocket-cmyk.jpg", "coffee-rgb.png",
            "coffee-interlaced.png", "horse-palette-trns.png", "chelsea.gif", "chelsea-animated.gif",
            "astronaut-lossy.webp", "horse-lossless.webp", "chelsea-animated.webp", "astronaut-36mp.jpg",
        ])
    func thumbnail(file: String) throws {
        let data = try DecodingCorpus.data(file)
        let box = PixelSize(width: 120, height: 90)
        let image = try ImageDecoderRegistry.shared.decode(data, options: .init(thumbnailPixelSize: box))
        #expect(image.width <= box.width && image.height <= box.height)
        #expect(image.width == box.width || image.height == box.height)
        let aspect = Double(image.originalWidth) / Double(image.originalHeight)
        // One pixel of rounding on the short side.
        #expect(
            abs(Double(image.width) / Double(image.height) - aspect) <= aspect / Double(min(image.width, image.height)))
        for frame in image.frames {
            #expect(frame.width == image.width && frame.height == image.height)
            #expect(frame.pixels.count == frame.bytesPerRow * frame.height)
        }
        let full = try ImageDecoderRegistry.shared.decode(
            data, options: .init(thumbnailPixelSize: box, maximumImagePixels: .max))
        #expect(full.frames.count == image.frames.count)
    }

    @Test("A thumbnail larger than the image leaves it at full size")
    func thumbnailNeverEnlarges() throws {
        let data = try DecodingCorpus.data("horse-rgba.png")
        let image = try ImageDecoderRegistry.shared.decode(
            data, options: .init(thumbnailPixelSize: PixelSize(width: 4000, height: 4000)))
        #expect(image.width == 400 && image.height == 328)
    }

    @Test("Sizing picks the native scale that covers the target within the budget")
    func sizingChoice() throws {
        let sizing = try DecodeSizing(
            width: 6000, height: 4000, format: .jpeg, options: .init(thumbnailPixelSize: .init(width: 700, height: 700))
        )
        #expect(sizing.target == PixelSize(width: 700, height: 467))
        let candidates = [1, 2, 4, 8].map { PixelSize(width: (6000 + $0 - 1) / $0, height: (4000 + $0 - 1) / $0) }
        #expect(sizing.nativeSize(among: candidates) == 3)  // 750×500 covers 700×467
        #expect(sizing.finalSize(native: candidates[3]) == sizing.target)
        #expect(DecodeSizing.shrink(PixelSize(width: 6000, height: 6000), toPixels: 15_728_640).width == 3965)
    }
}
