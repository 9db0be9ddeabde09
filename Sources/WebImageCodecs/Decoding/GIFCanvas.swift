import Foundation

/// Composes GIF frames onto a full-canvas RGBA8 bitmap, following each frame's disposal method.
///
/// The canvas starts fully transparent. Disposal 0 and 1 leave the frame in place; 2 clears its rectangle
/// to transparent before the next frame; 3 restores what was there before it was drawn.
struct GIFCanvas {
    /// A frame's placement and drawing parameters, from its image descriptor and graphics control extension.
    struct FrameInfo {
        var left: Int
        var top: Int
        var width: Int
        var height: Int
        var disposal: Int
        var transparentIndex: Int?
    }

    let width: Int
    let height: Int
    private(set) var pixels: [UInt8]
    private var saved: [UInt8]?
    private var previous: FrameInfo?
    private var palette = [UInt8](repeating: 0, count: 256 * 4)
    private var current: FrameInfo?

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height * 4)
    }

    /// Applies the previous frame's disposal and prepares to draw `frame` with `colors` (RGB triples).
    mutating func begin(_ frame: FrameInfo, colors: [UInt8]) {
        if let previous {
            switch previous.disposal {
            case 2: clear(previous)
            case 3: if let saved { pixels = saved }
            default: break
            }
        }
        saved = frame.disposal == 3 ? pixels : nil
        // Indices beyond the color table draw opaque black, as browsers do.
        for index in 0..<256 {
            let color = index * 3
            let out = index * 4
            if color + 2 < colors.count {
                palette[out] = colors[color]
                palette[out + 1] = colors[color + 1]
                palette[out + 2] = colors[color + 2]
            } else {
                palette[out] = 0
                palette[out + 1] = 0
                palette[out + 2] = 0
            }
            palette[out + 3] = 255
        }
        if let transparent = frame.transparentIndex, transparent < 256 { palette[transparent * 4 + 3] = 0 }
        current = frame
    }

    /// Draws row `row` (0-based, in the frame) of color indices; the transparent index leaves the canvas as is.
    mutating func draw(row: Int, indices: [UInt8]) {
        guard let frame = current else { return }
        let y = frame.top + row
        guard y >= 0, y < height, frame.left >= 0, frame.left < width else { return }
        let count = min(indices.count, frame.width, width - frame.left)
        let transparent = frame.transparentIndex ?? -1
        let start = (y * width + frame.left) * 4
        // The one per-pixel loop of GIF decoding runs on raw pointers: `count` is clipped to the canvas row
        // and to `indices`, and the palette holds 256 entries, so every access is in bounds.
        palette.withUnsafeBufferPointer { palette in
            pixels.withUnsafeMutableBufferPointer { pixels in
                indices.withUnsafeBufferPointer { indices in
                    guard let colors = palette.baseAddress, let source = indices.baseAddress,
                        let canvas = pixels.baseAddress
                    else { return }
                    var out = canvas + start
                    for x in 0..<count {
                        let index = Int(source[x])
                        if index != transparent {
                            let color = colors + index * 4
                            out[0] = color[0]
                            out[1] = color[1]
                            out[2] = color[2]
                            out[3] = color[3]
                        }
                        out += 4
                    }
                }
            }
        }
    }

    /// Finishes the current frame; its disposal applies before the next one.
    mutating func end() {
        previous = current
        current = nil
    }

    /// Whether any canvas pixel is not opaque.
    var hasTransparency: Bool {
        pixels.withUnsafeBufferPointer { pixels in
            var index = 3
            while index < pixels.count {
                if pixels[index] != 255 { return true }
                index += 4
            }
            return false
        }
    }

    private mutating func clear(_ frame: FrameInfo) {
        let x0 = max(0, frame.left)
        let x1 = min(width, frame.left + frame.width)
        let y0 = max(0, frame.top)
        let y1 = min(height, frame.top + frame.height)
        guard x0 < x1, y0 < y1 else { return }
        for y in y0..<y1 {
            let start = (y * width + x0) * 4
            for index in start..<start + (x1 - x0) * 4 { pixels[index] = 0 }
        }
    }
}
