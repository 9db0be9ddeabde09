import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// APNG decoding against Pillow's decode of Pillow-written files (`Tests/Fixtures/apng`, made by its
/// `make_apng.py`), and malformed files made from them.
@Suite("APNG decoding", .timeLimit(.minutes(5)))
struct APNGDecodingTests {
    static func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/apng/\(name)"))
    }

    /// Pillow's frames of `name` (full canvases, RGBA8).
    static func pillowFrames(_ name: String, width: Int, height: Int) throws -> [[UInt8]] {
        let raw = [UInt8](try fixture((name as NSString).deletingPathExtension + ".rgba"))
        let size = width * height * 4
        return stride(from: 0, to: raw.count, by: size).map { Array(raw[$0..<($0 + size)]) }
    }

    /// The largest difference of any channel, counting only visible pixels' colours (a transparent pixel's
    /// colour is not shown, and encoders and decoders leave different values there).
    static func largestDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var worst = 0
        for pixel in stride(from: 0, to: min(a.count, b.count), by: 4) {
            worst = max(worst, abs(Int(a[pixel + 3]) - Int(b[pixel + 3])))
            guard a[pixel + 3] > 0 || b[pixel + 3] > 0 else { continue }
            for channel in 0..<3 { worst = max(worst, abs(Int(a[pixel + channel]) - Int(b[pixel + channel]))) }
        }
        return worst
    }

    @Test(
        "Every dispose and blend operation composes as Pillow composes it, frame by frame",
        arguments: [
            "dispose0-blend0.png", "dispose0-blend1.png", "dispose1-blend0.png", "dispose1-blend1.png",
            "dispose2-blend0.png", "dispose2-blend1.png",
        ])
    func composesLikePillow(_ name: String) throws {
        let image = try ImageDecoderRegistry.shared.decode(try Self.fixture(name))
        #expect(image.format == .png)
        #expect(image.width == 24 && image.height == 16)
        #expect(image.frameCount == 4 && image.frames.count == 4)
        #expect(image.loopCount == 2)
        #expect(image.hasAlpha)
        #expect(!image.isPartial)
        #expect(image.frames.map(\.duration) == [0.1, 0.05, 0.2, 0.03])
        let reference = try Self.pillowFrames(name, width: 24, height: 16)
        #expect(reference.count == 4)
        for (index, (frame, expected)) in zip(image.frames, reference).enumerated() {
            // Blending "over" rounds as Pillow does but for a step, at most.
            #expect(Self.largestDifference(frame.pixels, expected) <= 1, "frame \(index)")
        }
    }

    @Test("Blending over with partial alpha follows the specification's formula")
    func overWithPartialAlpha() throws {
        let image = try ImageDecoderRegistry.shared.decode(try Self.fixture("over-alpha.png"))
        let reference = try Self.pillowFrames("over-alpha.png", width: 8, height: 4)
        #expect(image.frames.count == 2 && reference.count == 2)
        for (index, (frame, expected)) in zip(image.frames, reference).enumerated() {
            #expect(Self.largestDifference(frame.pixels, expected) <= 1, "frame \(index)")
        }
        // Half-transparent blue over half-transparent red is more opaque than either.
        #expect(image.frames[1].pixels[3] > 150)
    }

    @Test("A default image outside the animation is skipped; frame-only decoding keeps the first frame")
    func defaultImageAndFirstFrame() throws {
        let data = try Self.fixture("default-image.png")
        let image = try ImageDecoderRegistry.shared.decode(data)
        #expect(image.frameCount == 3 && image.frames.count == 3)
        // Pillow lists the default image as its frame 0; the animation is its frames 1…3.
        let reference = try Self.pillowFrames("default-image.png", width: 24, height: 16)
        #expect(reference.count == 4)
        for (index, frame) in image.frames.enumerated() {
            #expect(Self.largestDifference(frame.pixels, reference[index + 1]) <= 1, "frame \(index)")
        }
        let first = try ImageDecoderRegistry.shared.decode(
            data, options: ImageDecodingOptions(decodeFirstFrameOnly: true))
        #expect(first.frames.count == 1 && first.frameCount == 3)
        #expect(first.frames[0].pixels == image.frames[0].pixels)
        let thumbnail = try ImageDecoderRegistry.shared.decode(
            data, options: ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 12, height: 12)))
        #expect(thumbnail.width == 12 && thumbnail.height == 8 && thumbnail.frames.count == 3)
    }

    @Test("The frames are claimed from the decode budget and given back")
    func claimsFromTheBudget() throws {
        let budget = DecodeMemoryBudget(limit: 64 << 20)
        var options = ImageDecodingOptions()
        options.memoryBudget = budget
        let image = try ImageDecoderRegistry.shared.decode(try Self.fixture("dispose2-blend1.png"), options: options)
        #expect(image.frames.count == 4)
        #expect(budget.bytesInUse == 0 && budget.peakBytesInUse > 0)
        // A budget too small for the canvas and its frames refuses the decode before it starts.
        var tight = ImageDecodingOptions()
        tight.memoryBudget = DecodeMemoryBudget(limit: 1024)
        #expect(throws: ImageCodecError.self) {
            try ImageDecoderRegistry.shared.decode(try Self.fixture("dispose2-blend1.png"), options: tight)
        }
    }

    @Test("Frames past maximumAnimationFrames are counted, not kept")
    func frameLimit() throws {
        var options = ImageDecodingOptions()
        options.maximumAnimationFrames = 2
        let data = try Self.fixture("dispose1-blend1.png")
        let image = try ImageDecoderRegistry.shared.decode(data, options: options)
        #expect(image.frames.count == 2 && image.frameCount == 4)
        let container = try #require(try APNGContainer.parse(data, limit: 2))
        #expect(container.frames.count == 2 && container.frameCount == 4)
    }

    @Test("Progressive loading shows the frames that arrived and ends with the one-shot decode")
    func progressive() throws {
        let data = try Self.fixture("dispose1-blend1.png")
        let decoder = PNGDecoder().makeIncrementalDecoder(options: .default)
        var shown: [Int] = []
        for end in stride(from: 40, to: data.count, by: 40) {
            if let partial = decoder.decodePartial(data.prefix(end)) {
                #expect(partial.isPartial)
                shown.append(partial.frames.count)
            }
        }
        #expect(!shown.isEmpty && shown == shown.sorted())
        let final = try decoder.decodeFinal(data)
        let oneShot = try PNGDecoder().decode(data, options: .default)
        #expect(final.frames.count == 4 && !final.isPartial)
        #expect(final.frames.map(\.pixels) == oneShot.frames.map(\.pixels))
    }

    // MARK: - Malformed files

    /// `data` with the payload of its `occurrence`-th `type` chunk changed by `edit`, the CRC recomputed.
    static func editing(
        _ data: Data, _ type: String, occurrence: Int = 0, _ edit: (inout [UInt8]) -> Void
    ) -> Data {
        var bytes = [UInt8](data)
        var offset = 8
        var seen = 0
        while offset + 8 <= bytes.count {
            let length = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            if String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self) == type {
                if seen == occurrence {
                    var payload = Array(bytes[(offset + 8)..<(offset + 8 + length)])
                    edit(&payload)
                    bytes.replaceSubrange(offset..<(offset + 12 + length), with: APNGContainer.chunk(type, payload))
                    return Data(bytes)
                }
                seen += 1
            }
            offset += 12 + length
        }
        return Data(bytes)
    }

    static func message(_ data: Data) -> String? {
        do {
            _ = try PNGDecoder().decode(data, options: .default)
            return nil
        } catch let error as ImageCodecError {
            #expect(error.code == .badImageData)
            return error.message
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test("Malformed files fail with an error that names the fault")
    func malformed() throws {
        let data = try Self.fixture("dispose1-blend0.png")
        let badSequence = Self.editing(data, "fdAT") { $0[3] = 9 }
        #expect(Self.message(badSequence)?.contains("fdAT has sequence number 9 where 2 was expected") == true)
        let outside = Self.editing(data, "fcTL", occurrence: 2) { $0[15] = 20 }  // x = 20 for a 12-wide frame
        #expect(Self.message(outside)?.contains("outside the 24×16 canvas") == true)
        let huge = Self.editing(data, "acTL") { $0.replaceSubrange(0..<4, with: [0xFF, 0xFF, 0xFF, 0xF0]) }
        #expect(Self.message(huge)?.contains("acTL declares 4294967280 frames, the file holds 4") == true)
        let none = Self.editing(data, "acTL") { $0.replaceSubrange(0..<4, with: [0, 0, 0, 0]) }
        #expect(Self.message(none)?.contains("acTL declares 0 frames") == true)
        let dispose = Self.editing(data, "fcTL", occurrence: 1) { $0[24] = 7 }
        #expect(Self.message(dispose)?.contains("unknown dispose (7)") == true)
        var corrupt = [UInt8](data)
        let fcTL = try #require(data.range(of: Data("fcTL".utf8)))
        corrupt[fcTL.lowerBound + 6] ^= 0xFF
        #expect(Self.message(Data(corrupt))?.contains("fails its CRC") == true)
    }

    @Test("Data cut inside a frame keeps the frames before it, marked partial")
    func truncated() throws {
        let data = try Self.fixture("dispose1-blend0.png")
        // Cut inside the last fdAT: three frames whole and the rows of the fourth that arrived.
        let last = try #require(data.range(of: Data("fdAT".utf8), options: .backwards))
        let cut = data.prefix(last.upperBound + 10)
        let image = try PNGDecoder().decode(cut, options: .default)
        #expect(image.isPartial)
        #expect(image.frames.count >= 3)
        // Cut before any frame data: an error, not a crash.
        let header = try #require(data.range(of: Data("fcTL".utf8)))
        #expect(Self.message(data.prefix(header.upperBound + 30)) != nil)
    }
}
