import Foundation

/// The built-in transformers. Each works on every frame of an animation.
///
/// Memory: before it makes anything, a transformer claims from the budget it is given
/// (`transform(_:budget:)`; the downloader passes its `maximumDecodeMemory`) the frames it will make,
/// each with its bookkeeping, and its largest working buffer (Lanczos works on 16-byte float pixels). An
/// animation whose resized frames cannot fit fails with `badImageData` instead of allocating them; ask
/// for `decodeFirstFrameOnly` when only the first frame is wanted.
///
/// ```swift
/// var context = ImageDownloadContext()
/// context.transformer = .pipeline([.applyOrientation, .resize(to: PixelSize(width: 256, height: 256), mode: .fill)])
/// ```
///
/// Choices: `resize` enlarges images smaller than the size too (as Kingfisher's resizing processor and
/// img2dataset do); `rotate` and `flip` move the stored pixels and leave `exifOrientation` alone, while
/// `applyOrientation` makes the pixels upright and sets it to 1; `crop` keeps the part of the rectangle
/// inside the image and fails (`badImageData`) when nothing is left; `roundCorners` makes the corners
/// transparent with an anti-aliased edge.
public struct ImageTransformer: ImageTransforming {
    indirect enum Kind: Sendable {
        case resize(PixelSize, ResizeMode)
        case resample(PixelSize, window: PixelRect)
        case place(canvas: PixelSize, x: Int, y: Int, color: ImageColor)
        case storedOrientation
        case crop(PixelRect)
        case applyOrientation
        case rotate(ImageRotation)
        case flip(FlipDirection)
        case roundCorners(radius: Int)
        case pipeline([any ImageTransforming])
    }

    let kind: Kind

    init(_ kind: Kind) {
        self.kind = kind
    }

    public var key: String {
        switch kind {
        case .resize(let size, let mode): "resize(\(size.width)x\(size.height),\(mode.keyComponent))"
        case .resample(let size, let window):
            "resample(\(size.width)x\(size.height),\(window.x),\(window.y),\(window.width)x\(window.height))"
        case .place(let canvas, let x, let y, let color): "place(\(canvas.width)x\(canvas.height),\(x),\(y),\(color))"
        case .storedOrientation: "stored-orientation"
        case .crop(let rect): "crop(\(rect.x),\(rect.y),\(rect.width)x\(rect.height))"
        case .applyOrientation: "orient"
        case .rotate(let rotation): "rotate(\(rotation.rawValue))"
        case .flip(let direction): "flip(\(direction.rawValue))"
        case .roundCorners(let radius): "round(\(radius))"
        case .pipeline(let steps): steps.map(\.key).joined(separator: "|")
        }
    }

    public var minimumDecodeSize: MinimumDecodeSize? {
        switch kind {
        case .resize(let size, .fill), .resize(let size, .stretch):
            return MinimumDecodeSize(size: size, coverage: .fill)
        case .resize(let size, .longestSide):
            let longest = max(size.width, size.height)
            return MinimumDecodeSize(size: PixelSize(width: longest, height: longest), coverage: .fit)
        case .resize(let size, _):
            return MinimumDecodeSize(size: size, coverage: .fit)
        case .pipeline(let steps):
            // The first step decides, as long as nothing before it changes the geometry; upright-making
            // may swap width and height, which does not matter for a square box.
            if let first = steps.first as? ImageTransformer, case .applyOrientation = first.kind, steps.count > 1 {
                guard let next = steps[1].minimumDecodeSize, next.size.width == next.size.height else { return nil }
                return next
            }
            return steps.first?.minimumDecodeSize
        default:
            return nil
        }
    }

    public func transform(_ image: Image) throws -> Image {
        try transform(image, budget: nil)
    }

    public func transform(_ image: Image, budget: DecodeMemoryBudget?) throws -> Image {
        let (result, claim) = try transformClaiming(image, budget: budget)
        claim?.release()
        return result
    }

    /// The transformed image and the claim on `budget` that covers it: the caller releases the claim once
    /// it no longer holds the image (a pipeline, after the next step has made its own).
    func transformClaiming(_ image: Image, budget: DecodeMemoryBudget?) throws -> (Image, DecodeMemoryBudget.Claim?) {
        if case .pipeline(let steps) = kind {
            var current = image
            var held: DecodeMemoryBudget.Claim?
            for step in steps {
                let (next, claim): (Image, DecodeMemoryBudget.Claim?) =
                    if let builtIn = step as? ImageTransformer {
                        try builtIn.transformClaiming(current, budget: budget)
                    } else {
                        (try step.transform(current, budget: budget), nil)
                    }
                held?.release()
                (current, held) = (next, claim)
            }
            return (current, held)
        }
        let claim = try budget?.claim(
            memoryNeeded(for: image),
            for: "the transformer \(key) on \(image.width)×\(image.height) × \(image.frames.count) frames", waits: true)
        do {
            return (try transformUnclaimed(image), claim)
        } catch {
            claim?.release()
            throw error
        }
    }

    /// The bytes this transformer makes from `image` (not a pipeline): every output frame with its
    /// bookkeeping, plus the largest working buffers of one frame. Frames that keep 16 bits a channel
    /// (`ImageFrame.deepPixels`) are counted three times: 8 bytes a pixel beside the 4 of `pixels`.
    func memoryNeeded(for image: Image) -> Int {
        let bytes = memoryNeededAtEightBits(for: image)
        return image.frames.first?.deepPixels == nil ? bytes : PixelMemory.sum(bytes, bytes, bytes)
    }

    private func memoryNeededAtEightBits(for image: Image) -> Int {
        let frames = max(1, image.frames.count)
        let size = PixelSize(width: image.width, height: image.height)
        switch kind {
        case .resize(let box, let mode):
            guard box.width > 0, box.height > 0, image.width > 0, image.height > 0 else { return 0 }
            let geometry = Self.resizeGeometry(Self.geometrySource(image), to: box, mode: mode)
            // What `resize` below allocates: `fill` resamples only its centre window; `pad` makes the whole
            // resized frame, then places it on the canvas.
            var working: Int
            if case .fill = mode {
                working = LanczosResampler.workingBytes(
                    from: size, to: geometry.resized, window: Self.centreWindow(geometry.resized, geometry.output))
            } else {
                working = LanczosResampler.workingBytes(from: size, to: geometry.resized)
            }
            if case .pad = mode, geometry.resized != geometry.output {
                working = PixelMemory.sum(working, PixelMemory.bytes(geometry.resized))
            }
            return PixelMemory.sum(PixelMemory.frameBytes(geometry.output, count: frames), working)
        case .resample(let target, let window):
            guard let window = Self.clipped(window, to: target) else { return 0 }
            let output = PixelSize(width: window.width, height: window.height)
            return PixelMemory.sum(
                PixelMemory.frameBytes(output, count: frames),
                LanczosResampler.workingBytes(from: size, to: target, window: window))
        case .place(let canvas, _, _, _):
            return PixelMemory.frameBytes(canvas, count: frames)
        case .storedOrientation where image.exifOrientation != 1 || !(2...8).contains(image.fileOrientation):
            return 0  // the frames are as stored already
        case .crop(let rect):
            let width = max(0, min(image.width, rect.x + max(0, rect.width)) - max(0, rect.x))
            let height = max(0, min(image.height, rect.y + max(0, rect.height)) - max(0, rect.y))
            return PixelMemory.frameBytes(PixelSize(width: width, height: height), count: frames)
        case .applyOrientation where !(2...8).contains(image.exifOrientation):
            return 0  // upright already: the frames are handed back as they are
        case .applyOrientation, .storedOrientation, .rotate, .flip, .roundCorners:
            return PixelMemory.frameBytes(size, count: frames)
        case .pipeline:
            return 0  // each step claims its own
        }
    }

    private func transformUnclaimed(_ image: Image) throws -> Image {
        switch kind {
        case .resize(let size, let mode):
            guard size.width > 0, size.height > 0 else {
                throw ImageCodecError(.invalidParameters, "resize to \(size): the size must be at least 1×1")
            }
            return Self.resize(image, to: size, mode: mode)
        case .resample(let size, let window):
            guard size.width > 0, size.height > 0, let window = Self.clipped(window, to: size) else {
                throw ImageCodecError(
                    .invalidParameters, "resample to \(size) keeping \(window): nothing would be left")
            }
            let opaque = !image.hasAlpha
            return Self.map(image) { LanczosResampler.resize($0, to: size, window: window, mayBeOpaque: opaque) }
        case .place(let canvas, let x, let y, let color):
            guard canvas.width > 0, canvas.height > 0 else {
                throw ImageCodecError(.invalidParameters, "place on \(canvas): the canvas must be at least 1×1")
            }
            var result = Self.map(image) { PixelOps.place($0, on: canvas, x: x, y: y, color: color) }
            let covers = x <= 0 && y <= 0 && x + image.width >= canvas.width && y + image.height >= canvas.height
            if color.alpha < 255 && !covers { result.hasAlpha = true }
            return result
        case .storedOrientation:
            var result = image
            if image.exifOrientation == 1, (2...8).contains(image.fileOrientation) {
                // The decoder turned the frames upright; the inverse turn gives them back as stored. Only 6
                // and 8 (quarter turns) are not their own inverse.
                let inverse = [6: 8, 8: 6][image.fileOrientation] ?? image.fileOrientation
                result = Self.map(image) { PixelOps.orient($0, inverse) }
                if inverse >= 5 { swap(&result.originalWidth, &result.originalHeight) }
            }
            result.exifOrientation = 1
            return result
        case .crop(let rect):
            let x0 = max(0, rect.x)
            let y0 = max(0, rect.y)
            let x1 = min(image.width, rect.x + max(0, rect.width))
            let y1 = min(image.height, rect.y + max(0, rect.height))
            guard x1 > x0, y1 > y0 else {
                throw ImageCodecError(
                    .invalidParameters,
                    "crop \(rect.width)×\(rect.height) at (\(rect.x), \(rect.y)) leaves nothing of a \(image.width)×\(image.height) image"
                )
            }
            return Self.map(image) { PixelOps.crop($0, PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)) }
        case .applyOrientation:
            let orientation = (1...8).contains(image.exifOrientation) ? image.exifOrientation : 1
            var result = Self.map(image) { PixelOps.orient($0, orientation) }
            result.exifOrientation = 1
            return result
        case .rotate(let rotation):
            let orientation = [ImageRotation.degrees90: 6, .degrees180: 3, .degrees270: 8][rotation] ?? 1
            return Self.map(image) { PixelOps.orient($0, orientation) }
        case .flip(let direction):
            return Self.map(image) { PixelOps.orient($0, direction == .horizontal ? 2 : 4) }
        case .roundCorners(let radius):
            var result = Self.map(image) { PixelOps.roundCorners($0, radius: radius) }
            if radius > 0 { result.hasAlpha = true }
            return result
        case .pipeline:
            return try transform(image, budget: nil)
        }
    }

    /// The size the resize geometry is computed from: the size the file declares (`originalWidth` ×
    /// `originalHeight`) when the frames are a shrink-on-load decode of it (the same aspect ratio within a
    /// pixel), otherwise the frames' own. So the result's size never depends on how far the decoder scaled:
    /// 640×427 fitted to 300×300 is 300×200 whether it was decoded at 640×427 or at 320×214.
    static func geometrySource(_ image: Image) -> PixelSize {
        let decoded = PixelSize(width: image.width, height: image.height)
        let original = PixelSize(width: image.originalWidth, height: image.originalHeight)
        guard decoded != original, decoded.width > 0, decoded.height > 0, original.width >= decoded.width,
            original.height >= decoded.height
        else { return decoded }
        let widthRatio = Double(decoded.width) / Double(original.width)
        let heightRatio = Double(decoded.height) / Double(original.height)
        let sameShape =
            abs(Double(original.height) * widthRatio - Double(decoded.height)) <= 1
            && abs(Double(original.width) * heightRatio - Double(decoded.width)) <= 1
        return sameShape ? original : decoded
    }

    /// `window` inside a `size` image; nil when nothing of it is.
    static func clipped(_ window: PixelRect, to size: PixelSize) -> PixelRect? {
        let x0 = max(0, window.x)
        let y0 = max(0, window.y)
        let x1 = min(size.width, window.x + max(0, window.width))
        let y1 = min(size.height, window.y + max(0, window.height))
        guard x1 > x0, y1 > y0 else { return nil }
        return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }

    /// The size an image of `source` is resampled to (`resized`) and the size it ends at (`output`: the
    /// crop of `.fill`, the canvas of `.pad`). Sides round as `PixelSize.scaledSide(_:by:)` does.
    static func resizeGeometry(_ source: PixelSize, to size: PixelSize, mode: ResizeMode) -> (
        resized: PixelSize, output: PixelSize
    ) {
        let width = Double(source.width)
        let height = Double(source.height)
        func scaled(_ scale: Double) -> PixelSize {
            PixelSize(
                width: max(1, PixelSize.scaledSide(source.width, by: scale)),
                height: max(1, PixelSize.scaledSide(source.height, by: scale)))
        }
        switch mode {
        case .fit:
            let fitted = scaled(min(Double(size.width) / width, Double(size.height) / height))
            let clamped = PixelSize(width: min(fitted.width, size.width), height: min(fitted.height, size.height))
            return (clamped, clamped)
        case .longestSide:
            let resized = scaled(Double(max(size.width, size.height)) / max(width, height))
            return (resized, resized)
        case .stretch:
            return (size, size)
        case .fill:
            let covering = scaled(max(Double(size.width) / width, Double(size.height) / height))
            return (PixelSize(width: max(covering.width, size.width), height: max(covering.height, size.height)), size)
        case .pad:
            let fitted = scaled(min(Double(size.width) / width, Double(size.height) / height))
            return (PixelSize(width: min(fitted.width, size.width), height: min(fitted.height, size.height)), size)
        }
    }

    /// The `output`-sized rectangle at the centre of `resized`: what `fill` keeps.
    static func centreWindow(_ resized: PixelSize, _ output: PixelSize) -> PixelRect {
        PixelRect(
            x: (resized.width - output.width) / 2, y: (resized.height - output.height) / 2, width: output.width,
            height: output.height)
    }

    private static func resize(_ image: Image, to size: PixelSize, mode: ResizeMode) -> Image {
        let (resized, output) = resizeGeometry(geometrySource(image), to: size, mode: mode)
        // An image without alpha has 255 in every alpha byte: the resampler tries its opaque path.
        let opaque = !image.hasAlpha
        switch mode {
        case .fit, .longestSide, .stretch:
            return map(image) { LanczosResampler.resize($0, to: resized, mayBeOpaque: opaque) }
        case .fill:
            // Only the centre is resampled: the same pixels as resizing everything, then cropping.
            let crop = centreWindow(resized, output)
            return map(image) { LanczosResampler.resize($0, to: resized, window: crop, mayBeOpaque: opaque) }
        case .pad(let color):
            var result = map(image) {
                PixelOps.place(LanczosResampler.resize($0, to: resized, mayBeOpaque: opaque), on: output, color: color)
            }
            if color.alpha < 255 && (resized.width < output.width || resized.height < output.height) {
                result.hasAlpha = true
            }
            return result
        }
    }

    /// `image` with `body` applied to every frame; the size follows the first frame.
    private static func map(_ image: Image, _ body: (ImageFrame) -> ImageFrame) -> Image {
        var result = image
        result.frames = image.frames.map(body)
        if let first = result.frames.first {
            result.width = first.width
            result.height = first.height
        }
        return result
    }
}

extension ImageTransforming where Self == ImageTransformer {
    /// Resizes with Lanczos-3 (see `ResizeMode`).
    public static func resize(to size: PixelSize, mode: ResizeMode = .fit) -> ImageTransformer {
        ImageTransformer(.resize(size, mode))
    }

    /// Keeps the part of the image inside `rect`.
    public static func crop(_ rect: PixelRect) -> ImageTransformer { ImageTransformer(.crop(rect)) }

    /// Resamples with Lanczos-3 to exactly `size` (aspect ratio not kept) and keeps the `window` of that
    /// (clipped to it), computing only the window: a scale and a crop in one step.
    public static func resize(to size: PixelSize, keeping window: PixelRect) -> ImageTransformer {
        ImageTransformer(.resample(size, window: window))
    }

    /// Places the image with its top left corner at (`x`, `y`) on a `canvas` filled with `color`; what
    /// falls outside the canvas is cut. The result has alpha when `color` is not opaque and shows.
    public static func place(on canvas: PixelSize, x: Int, y: Int, color: ImageColor) -> ImageTransformer {
        ImageTransformer(.place(canvas: canvas, x: x, y: y, color: color))
    }

    /// The frames as the file stores them, its orientation ignored: undoes the upright turn a decoder made
    /// (by `fileOrientation`, with the declared sizes), and `exifOrientation` becomes 1.
    public static var storedOrientation: ImageTransformer { ImageTransformer(.storedOrientation) }

    /// Rotates and flips the pixels as `exifOrientation` says, so they are upright; then orientation is 1.
    public static var applyOrientation: ImageTransformer { ImageTransformer(.applyOrientation) }

    /// Turns the pixels clockwise.
    public static func rotate(_ rotation: ImageRotation) -> ImageTransformer { ImageTransformer(.rotate(rotation)) }

    /// Mirrors the pixels.
    public static func flip(_ direction: FlipDirection) -> ImageTransformer { ImageTransformer(.flip(direction)) }

    /// Makes the corners transparent outside quarter circles of `radius` pixels (anti-aliased).
    public static func roundCorners(radius: Int) -> ImageTransformer { ImageTransformer(.roundCorners(radius: radius)) }

    /// Runs `steps` in order; the key joins theirs.
    public static func pipeline(_ steps: [any ImageTransforming]) -> ImageTransformer {
        ImageTransformer(.pipeline(steps))
    }
}

/// Pixel moves the transformers share.
enum PixelOps {
    /// `rect` of `frame` (inside it); at 16 bits when the frame has them.
    static func crop(_ frame: ImageFrame, _ rect: PixelRect) -> ImageFrame {
        if let deep = frame.sixteenBitSamples {
            var samples = [UInt16]()
            samples.reserveCapacity(rect.width * rect.height * 4)
            for y in rect.y..<(rect.y + rect.height) {
                let start = (y * frame.width + rect.x) * 4
                samples += deep[start..<(start + rect.width * 4)]
            }
            return ImageFrame(width: rect.width, height: rect.height, deepPixels: samples, duration: frame.duration)
        }
        var pixels = [UInt8]()
        pixels.reserveCapacity(rect.width * rect.height * 4)
        for y in rect.y..<(rect.y + rect.height) {
            let start = y * frame.bytesPerRow + rect.x * 4
            pixels += frame.pixels[start..<(start + rect.width * 4)]
        }
        return ImageFrame(
            width: rect.width, height: rect.height, bytesPerRow: rect.width * 4, pixels: pixels,
            duration: frame.duration)
    }

    /// The frame as displayed under EXIF `orientation` (1…8): 2 mirrors left-right, 3 turns 180°, 4
    /// mirrors top-bottom, 5 transposes, 6 turns 90° clockwise, 7 transverses, 8 turns 90° anticlockwise.
    static func orient(_ frame: ImageFrame, _ orientation: Int) -> ImageFrame {
        guard orientation != 1 else { return frame }
        let swaps = orientation >= 5
        let outWidth = swaps ? frame.height : frame.width
        let outHeight = swaps ? frame.width : frame.height
        if let deep = frame.sixteenBitSamples {
            // A 16-bit pixel is four samples, eight bytes: moved as one UInt64.
            let samples = oriented(
                deep, word: UInt64.self, width: frame.width, height: frame.height, rowWords: frame.width, orientation)
            return ImageFrame(width: outWidth, height: outHeight, deepPixels: samples, duration: frame.duration)
        }
        let pixels = oriented(
            frame.pixels, word: UInt32.self, width: frame.width, height: frame.height, rowWords: frame.bytesPerRow / 4,
            orientation)
        return ImageFrame(
            width: outWidth, height: outHeight, bytesPerRow: outWidth * 4, pixels: pixels, duration: frame.duration)
    }

    /// `samples` (rows of `rowWords` pixels, each one `Word` of four samples) as shown under EXIF `orientation`,
    /// tightly packed.
    private static func oriented<Sample: FixedWidthInteger, Word: FixedWidthInteger>(
        _ samples: [Sample], word: Word.Type, width w: Int, height h: Int, rowWords: Int, _ orientation: Int
    ) -> [Sample] {
        let swaps = orientation >= 5
        let outWidth = swaps ? h : w
        let outHeight = swaps ? w : h
        var result = [Sample](repeating: 0, count: outWidth * outHeight * 4)
        samples.withUnsafeBytes { source in
            let input = source.bindMemory(to: Word.self)
            result.withUnsafeMutableBytes { target in
                let output = target.bindMemory(to: Word.self)
                for oy in 0..<outHeight {
                    for ox in 0..<outWidth {
                        let (sx, sy): (Int, Int) =
                            switch orientation {
                            case 2: (w - 1 - ox, oy)
                            case 3: (w - 1 - ox, h - 1 - oy)
                            case 4: (ox, h - 1 - oy)
                            case 5: (oy, ox)
                            case 6: (oy, h - 1 - ox)
                            case 7: (w - 1 - oy, h - 1 - ox)
                            default: (w - 1 - oy, ox)  // 8
                            }
                        output[oy * outWidth + ox] = input[sy * rowWords + sx]
                    }
                }
            }
        }
        return result
    }

    /// `frame` centred on a `size` canvas of `color`.
    static func place(_ frame: ImageFrame, on size: PixelSize, color: ImageColor) -> ImageFrame {
        place(frame, on: size, x: (size.width - frame.width) / 2, y: (size.height - frame.height) / 2, color: color)
    }

    /// `frame` with its top left corner at (`x`, `y`) on a `size` canvas of `color`, cut at the canvas.
    static func place(_ frame: ImageFrame, on size: PixelSize, x: Int, y: Int, color: ImageColor) -> ImageFrame {
        let fill = [color.red, color.green, color.blue, color.alpha]
        if let deep = frame.sixteenBitSamples {
            let samples = placed(
                deep, rowSamples: frame.width * 4, width: frame.width, height: frame.height, on: size, x: x, y: y,
                fill: fill.map { UInt16($0) * 257 })
            return ImageFrame(width: size.width, height: size.height, deepPixels: samples, duration: frame.duration)
        }
        let pixels = placed(
            frame.pixels, rowSamples: frame.bytesPerRow, width: frame.width, height: frame.height, on: size, x: x,
            y: y, fill: fill)
        return ImageFrame(
            width: size.width, height: size.height, bytesPerRow: size.width * 4, pixels: pixels,
            duration: frame.duration)
    }

    /// A `size` canvas of `fill` (one pixel's four samples) with `samples` (rows of `rowSamples`) at (`x`, `y`).
    private static func placed<Sample: FixedWidthInteger>(
        _ samples: [Sample], rowSamples: Int, width: Int, height: Int, on size: PixelSize, x: Int, y: Int,
        fill: [Sample]
    ) -> [Sample] {
        var result = [Sample](repeating: 0, count: size.width * size.height * 4)
        for index in stride(from: 0, to: result.count, by: 4) {
            result[index] = fill[0]
            result[index + 1] = fill[1]
            result[index + 2] = fill[2]
            result[index + 3] = fill[3]
        }
        // The part of the frame on the canvas, in canvas columns and rows.
        let x0 = max(0, x)
        let x1 = min(size.width, x + width)
        let y0 = max(0, y)
        let y1 = min(size.height, y + height)
        if x1 > x0, y1 > y0 {
            for row in y0..<y1 {
                let source = (row - y) * rowSamples + (x0 - x) * 4
                let target = (row * size.width + x0) * 4
                let count = (x1 - x0) * 4
                result.replaceSubrange(target..<(target + count), with: samples[source..<(source + count)])
            }
        }
        return result
    }

    /// Alpha scaled by how much of each corner pixel lies inside the quarter circle.
    static func roundCorners(_ frame: ImageFrame, radius: Int) -> ImageFrame {
        let r = min(radius, frame.width / 2, frame.height / 2)
        guard r > 0 else { return frame }
        var result = frame
        let radiusValue = Double(r)
        for y in 0..<r {
            for x in 0..<r {
                // Distance from the pixel centre to the corner circle's centre.
                let dx = radiusValue - (Double(x) + 0.5)
                let dy = radiusValue - (Double(y) + 0.5)
                let coverage = min(1, max(0, radiusValue - (dx * dx + dy * dy).squareRoot() + 0.5))
                guard coverage < 1 else { continue }
                for (cx, cy) in [
                    (x, y), (frame.width - 1 - x, y), (x, frame.height - 1 - y),
                    (frame.width - 1 - x, frame.height - 1 - y),
                ] {
                    let index = cy * frame.bytesPerRow + cx * 4 + 3
                    result.pixels[index] = UInt8((Double(frame.pixels[index]) * coverage).rounded())
                }
            }
        }
        return result
    }
}
