import WebImageCodecs

/// imgproxy's `trim` step: what is left of a still image once the background around it is cut off, found
/// the way imgproxy asks libvips's `find_trim` for it.
///
/// Transparency is flattened onto magenta (`ff00ff`), imgproxy's transparency key, so `t:…:ff00ff` cuts
/// transparent margins. Each channel is smoothed by the median of its 3×3 neighbourhood (edges repeated),
/// so that a stray pixel of noise keeps nothing; a pixel is kept when a median differs from the
/// background by more than the threshold. The result keeps the smallest rectangle holding every kept
/// pixel, with `equal_hor` / `equal_ver` cutting the smaller margin from both sides.
///
/// An image that is all background, and an animation processed as one (several frames decoded), are left
/// whole, as imgproxy leaves them; the first frame of an animation decoded alone is a still and is trimmed.
enum ImageTrim {
    /// imgproxy's transparency key: the colour transparent pixels are flattened onto before comparing.
    static let transparencyKey = ImageColor(red: 255, green: 0, blue: 255)

    /// `image` (upright) trimmed by `trim`, and `source`, the plan's size of it, made the trimmed size.
    /// `quarterTurned` says whether the stored file is turned a quarter from `image`: imgproxy trims the
    /// stored pixels, so its `equal_hor` is the upright image's vertical margins then.
    static func trimmed(
        _ image: Image, _ trim: TrimOption, source: inout PixelSize, quarterTurned: Bool,
        budget: DecodeMemoryBudget?
    ) throws -> Image {
        guard let threshold = trim.threshold, image.frames.count == 1, let frame = image.frames.first
        else { return image }
        var rect = bounds(of: frame, threshold: threshold, color: trim.color)
        guard rect.width > 0, rect.height > 0 else { return image }
        if quarterTurned ? trim.equalVertical : trim.equalHorizontal { equalize(&rect.x, &rect.width, frame.width) }
        if quarterTurned ? trim.equalHorizontal : trim.equalVertical { equalize(&rect.y, &rect.height, frame.height) }
        guard rect.width < frame.width || rect.height < frame.height else { return image }
        // The plan counts in the file's pixels; a decoder that shrank the frames counts in fewer.
        source = PixelSize(
            width: max(1, Int((Double(rect.width) * Double(source.width) / Double(frame.width)).rounded())),
            height: max(1, Int((Double(rect.height) * Double(source.height) / Double(frame.height)).rounded())))
        return try ImageTransformer.crop(rect).transform(image, budget: budget)
    }

    /// The same margin, the smaller of the two, on both sides of `start..<start + length` in `0..<side`.
    static func equalize(_ start: inout Int, _ length: inout Int, _ side: Int) {
        let margin = min(start, side - start - length)
        start = margin
        length = side - 2 * margin
    }

    /// The smallest rectangle holding every pixel that is not background; empty (width or height 0) when
    /// all is background.
    static func bounds(of frame: ImageFrame, threshold: Double, color: ImageColor?) -> PixelRect {
        let width = frame.width
        let height = frame.height
        guard width > 0, height > 0, frame.bytesPerRow >= width * 4, frame.pixels.count >= height * frame.bytesPerRow
        else { return PixelRect(x: 0, y: 0, width: 0, height: 0) }
        let background = color ?? flattened(frame, 0, 0)
        // A channel's difference is whole, so "more than the threshold" is "more than its whole part".
        let allowed = Int(threshold)
        let high = [Int(background.red), Int(background.green), Int(background.blue)].map { $0 + allowed }
        let low = [Int(background.red), Int(background.green), Int(background.blue)].map { $0 - allowed }
        // One nibble per channel and side (above, below): the 3×3 sums of them count, in each nibble, the
        // neighbours past the threshold on that side. A median is past it when 5 of the 9 are. Three rows
        // of marks at a time: the memory is a few rows whatever the image's height.
        func marks(_ y: Int, into row: inout [UInt32]) {
            for x in 0..<width {
                let index = y * frame.bytesPerRow + x * 4
                let alpha = Int(frame.pixels[index + 3])
                var mark: UInt32 = 0
                for channel in 0..<3 {
                    var value = Int(frame.pixels[index + channel])
                    if alpha != 255 { value = over(value, alpha, channel) }
                    if value > high[channel] { mark |= 1 << (channel * 4) }
                    if value < low[channel] { mark |= 1 << (12 + channel * 4) }
                }
                row[x] = mark
            }
        }
        var above = [UInt32](repeating: 0, count: width)
        var here = above
        var below = above
        var columns = above
        marks(0, into: &here)
        above = here
        var rows = (first: height, last: -1)
        var kept = (first: width, last: -1)
        for y in 0..<height {
            if y + 1 < height { marks(y + 1, into: &below) } else { below = here }
            for x in 0..<width { columns[x] = above[x] + here[x] + below[x] }
            for x in 0..<width {
                let sum = columns[max(0, x - 1)] + columns[x] + columns[min(width - 1, x + 1)]
                // Each nibble is at most 9: adding 3 sets its top bit exactly when it is 5 or more.
                guard (sum + 0x33_3333) & 0x88_8888 != 0 else { continue }
                rows = (min(rows.first, y), y)
                kept = (min(kept.first, x), max(kept.last, x))
            }
            swap(&above, &here)
            swap(&here, &below)
        }
        guard rows.last >= 0 else { return PixelRect(x: 0, y: 0, width: 0, height: 0) }
        return PixelRect(
            x: kept.first, y: rows.first, width: kept.last - kept.first + 1, height: rows.last - rows.first + 1)
    }

    /// The pixel at (`x`, `y`) over the transparency key.
    static func flattened(_ frame: ImageFrame, _ x: Int, _ y: Int) -> ImageColor {
        let index = y * frame.bytesPerRow + x * 4
        let alpha = Int(frame.pixels[index + 3])
        let channels = (0..<3).map { UInt8(over(Int(frame.pixels[index + $0]), alpha, $0)) }
        return ImageColor(red: channels[0], green: channels[1], blue: channels[2])
    }

    /// Channel `channel`'s `value` with straight `alpha` over the transparency key, rounded.
    static func over(_ value: Int, _ alpha: Int, _ channel: Int) -> Int {
        let key =
            channel == 1
            ? Int(transparencyKey.green) : channel == 0 ? Int(transparencyKey.red) : Int(transparencyKey.blue)
        return (value * alpha + key * (255 - alpha) + 127) / 255
    }
}
