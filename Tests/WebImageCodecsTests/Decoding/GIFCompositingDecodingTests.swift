import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

@Suite("GIF compositing", .timeLimit(.minutes(5)))
struct GIFCompositingDecodingTests {
    static func pixel(_ frame: ImageFrame, _ x: Int, _ y: Int) -> [UInt8] {
        Array(frame.pixels[(y * frame.bytesPerRow + x * 4)..<(y * frame.bytesPerRow + x * 4 + 4)])
    }

    /// A 4×4 canvas: frame 0 fills it red; frame 1 (restore-to-previous) paints a green 2×2 square;
    /// frame 2 (restore-to-background) paints blue over the top-left pixel; frame 3 draws nothing visible.
    static let animation = TestGIFWriter(
        width: 4, height: 4, loopCount: 3,
        frames: [
            .init(width: 4, height: 4, indices: [UInt8](repeating: 0, count: 16), disposal: 1, delayCentiseconds: 20),
            .init(left: 1, top: 1, width: 2, height: 2, indices: [1, 1, 1, 1], disposal: 3, delayCentiseconds: 0),
            .init(width: 2, height: 1, indices: [2, 3], disposal: 2, delayCentiseconds: 5, transparentIndex: 3),
            .init(width: 1, height: 1, indices: [3], transparentIndex: 3),
        ])

    @Test("Disposal methods, transparency, delays and the loop count")
    func disposal() throws {
        let image = try GIFDecoder().decode(Self.animation.data(), options: .default)
        #expect(image.frames.count == 4 && image.frameCount == 4)
        #expect(image.loopCount == 3)
        #expect(image.frames.map(\.duration) == [0.2, 0.1, 0.05, 0.1])
        let red: [UInt8] = [255, 0, 0, 255]
        let green: [UInt8] = [0, 255, 0, 255]
        let blue: [UInt8] = [0, 0, 255, 255]
        #expect(Self.pixel(image.frames[0], 1, 1) == red)
        #expect(Self.pixel(image.frames[1], 1, 1) == green)
        #expect(Self.pixel(image.frames[1], 0, 0) == red)
        // Frame 1 is restored to what was before it (red); frame 2 paints blue, its transparent pixel keeps red.
        #expect(Self.pixel(image.frames[2], 1, 1) == red)
        #expect(Self.pixel(image.frames[2], 0, 0) == blue)
        #expect(Self.pixel(image.frames[2], 1, 0) == red)
        // Frame 2's rectangle (2×1 at 0,0) is cleared to transparent before frame 3.
        #expect(Self.pixel(image.frames[3], 0, 0) == [0, 0, 0, 0])
        #expect(Self.pixel(image.frames[3], 1, 0) == [0, 0, 0, 0])
        #expect(Self.pixel(image.frames[3], 2, 0) == red)
        #expect(image.hasAlpha)
    }

    @Test("Interlaced frames land on the right rows")
    func interlaced() throws {
        let indices = (0..<10).flatMap { row in [UInt8](repeating: UInt8(row % 3), count: 3) }
        let gif = TestGIFWriter(
            width: 3, height: 10, loopCount: nil,
            frames: [.init(width: 3, height: 10, indices: indices, interlaced: true)])
        let image = try GIFDecoder().decode(gif.data(), options: .default)
        #expect(image.loopCount == 0 && image.frames.count == 1 && !image.hasAlpha)
        let colors: [[UInt8]] = [[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 255]]
        for row in 0..<10 { #expect(Self.pixel(image.frames[0], 2, row) == colors[row % 3]) }
    }

    @Test("A file without NETSCAPE2.0 plays once; a frame cut short keeps its rows and is partial")
    func truncatedFrame() throws {
        var gif = Self.animation
        gif.loopCount = nil
        let data = gif.data()
        #expect(try GIFDecoder().decode(data, options: .default).loopCount == 1)
        let cut = try GIFDecoder().decode(data.prefix(data.count - 20), options: .default)
        #expect(cut.isPartial)
        #expect(cut.frames.count >= 1)
    }
}
