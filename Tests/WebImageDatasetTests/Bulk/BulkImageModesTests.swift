import Foundation
import Testing
import WebImage

@testable import WebImageDataset

/// The bulk engine's image modes on their own: img2dataset's resize modes, never enlarging.
@Suite("Bulk image modes")
struct BulkImageModesTests {
    /// A `width`×`height` opaque image whose pixels vary (a checkerboard of 2-pixel cells in red, a ramp in green).
    static func image(_ width: Int, _ height: Int) -> Image {
        var pixels: [UInt8] = []
        pixels.reserveCapacity(width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                pixels += [((x / 2 + y / 2) % 2 == 0) ? 220 : 30, UInt8((x * 7 + y * 3) % 256), 120, 255]
            }
        }
        return Image(
            format: .png, width: width, height: height,
            frames: [ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)])
    }

    static func size(_ image: Image) -> [Int] { [image.width, image.height] }

    static func transform(_ image: Image, _ mode: BulkResize.Mode, _ size: Int, onlyIfBigger: Bool = false) throws
        -> Image
    {
        try BulkImageTransformer(resize: BulkResize(mode: mode, size: size, onlyIfBigger: onlyIfBigger)).transform(
            image)
    }

    @Test("keep-ratio makes the shorter side the size, center-crop then cuts the square, both ways of scaling")
    func shorterSideModes() throws {
        #expect(Self.size(try Self.transform(Self.image(400, 200), .keepRatio, 100)) == [200, 100])
        #expect(Self.size(try Self.transform(Self.image(90, 300), .keepRatio, 60)) == [60, 200])
        #expect(Self.size(try Self.transform(Self.image(30, 20), .keepRatio, 60)) == [90, 60])  // enlarged
        #expect(Self.size(try Self.transform(Self.image(400, 200), .centerCrop, 100)) == [100, 100])
        #expect(Self.size(try Self.transform(Self.image(30, 20), .centerCrop, 60)) == [60, 60])
        // 333×101 → 50: the longer side is truncated (333 × 50/101 = 164.85 → 164), as albumentations 1.4.24
        // (img2dataset 1.47's today) truncates it; the shorter is exact.
        #expect(Self.size(try Self.transform(Self.image(333, 101), .keepRatio, 50)) == [164, 50])
        #expect(Self.size(try Self.transform(Self.image(101, 333), .keepRatioLargest, 50)) == [15, 50])
        #expect(Self.size(try Self.transform(Self.image(400, 328), .keepRatio, 64)) == [78, 64])
    }

    @Test("center-crop resamples only the square: the pixels of scaling the whole image, then cutting the centre")
    func centerCropIsTheCentreOfTheScaledImage() throws {
        for (width, height, size) in [(333, 101, 50), (408, 306, 256), (90, 300, 60), (30, 20, 60), (64, 64, 64)] {
            let image = Self.image(width, height)
            let cropped = try Self.transform(image, .centerCrop, size)
            // What the transformer did before: scale the whole image (the shorter side to the size, the other
            // rounded), then crop its centre.
            let factor = Double(size) / Double(min(width, height))
            let whole = PixelSize(
                width: Int((Double(width) * factor).rounded()), height: Int((Double(height) * factor).rounded()))
            let scaled = try ImageTransformer.resize(to: whole, mode: .stretch).transform(image)
            let rect = PixelRect(
                x: (scaled.width - size) / 2, y: (scaled.height - size) / 2, width: size, height: size)
            let expected = try ImageTransformer.crop(rect).transform(scaled)
            #expect(Self.size(cropped) == [size, size], "\(width)×\(height)")
            #expect(cropped.frames.first?.pixels == expected.frames.first?.pixels, "\(width)×\(height) → \(size)")
        }
    }

    @Test("keep-ratio-largest makes the longer side the size; border then pads the square, centred, white")
    func longerSideModes() throws {
        #expect(Self.size(try Self.transform(Self.image(400, 200), .keepRatioLargest, 100)) == [100, 50])
        #expect(Self.size(try Self.transform(Self.image(20, 30), .keepRatioLargest, 60)) == [40, 60])
        let bordered = try Self.transform(Self.image(400, 200), .border, 100)
        #expect(Self.size(bordered) == [100, 100])
        let frame = try #require(bordered.frames.first)
        // Rows 0…24 and 75…99 are white margins; row 50 is the image.
        #expect(Array(frame.pixels[0..<4]) == [255, 255, 255, 255])
        #expect(Array(frame.pixels[(24 * 100 + 50) * 4..<(24 * 100 + 50) * 4 + 4]) == [255, 255, 255, 255])
        #expect(Array(frame.pixels[(75 * 100 + 50) * 4..<(75 * 100 + 50) * 4 + 4]) == [255, 255, 255, 255])
        #expect(frame.pixels[(25 * 100 + 50) * 4 + 2] != 255 && frame.pixels[(74 * 100 + 50) * 4 + 2] != 255)
        // An odd margin: the extra row goes to the bottom, as PadIfNeeded does.
        let odd = try #require(try Self.transform(Self.image(100, 47), .border, 100).frames.first)
        #expect(odd.pixels[(25 * 100) * 4 + 2] == 255 && odd.pixels[(26 * 100) * 4 + 2] == 120)
        #expect(odd.pixels[(72 * 100) * 4 + 2] == 120 && odd.pixels[(73 * 100) * 4 + 2] == 255)
    }

    @Test("only if bigger: a smaller image keeps its size and pixels (no crop, no border); a bigger one shrinks")
    func onlyIfBigger() throws {
        let small = Self.image(64, 64)
        for mode in BulkResize.Mode.allCases {
            let kept = try Self.transform(small, mode, 256, onlyIfBigger: true)
            #expect(Self.size(kept) == [64, 64], "\(mode)")
            #expect(kept.frames.first?.pixels == small.frames.first?.pixels, "\(mode)")
            #expect(Self.size(try Self.transform(small, mode, 256)) == [256, 256], "\(mode) enlarges by default")
        }
        // 300×100 at 256: the shorter side (100) is not above it, so keep-ratio and center-crop leave it…
        let wide = Self.image(300, 100)
        #expect(Self.size(try Self.transform(wide, .centerCrop, 256, onlyIfBigger: true)) == [300, 100])
        #expect(Self.size(try Self.transform(wide, .keepRatio, 256, onlyIfBigger: true)) == [300, 100])
        // …while the longer side (300) is, so keep-ratio-largest and border shrink it.
        #expect(Self.size(try Self.transform(wide, .keepRatioLargest, 256, onlyIfBigger: true)) == [256, 85])
        #expect(Self.size(try Self.transform(wide, .border, 256, onlyIfBigger: true)) == [256, 256])
        #expect(
            Self.size(try Self.transform(Self.image(600, 400), .centerCrop, 256, onlyIfBigger: true)) == [256, 256])
    }

    @Test("the decode may start small: a file's own size decides, the decoded pixels are scaled")
    func decidesOnTheFileSize() throws {
        // A 1000×800 file decoded at 1/2 (DCT scaling): 500×400 pixels, original 1000×800.
        var decoded = Self.image(500, 400)
        decoded.originalWidth = 1000
        decoded.originalHeight = 800
        #expect(Self.size(try Self.transform(decoded, .keepRatio, 256, onlyIfBigger: true)) == [320, 256])
        let resize = BulkResize(mode: .centerCrop, size: 256)
        #expect(
            resize.minimumDecodeSize == MinimumDecodeSize(size: PixelSize(width: 256, height: 256), coverage: .fill))
        #expect(BulkResize(mode: .border, size: 256).minimumDecodeSize.coverage == .fit)
    }

    @Test("the size filters: img2dataset's order and words, the numbers after them; limits are inclusive")
    func sizeFilters() {
        var settings = BulkSettings()
        #expect(settings.rejection(width: 1, height: 100_000) == nil)
        settings.minimumSize = 64
        settings.maximumArea = 1_000_000
        settings.maximumAspectRatio = 3
        #expect(settings.rejection(width: 64, height: 64) == nil)
        #expect(settings.rejection(width: 1000, height: 1000) == nil)
        #expect(settings.rejection(width: 192, height: 64) == nil)
        let small = settings.rejection(width: 63, height: 500)
        #expect(small?.0 == .tooSmall && small?.1 == "image too small: 63×500 is below --min-image-size 64")
        let large = settings.rejection(width: 1001, height: 1000)
        #expect(large?.0 == .areaTooLarge && large?.1.hasPrefix("image area too large: 1001×1000 is 1001000") == true)
        let wide = settings.rejection(width: 193, height: 64)
        #expect(wide?.0 == .aspectRatio && wide?.1.hasPrefix("aspect ratio too large: 193×64 is 3.02") == true)
        // Too small wins over the ratio, as img2dataset checks it first.
        #expect(settings.rejection(width: 20, height: 2000)?.0 == .tooSmall)
    }

    @Test("an image the size filters will throw away is handed back unresized, as img2dataset filters first")
    func filteredImagesAreNotResized() throws {
        var transformer = BulkImageTransformer(resize: BulkResize(mode: .centerCrop, size: 32))
        var settings = BulkSettings()
        settings.minimumSize = 50
        let filters = settings
        transformer.leavesAlone = { filters.rejection(width: $0, height: $1) != nil }
        #expect(Self.size(try transformer.transform(Self.image(40, 90))) == [40, 90])
        #expect(Self.size(try transformer.transform(Self.image(60, 90))) == [32, 32])
    }
}
