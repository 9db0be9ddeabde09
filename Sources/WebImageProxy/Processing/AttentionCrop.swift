import WebImageCodecs

/// Smart gravity (`g:sm`): where a crop window keeps the most interesting part of an image, found the way
/// libvips's `attention` smart crop (and smartcrop.js before it) looks for it: what draws the eye is
/// detail, strong colour and people.
///
/// The frame is first shrunk by box averages to at most `workingSide` pixels a side (over black where it
/// is transparent): the score is about regions, not single pixels, and the work stays small whatever the
/// source's size. Each pixel of that copy scores
///
/// - **detail**: twice the magnitude of the Laplacian of its luma (Rec. 709 weights), the difference from
///   its four neighbours: edges and texture, the strongest signal, as in libvips;
/// - **colour**: half its chroma (largest channel minus smallest), so saturated regions beat grey ones;
/// - **skin**: up to 100 when its colour points the way of skin tones (red over green over blue, the
///   direction of (0.78, 0.57, 0.44) within a distance of 0.2 of the normalised colours), so faces and
///   people win over equally detailed things;
///
/// colour and skin only where the pixel is not dark (luma above 13), where hue means little. The window
/// kept is the one, of the crop's size scaled to the copy, whose summed score is largest (a summed-area
/// table makes each candidate one lookup), the one nearest the middle among equals, so an image without
/// anything of interest is cut in the middle, as centre gravity would. libvips centres its window on the
/// blurred score's maximum instead; the largest sum keeps the most of the interesting region when it is
/// larger than a point.
enum AttentionCrop {
    /// The longest side of the working copy.
    static let workingSide = 256

    /// The top left corner of the `size` window of `frame` with the most interest; the frame's own size
    /// when the window is larger.
    static func window(_ size: PixelSize, in frame: ImageFrame) -> (x: Int, y: Int) {
        let width = frame.width
        let height = frame.height
        guard size.width < width || size.height < height, width > 0, height > 0,
            frame.bytesPerRow >= width * 4, frame.pixels.count >= height * frame.bytesPerRow
        else { return (0, 0) }
        let map = ScoreMap(frame)
        let windowWidth = max(
            1, min(map.width, Int((Double(size.width) * Double(map.width) / Double(width)).rounded())))
        let windowHeight = max(
            1, min(map.height, Int((Double(size.height) * Double(map.height) / Double(height)).rounded())))
        let best = map.bestWindow(width: windowWidth, height: windowHeight)
        return (
            place(best.x, windowWidth, map.width, in: width, size.width),
            place(best.y, windowHeight, map.height, in: height, size.height)
        )
    }

    /// Where a window of `length` pixels goes on a side of `side` pixels, for the map's window at `start`,
    /// `mapLength` long, on a side of `mapSide`: centred on the same point, and against the edge when the
    /// map's window is, so that rounding never leaves out the edge it chose.
    static func place(_ start: Int, _ mapLength: Int, _ mapSide: Int, in side: Int, _ length: Int) -> Int {
        let last = max(0, side - length)
        if start == 0 { return 0 }
        if start + mapLength >= mapSide { return last }
        let centre = (Double(start) + Double(mapLength) / 2) * Double(side) / Double(mapSide)
        return max(0, min(last, Int((centre - Double(length) / 2).rounded())))
    }
}

/// The interest of each pixel of a shrunk copy of a frame (`AttentionCrop`).
struct ScoreMap {
    let width: Int
    let height: Int
    /// Row by row, whole numbers so equal windows sum to exactly equal scores.
    var scores: [Int]

    init(_ frame: ImageFrame) {
        let factor = max(
            1, (max(frame.width, frame.height) + AttentionCrop.workingSide - 1) / AttentionCrop.workingSide)
        width = (frame.width + factor - 1) / factor
        height = (frame.height + factor - 1) / factor
        let colours = Self.shrunk(frame, factor: factor, width: width, height: height)
        var luma = [Int](repeating: 0, count: width * height)
        for index in luma.indices {
            let (red, green, blue) = colours[index]
            luma[index] = (2126 * red + 7152 * green + 722 * blue) / 10_000
        }
        scores = [Int](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let index = y * width + x
                let around =
                    luma[y * width + max(0, x - 1)] + luma[y * width + min(width - 1, x + 1)]
                    + luma[max(0, y - 1) * width + x] + luma[min(height - 1, y + 1) * width + x]
                var score = 2 * abs(4 * luma[index] - around)
                if luma[index] > 13 {
                    let (red, green, blue) = colours[index]
                    score += (max(red, green, blue) - min(red, green, blue)) / 2
                    score += Self.skin(red, green, blue)
                }
                scores[index] = score
            }
        }
    }

    /// 0…100: how near the colour's direction is to skin's.
    static func skin(_ red: Int, _ green: Int, _ blue: Int) -> Int {
        let length = Double(red * red + green * green + blue * blue).squareRoot()
        guard length > 0 else { return 0 }
        let tone = (0.78, 0.57, 0.44)
        let toneLength = (tone.0 * tone.0 + tone.1 * tone.1 + tone.2 * tone.2).squareRoot()
        let dr = Double(red) / length - tone.0 / toneLength
        let dg = Double(green) / length - tone.1 / toneLength
        let db = Double(blue) / length - tone.2 / toneLength
        let distance = (dr * dr + dg * dg + db * db).squareRoot()
        return distance < 0.2 ? Int((100 * (1 - distance / 0.2)).rounded()) : 0
    }

    /// Box averages of `factor`×`factor` pixels (fewer at the right and bottom edges), premultiplied by
    /// alpha: transparent parts are black, dull.
    static func shrunk(_ frame: ImageFrame, factor: Int, width: Int, height: Int) -> [(Int, Int, Int)] {
        var sums = [(Int, Int, Int)](repeating: (0, 0, 0), count: width * height)
        let pixels = frame.pixels
        for y in 0..<frame.height {
            let row = (y / factor) * width
            for x in 0..<frame.width {
                let index = y * frame.bytesPerRow + x * 4
                let alpha = Int(pixels[index + 3])
                let cell = row + x / factor
                sums[cell].0 += Int(pixels[index]) * alpha
                sums[cell].1 += Int(pixels[index + 1]) * alpha
                sums[cell].2 += Int(pixels[index + 2]) * alpha
            }
        }
        for cellY in 0..<height {
            let rows = min(factor, frame.height - cellY * factor)
            for cellX in 0..<width {
                let count = rows * min(factor, frame.width - cellX * factor) * 255
                let sum = sums[cellY * width + cellX]
                sums[cellY * width + cellX] = (sum.0 / count, sum.1 / count, sum.2 / count)
            }
        }
        return sums
    }

    /// The top left corner of the `width`×`height` window with the largest summed score; among equal ones,
    /// the one whose centre is nearest the map's.
    func bestWindow(width windowWidth: Int, height windowHeight: Int) -> (x: Int, y: Int) {
        // table[(y)(width + 1) + x]: the sum of the scores above and left of (x, y).
        let stride = width + 1
        var table = [Int](repeating: 0, count: stride * (height + 1))
        for y in 0..<height {
            var rowSum = 0
            for x in 0..<width {
                rowSum += scores[y * width + x]
                table[(y + 1) * stride + x + 1] = table[y * stride + x + 1] + rowSum
            }
        }
        var best = (x: 0, y: 0, score: Int.min, distance: Int.max)
        for y in 0...(height - windowHeight) {
            for x in 0...(width - windowWidth) {
                let bottom = (y + windowHeight) * stride
                let score =
                    table[bottom + x + windowWidth] - table[bottom + x] - table[y * stride + x + windowWidth]
                    + table[y * stride + x]
                let distance = abs(2 * x + windowWidth - width) + abs(2 * y + windowHeight - height)
                if score > best.score || (score == best.score && distance < best.distance) {
                    best = (x, y, score, distance)
                }
            }
        }
        return (best.x, best.y)
    }
}
