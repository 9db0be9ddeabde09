import Foundation
import Testing

@testable import WebImage

/// Files of the conformance subset (`Tests/Fixtures/conformance`, checked in full by
/// `Tests/Conformance/check.py` in `make test`) whose decoding a fix brought in line with the suite's
/// reference: each test keeps its fix from going back, in the Swift suite alone.
@Suite(.timeLimit(.minutes(2))) struct ConformanceFixtureTests {
    static let directory = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/conformance")

    static func decode(_ path: String) throws -> Image {
        let data = try Data(contentsOf: directory.appendingPathComponent(path))
        return try ImageDecoderRegistry.shared.decode(data, options: .default)
    }

    /// The largest difference between the first frames' samples in 8-bit steps, each colour difference
    /// weighted by the reference's alpha (the colour of a transparent pixel is never seen), as the checker
    /// measures it.
    static func peakError(_ image: Image, reference: Image) -> Int {
        let decoded = image.frames[0]
        let expected = reference.frames[0]
        var peak = 0
        for y in 0..<expected.height {
            for x in 0..<expected.width {
                let i = y * decoded.bytesPerRow + x * 4
                let j = y * expected.bytesPerRow + x * 4
                let alpha = Int(expected.pixels[j + 3])
                for channel in 0..<3 {
                    let difference = abs(Int(decoded.pixels[i + channel]) - Int(expected.pixels[j + channel]))
                    peak = max(peak, (difference * alpha + 127) / 255)
                }
                peak = max(peak, abs(Int(decoded.pixels[i + 3]) - alpha))
            }
        }
        return peak
    }

    @Test("A JPEG XL file with premultiplied alpha decodes to straight alpha, as its reference shows it")
    func jxlPremultipliedAlphaComesBackStraight() throws {
        let image = try Self.decode("jxl/alpha_premultiplied/input.jxl")
        let reference = try Self.decode("jxl/alpha_premultiplied/ref.png")
        #expect(image.width == reference.width && image.height == reference.height)
        // Premultiplied colours were up to 64 steps too dark (the checker's measure before the fix).
        #expect(Self.peakError(image, reference: reference) <= 3)
    }
}
