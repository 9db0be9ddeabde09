import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// BlurHash and ThumbHash against the reference implementations' hashes of the same pixels
/// (`Tests/Fixtures/placeholders`: `vectors.json`, made by `make_vectors.py`, see `SOURCES.md`), the hashes
/// decoded back (by the formats' published decoding rules, written out below) against their images, and
/// the refusals.
@Suite(.timeLimit(.minutes(2))) struct PlaceholderTests {
    struct Vectors: Decodable {
        struct Blur: Decodable, CustomTestStringConvertible {
            let file: String
            let x: Int
            let y: Int
            let hash: String
            var testDescription: String { "\(file) \(x)×\(y)" }
        }
        struct Thumb: Decodable, CustomTestStringConvertible {
            let file: String
            let hash: String
            var testDescription: String { file }
        }
        let blurhash: [Blur]
        let thumbhash: [Thumb]
    }

    static let directory = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/placeholders")

    static let vectors: Vectors = {
        let url = directory.appendingPathComponent("vectors.json")
        // A missing or broken file fails every test that reads it, through an empty list's `#require`.
        return (try? JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url)))
            ?? Vectors(
                blurhash: [], thumbhash: [])
    }()

    /// The first frame of fixture `file` as stored: no colour conversion, as the reference programs read it.
    static func frame(_ file: String) throws -> ImageFrame {
        var options = ImageDecodingOptions()
        options.decodeFirstFrameOnly = true
        options.colorSpace = .preserve
        let data = try Data(contentsOf: directory.appendingPathComponent(file))
        return try #require(ImageDecoderRegistry.shared.decode(data, options: options).frames.first)
    }

    @Test func vectorsArePresent() {
        #expect(Self.vectors.blurhash.count == 32 && Self.vectors.thumbhash.count == 4)
    }

    @Test("BlurHash equals woltapp/blurhash's C encoder", arguments: vectors.blurhash)
    func blurHashVector(_ vector: Vectors.Blur) throws {
        let hash = try BlurHash.encode(try Self.frame(vector.file), xComponents: vector.x, yComponents: vector.y)
        #expect(hash == vector.hash)
    }

    @Test("ThumbHash equals evanw/thumbhash's JavaScript encoder", arguments: vectors.thumbhash)
    func thumbHashVector(_ vector: Vectors.Thumb) throws {
        let hash = try ThumbHash.encode(try Self.frame(vector.file))
        #expect(hash.map { String(format: "%02X", $0) }.joined() == vector.hash)
    }

    /// BlurHash weighs every component but the average by 2 (woltapp/blurhash's encoder, which this one equals):
    /// right for a cosine series along one axis, half of the 4 a product of two cosines needs. So the round
    /// trip is checked along one axis at a time, where the decoded picture is the image's low frequencies:
    /// nine horizontal components keep the averages of vertical strips, nine vertical ones those of horizontal
    /// strips. The averages are taken in linear light, as BlurHash works (averaged as sRGB levels, a cell of
    /// black and white is 128 before a blur and 188 after it).
    @Test("a BlurHash along one axis decodes to the image's low frequencies: strip averages within 6 levels")
    func blurHashRoundTrip() throws {
        for file in ["coffee-100.png", "chelsea-100.png", "camera-100.png"] {
            let frame = try Self.frame(file)
            for (x, y, columns, rows) in [(9, 1, 4, 1), (1, 9, 1, 3)] {
                let hash = try BlurHash.encode(frame, xComponents: x, yComponents: y)
                let decoded = try #require(BlurHashReader(hash))
                let strips = Self.cellAverages(frame, columns: columns, rows: rows, linearLight: true)
                let decodedStrips = Self.cellAverages(
                    decoded.render(width: frame.width, height: frame.height), columns: columns, rows: rows,
                    linearLight: true)
                let worst = zip(strips, decodedStrips).map { abs($0 - $1) }.max() ?? 255
                #expect(worst <= 6, "\(file), \(x)×\(y) components: a strip differs by \(worst) levels")
            }
        }
    }

    @Test("a ThumbHash decoded has the image's average colour and aspect ratio")
    func thumbHashRoundTrip() throws {
        for file in ["coffee-100.png", "chelsea-100.png", "camera-100.png"] {
            let frame = try Self.frame(file)
            let reader = try #require(ThumbHashReader(try ThumbHash.encode(frame)))
            let average = Self.cellAverages(frame, columns: 1, rows: 1)
            let worst = zip(average, reader.averageRGB).map { abs($0 - $1) }.max() ?? 255
            #expect(worst <= 8, "\(file): the average differs by \(worst) levels (\(average), \(reader.averageRGB))")
            let ratio = Double(frame.width) / Double(frame.height)
            #expect(abs(reader.aspectRatio - ratio) < 0.15, "\(file): \(reader.aspectRatio) for \(ratio)")
            #expect(!reader.hasAlpha)
        }
        let alpha = try ThumbHash.encode(try Self.frame("horse-alpha-100.png"))
        #expect(try #require(ThumbHashReader(alpha)).hasAlpha)
    }

    @Test("component counts outside 1…9, frames without their bytes and ThumbHash inputs past 100 are refused")
    func refusals() throws {
        let frame = ImageFrame(width: 2, height: 2, bytesPerRow: 8, pixels: [UInt8](repeating: 128, count: 16))
        for (x, y) in [(0, 3), (4, 0), (10, 1), (1, 10), (-1, -1)] {
            #expect(throws: PlaceholderError.invalidComponents(x: x, y: y)) {
                try BlurHash.encode(frame, xComponents: x, yComponents: y)
            }
        }
        let short = ImageFrame(width: 2, height: 2, bytesPerRow: 8, pixels: [UInt8](repeating: 0, count: 15))
        let narrow = ImageFrame(width: 2, height: 2, bytesPerRow: 7, pixels: [UInt8](repeating: 0, count: 16))
        let empty = ImageFrame(width: 0, height: 5, bytesPerRow: 0, pixels: [])
        let huge = ImageFrame(width: Int.max / 2, height: 3, bytesPerRow: 8, pixels: [UInt8](repeating: 0, count: 16))
        for bad in [short, narrow, empty, huge] {
            #expect(throws: PlaceholderError.self) { try BlurHash.encode(bad) }
            #expect(throws: PlaceholderError.self) { try ThumbHash.encode(bad) }
        }
        let wide = ImageFrame(width: 101, height: 1, bytesPerRow: 404, pixels: [UInt8](repeating: 9, count: 404))
        #expect(throws: PlaceholderError.tooLarge(width: 101, height: 1)) { try ThumbHash.encode(wide) }
        #expect(try ThumbHash.encode(ImagePlaceholders.downscaled(wide)).count >= 5)
        // Rows padded past their pixels are read by `bytesPerRow`, not packed.
        var padded = ImageFrame(width: 1, height: 2, bytesPerRow: 12, pixels: [UInt8](repeating: 0, count: 16))
        padded.pixels.replaceSubrange(12..<16, with: [255, 255, 255, 255])
        padded.pixels.replaceSubrange(0..<4, with: [0, 0, 0, 255])
        let packed = ImageFrame(width: 1, height: 2, bytesPerRow: 4, pixels: [0, 0, 0, 255, 255, 255, 255, 255])
        #expect(try BlurHash.encode(padded) == BlurHash.encode(packed))
        #expect(try ThumbHash.encode(padded) == ThumbHash.encode(packed))
    }

    @Test("downscaled fits the side, keeps the aspect ratio, and leaves a small frame as it is")
    func downscaled() {
        let big = ImageFrame(
            width: 451, height: 300, bytesPerRow: 451 * 4, pixels: [UInt8](repeating: 7, count: 451 * 300 * 4))
        let small = ImagePlaceholders.downscaled(big)
        #expect(small.width == 100 && small.height == 67)
        let tall = ImageFrame(width: 3, height: 1000, bytesPerRow: 12, pixels: [UInt8](repeating: 7, count: 12000))
        #expect(ImagePlaceholders.downscaled(tall).width == 1 && ImagePlaceholders.downscaled(tall).height == 100)
        let tiny = ImageFrame(width: 5, height: 4, bytesPerRow: 20, pixels: [UInt8](repeating: 7, count: 80))
        #expect(ImagePlaceholders.downscaled(tiny).pixels == tiny.pixels)
    }

    @Test("colorProfileName reads v4 (mluc) and v2 (desc) descriptions; nil for what is not a profile")
    func colorProfileName() throws {
        let p3 = try PipelineFixtures.data("display-p3.icc")
        #expect(ImagePlaceholders.colorProfileName(p3) == "Display P3 (WebImage test)")
        var options = ImageDecodingOptions()
        options.colorSpace = .preserve
        let chelsea = try ImageDecoderRegistry.shared.decode(
            try Fixtures.corpusFile("chelsea-palette.png"), options: options)
        #expect(chelsea.iccProfile.flatMap(ImagePlaceholders.colorProfileName) == "sRGB IEC61966-2.1")
        #expect(ImagePlaceholders.colorProfileName(Data(repeating: 0x41, count: 500)) == nil)
        #expect(ImagePlaceholders.colorProfileName(Data()) == nil)
        var cut = p3
        cut.removeLast(cut.count / 2)
        _ = ImagePlaceholders.colorProfileName(cut)  // a profile cut short: nil or its name, never a crash
    }

    @Test("sRGB(_:) converts a preserved Display P3 image as a default decode does")
    func sRGBConversion() throws {
        let data = try PipelineFixtures.data("coffee-p3.png")
        var options = ImageDecodingOptions()
        options.colorSpace = .preserve
        let preserved = try ImageDecoderRegistry.shared.decode(data, options: options)
        #expect(preserved.iccProfile != nil)
        let converted = ImagePlaceholders.sRGB(preserved)
        let direct = try ImageDecoderRegistry.shared.decode(data)
        #expect(converted.iccProfile == nil)
        #expect(converted.frames[0].pixels == direct.frames[0].pixels)
        #expect(converted.frames[0].pixels != preserved.frames[0].pixels)
    }

    /// Each cell's mean R, G and B (0…255), cells row by row.
    /// The average of each cell's red, green and blue, as sRGB levels; with `linearLight`, the average of the
    /// linear-light values, given back as an sRGB level.
    static func cellAverages(_ frame: ImageFrame, columns: Int, rows: Int, linearLight: Bool = false) -> [Double] {
        func linear(_ level: Double) -> Double {
            let value = level / 255
            return value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
        }
        func level(_ linear: Double) -> Double {
            let value = linear <= 0.0031308 ? linear * 12.92 : 1.055 * pow(linear, 1 / 2.4) - 0.055
            return value * 255
        }
        var result: [Double] = []
        for row in 0..<rows {
            for column in 0..<columns {
                var sums = [0.0, 0.0, 0.0]
                var count = 0.0
                for y in (row * frame.height / rows)..<((row + 1) * frame.height / rows) {
                    for x in (column * frame.width / columns)..<((column + 1) * frame.width / columns) {
                        for channel in 0..<3 {
                            let value = Double(frame.pixels[y * frame.bytesPerRow + x * 4 + channel])
                            sums[channel] += linearLight ? linear(value) : value
                        }
                        count += 1
                    }
                }
                result += sums.map { linearLight ? level($0 / max(count, 1)) : $0 / max(count, 1) }
            }
        }
        return result
    }
}

/// A BlurHash read back by the format's rules (woltapp/blurhash's Algorithm.md): size digit, maximum
/// digit, average colour, then the AC components; rendered as the sum of cosines.
struct BlurHashReader {
    var xComponents: Int
    var yComponents: Int
    var colors: [(Double, Double, Double)]

    init?(_ hash: String) {
        let digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~"
        let table = Dictionary(uniqueKeysWithValues: digits.enumerated().map { ($1, $0) })
        let characters = Array(hash)
        func value(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= characters.count else { return nil }
            var result = 0
            for index in range {
                guard let digit = table[characters[index]] else { return nil }
                result = result * 83 + digit
            }
            return result
        }
        guard let size = value(0..<1), let quantisedMaximum = value(1..<2), let dc = value(2..<6) else { return nil }
        xComponents = size % 9 + 1
        yComponents = size / 9 + 1
        guard characters.count == 4 + 2 * xComponents * yComponents else { return nil }
        func linear(_ value: Int) -> Double {
            let v = Double(value) / 255
            return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
        }
        colors = [(linear(dc >> 16), linear(dc >> 8 & 255), linear(dc & 255))]
        let maximum = Double(quantisedMaximum + 1) / 166
        for index in 1..<(xComponents * yComponents) {
            guard let ac = value((4 + index * 2)..<(6 + index * 2)) else { return nil }
            func channel(_ quantised: Int) -> Double {
                let v = (Double(quantised) - 9) / 9
                return (v < 0 ? -1 : 1) * v * v * maximum
            }
            colors.append((channel(ac / (19 * 19)), channel(ac / 19 % 19), channel(ac % 19)))
        }
    }

    func render(width: Int, height: Int) -> ImageFrame {
        func sRGB(_ value: Double) -> UInt8 {
            let v = max(0, min(1, value))
            return UInt8((v <= 0.0031308 ? v * 12.92 : 1.055 * pow(v, 1 / 2.4) - 0.055) * 255 + 0.5)
        }
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                var (r, g, b) = (0.0, 0.0, 0.0)
                for j in 0..<yComponents {
                    for i in 0..<xComponents {
                        let basis =
                            cos(Double.pi * Double(x) * Double(i) / Double(width))
                            * cos(Double.pi * Double(y) * Double(j) / Double(height))
                        let color = colors[j * xComponents + i]
                        r += color.0 * basis
                        g += color.1 * basis
                        b += color.2 * basis
                    }
                }
                let offset = (y * width + x) * 4
                (pixels[offset], pixels[offset + 1], pixels[offset + 2]) = (sRGB(r), sRGB(g), sRGB(b))
            }
        }
        return ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)
    }
}

/// A ThumbHash's header read back by the format's rules (evanw/thumbhash's decoder): the average colour
/// from the LPQ averages, the aspect ratio from the component counts, and the alpha flag.
struct ThumbHashReader {
    var averageRGB: [Double]
    var aspectRatio: Double
    var hasAlpha: Bool

    init?(_ hash: [UInt8]) {
        guard hash.count >= 5 else { return nil }
        let header24 = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
        let header16 = Int(hash[3]) | Int(hash[4]) << 8
        let l = Double(header24 & 63) / 63
        let p = Double(header24 >> 6 & 63) / 31.5 - 1
        let q = Double(header24 >> 12 & 63) / 31.5 - 1
        hasAlpha = header24 >> 23 != 0
        let isLandscape = header16 >> 15 != 0
        // The inverse of l = (r+g+b)/3, p = (r+g)/2 − b, q = r − g.
        let b = l - 2.0 / 3.0 * p
        let r = (3 * l - b + q) / 2
        let g = r - q
        averageRGB = [r, g, b].map { max(0, min(1, $0)) * 255 }
        let lx = Double(max(3, isLandscape ? (hasAlpha ? 5 : 7) : header16 & 7))
        let ly = Double(max(3, isLandscape ? header16 & 7 : (hasAlpha ? 5 : 7)))
        aspectRatio = lx / ly
    }
}
