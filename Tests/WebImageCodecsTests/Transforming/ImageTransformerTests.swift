import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// The built-in transformers: Lanczos against Pillow, the resize modes, orientation, rotation, flips,
/// crops, rounded corners, pipelines, and the downloader's use of them (shrink-on-load included).
@Suite(.timeLimit(.minutes(2))) struct ImageTransformerTests {
    /// A frame whose pixels are numbered 0, 1, 2, ... in their red channel (row-major), opaque.
    static func numbered(width: Int, height: Int) -> Image {
        var pixels: [UInt8] = []
        for index in 0..<(width * height) { pixels += [UInt8(truncatingIfNeeded: index), 0, 0, 255] }
        let frame = ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)
        return Image(format: .png, width: width, height: height, frames: [frame])
    }

    static func reds(_ image: Image) -> [[UInt8]] {
        let frame = image.frames[0]
        return (0..<frame.height).map { y in (0..<frame.width).map { x in frame.pixels[y * frame.bytesPerRow + x * 4] }
        }
    }

    /// PSNR in dB over premultiplied RGBA (fully transparent colours do not count).
    static func psnr(_ a: ImageFrame, _ b: ImageFrame) -> Double {
        var squared = 0.0
        var count = 0
        for y in 0..<a.height {
            for x in 0..<a.width {
                let i = y * a.bytesPerRow + x * 4
                let j = y * b.bytesPerRow + x * 4
                let alphaA = Double(a.pixels[i + 3]) / 255
                let alphaB = Double(b.pixels[j + 3]) / 255
                for channel in 0..<3 {
                    let difference = Double(a.pixels[i + channel]) * alphaA - Double(b.pixels[j + channel]) * alphaB
                    squared += difference * difference
                }
                let alphaDifference = Double(a.pixels[i + 3]) - Double(b.pixels[j + 3])
                squared += alphaDifference * alphaDifference
                count += 4
            }
        }
        let mse = squared / Double(count)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    static var lanczosReferences: [PipelineFixtures.Entry] {
        PipelineFixtures.entries.filter { $0.resizedFrom != nil }
    }

    @Test(arguments: lanczosReferences)
    func lanczosMatchesPillow(reference: PipelineFixtures.Entry) throws {
        let source = try PNGDecoder().decode(
            DecodingCorpus.data(try #require(reference.resizedFrom)), options: .default)
        let expected = try PNGDecoder().decode(PipelineFixtures.data(reference.file), options: .default)
        let resized = LanczosResampler.resize(
            source.frames[0], to: PixelSize(width: reference.width, height: reference.height))
        #expect(resized.width == reference.width && resized.height == reference.height)
        let quality = Self.psnr(resized, expected.frames[0])
        #expect(quality >= 40, "\(reference.file): PSNR \(quality) dB")
    }

    @Test(arguments: [
        PixelSize(width: 20, height: 20), PixelSize(width: 7, height: 9), PixelSize(width: 150, height: 150),
    ])
    func aTransparentEdgeGetsNoDarkFringe(size: PixelSize) {
        // A white opaque disc on transparent black, the way logos are stored.
        var pixels = [UInt8](repeating: 0, count: 64 * 64 * 4)
        for y in 0..<64 {
            for x in 0..<64 where (x - 32) * (x - 32) + (y - 32) * (y - 32) < 24 * 24 {
                pixels.replaceSubrange((y * 64 + x) * 4..<(y * 64 + x) * 4 + 4, with: [255, 255, 255, 255])
            }
        }
        let frame = ImageFrame(width: 64, height: 64, bytesPerRow: 256, pixels: pixels)
        let resized = LanczosResampler.resize(frame, to: size)
        var partial = 0
        for index in stride(from: 0, to: resized.pixels.count, by: 4) where resized.pixels[index + 3] >= 8 {
            #expect(resized.pixels[index..<index + 3].allSatisfy { $0 >= 250 }, "a darkened edge pixel")
            if resized.pixels[index + 3] < 250 { partial += 1 }
        }
        #expect(partial > 0)  // the edge is anti-aliased, and those pixels stayed white
    }

    @Test func resizeModesGiveTheirSizes() throws {
        let image = Self.numbered(width: 60, height: 40)
        #expect(
            try ImageTransformer.resize(to: PixelSize(width: 30, height: 30), mode: .fit).transform(image).size
                == PixelSize(width: 30, height: 20))
        #expect(
            try ImageTransformer.resize(to: PixelSize(width: 30, height: 30), mode: .fill).transform(image).size
                == PixelSize(width: 30, height: 30))
        #expect(
            try ImageTransformer.resize(to: PixelSize(width: 90, height: 90), mode: .longestSide).transform(image).size
                == PixelSize(width: 90, height: 60))
        #expect(
            try ImageTransformer.resize(to: PixelSize(width: 120, height: 120), mode: .fit).transform(image).size
                == PixelSize(width: 120, height: 80))

        let padded = try ImageTransformer.resize(to: PixelSize(width: 30, height: 30), mode: .pad(.clear)).transform(
            image)
        #expect(padded.size == PixelSize(width: 30, height: 30))
        #expect(padded.hasAlpha)
        let frame = padded.frames[0]
        #expect(frame.pixels[3] == 0)  // top-left corner: the padding
        #expect(frame.pixels[(15 * 30 + 15) * 4 + 3] == 255)  // the middle: the image
        #expect(frame.pixels[(4 * 30 + 15) * 4 + 3] == 0)  // 20 rows of image centred in 30: rows 0…4 are padding
        #expect(frame.pixels[(5 * 30 + 15) * 4 + 3] == 255)

        let error = #expect(throws: ImageCodecError.self) {
            try ImageTransformer.resize(to: PixelSize(width: 0, height: 10)).transform(image)
        }
        #expect(error?.code == .invalidParameters)
    }

    @Test func fillCropsAroundTheCentre() throws {
        // Left half black, right half white, 40×20; filled into 20×20 the centre column is the boundary.
        var pixels: [UInt8] = []
        for _ in 0..<20 { for x in 0..<40 { pixels += x < 20 ? [0, 0, 0, 255] : [255, 255, 255, 255] } }
        let image = Image(
            format: .png, width: 40, height: 20,
            frames: [ImageFrame(width: 40, height: 20, bytesPerRow: 160, pixels: pixels)])
        let filled = try ImageTransformer.resize(to: PixelSize(width: 20, height: 20), mode: .fill).transform(image)
        let row = filled.frames[0].pixels
        #expect(row[0] == 0 && row[19 * 4] == 255)  // no scaling (40×20 covers 20×20): a 20-column centre crop
        #expect(filled.frames[0].pixels[9 * 4] == 0 && filled.frames[0].pixels[10 * 4] == 255)
    }

    @Test func orientationsMoveThePixelsAsEXIFSays() throws {
        var image = Self.numbered(width: 3, height: 2)  // 0 1 2 / 3 4 5
        let expected: [Int: [[UInt8]]] = [
            1: [[0, 1, 2], [3, 4, 5]],
            2: [[2, 1, 0], [5, 4, 3]],
            3: [[5, 4, 3], [2, 1, 0]],
            4: [[3, 4, 5], [0, 1, 2]],
            5: [[0, 3], [1, 4], [2, 5]],
            6: [[3, 0], [4, 1], [5, 2]],
            7: [[5, 2], [4, 1], [3, 0]],
            8: [[2, 5], [1, 4], [0, 3]],
        ]
        for orientation in 1...8 {
            image.exifOrientation = orientation
            let upright = try ImageTransformer.applyOrientation.transform(image)
            #expect(Self.reds(upright) == expected[orientation], "orientation \(orientation)")
            #expect(upright.exifOrientation == 1)
        }
        image.exifOrientation = 1
        #expect(Self.reds(try ImageTransformer.rotate(.degrees90).transform(image)) == expected[6])
        #expect(Self.reds(try ImageTransformer.rotate(.degrees180).transform(image)) == expected[3])
        #expect(Self.reds(try ImageTransformer.rotate(.degrees270).transform(image)) == expected[8])
        #expect(Self.reds(try ImageTransformer.flip(.horizontal).transform(image)) == expected[2])
        #expect(Self.reds(try ImageTransformer.flip(.vertical).transform(image)) == expected[4])
        let fourTurns = ImageTransformer.pipeline(Array(repeating: ImageTransformer.rotate(.degrees90), count: 4))
        #expect(Self.reds(try fourTurns.transform(image)) == expected[1])
    }

    @Test func cropKeepsWhatIsInsideAndRefusesNothing() throws {
        let image = Self.numbered(width: 4, height: 3)
        let cropped = try ImageTransformer.crop(PixelRect(x: 1, y: 1, width: 10, height: 10)).transform(image)
        #expect(Self.reds(cropped) == [[5, 6, 7], [9, 10, 11]])
        let error = #expect(throws: ImageCodecError.self) {
            try ImageTransformer.crop(PixelRect(x: 5, y: 0, width: 2, height: 2)).transform(image)
        }
        #expect(error?.code == .invalidParameters)
    }

    @Test func roundCornersMakeTheCornersTransparent() throws {
        let image = Self.numbered(width: 20, height: 20)
        let rounded = try ImageTransformer.roundCorners(radius: 6).transform(image)
        let alpha = { (x: Int, y: Int) in rounded.frames[0].pixels[(y * 20 + x) * 4 + 3] }
        #expect(rounded.hasAlpha)
        for (x, y) in [(0, 0), (19, 0), (0, 19), (19, 19)] { #expect(alpha(x, y) == 0) }
        #expect(alpha(10, 10) == 255 && alpha(6, 0) == 255 && alpha(0, 6) == 255)
        #expect((1..<255).contains(alpha(1, 2)) || (1..<255).contains(alpha(2, 1)))  // anti-aliased edge
    }

    @Test func keysNameEverythingThatChangesTheResult() {
        let pipeline = ImageTransformer.pipeline([
            .applyOrientation, .resize(to: PixelSize(width: 256, height: 128), mode: .pad(.white)),
            .roundCorners(radius: 8),
        ])
        #expect(pipeline.key == "orient|resize(256x128,pad#ffffffff)|round(8)")
        #expect(
            ImageTransformer.resize(to: PixelSize(width: 9, height: 9), mode: .fill).key
                != ImageTransformer.resize(to: PixelSize(width: 9, height: 9), mode: .fit).key)
        #expect(pipeline.minimumDecodeSize == nil)  // a non-square box after upright-making
        let square = ImageTransformer.pipeline([
            .applyOrientation, .resize(to: PixelSize(width: 64, height: 64), mode: .fill),
        ])
        #expect(square.minimumDecodeSize == MinimumDecodeSize(size: PixelSize(width: 64, height: 64), coverage: .fill))
    }
}

extension Image {
    var size: PixelSize { PixelSize(width: width, height: height) }
}
