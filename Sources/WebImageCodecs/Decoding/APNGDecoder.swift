import CPNG
import Foundation

/// Decodes animated PNG (APNG), as SDWebImage's `SDImageAPNGCoder` shows it: every frame composed on the
/// canvas with its dispose and blend operations, its delay, and `acTL`'s play count as `loopCount`.
///
/// Debian's libpng has no APNG support, so `APNGContainer` reads and checks the animation chunks, and each
/// frame is decoded by libpng from a plain PNG stream made for it (IHDR with the frame's size, the palette,
/// transparency and colour chunks, the frame's data as IDAT). Frames then compose on a full-canvas RGBA8
/// bitmap: dispose 1 clears the frame's rectangle to transparent black before the next frame, 2 restores
/// what was there before it (on the first frame it counts as 1, as the specification says); blend 0 replaces
/// the rectangle, 1 composites over it. The canvas, the frame being decoded, the saved copy for dispose 2 and
/// the frames kept are claimed from the memory budget at once, up front, and the frames kept follow
/// `DecodeSizing.animationPlan` (so `maximumImagePixels`, `maximumAnimationFrames` and
/// `decodeFirstFrameOnly` bound the work as for GIF). Thumbnails and scale-down compose at canvas size and
/// average each frame down. Colour and orientation are applied as for a still PNG. Data that ends early
/// keeps the frames that arrived (the last one's rows that arrived) with `isPartial == true`.
enum APNGDecoder {
    static func decode(_ data: Data, container: APNGContainer, options: ImageDecodingOptions) throws -> Image {
        guard !container.frames.isEmpty else {
            throw DecodingFailure.badImageData("APNG: the data ends before the first frame's image data")
        }
        let orientation = EXIFOrientation.fromPNG(data)
        let sizing = try DecodeSizing(
            width: container.canvas.width, height: container.canvas.height, format: .png, options: options,
            orientation: orientation)
        let restores = container.frames.dropFirst().contains { $0.control.dispose == 2 }
        // The canvas, the frame being decoded (at most the canvas), and the copy dispose 2 restores.
        let plan = sizing.animationPlan(
            declaredFrames: container.frameCount, canvases: 2 + (restores ? 1 : 0), options: options)
        let claim = try PixelMemory.claim(
            plan.bytes, largest: PixelMemory.bytes(sizing.original), options: options,
            for: "APNG \(sizing.original) × \(plan.frames) frames")
        defer { claim.release() }

        var canvas = APNGCanvas(size: sizing.original)
        var frames: [ImageFrame] = []
        var colorSpace: EmbeddedColorSpace?
        var hasAlpha = false
        var isPartial = container.isTruncated
        for index in 0..<min(plan.frames, container.frames.count) {
            let control = container.frames[index].control
            let stream = container.stream(for: index, from: data)
            let decoded: (pixels: [UInt8], colorSpace: EmbeddedColorSpace?, hasAlpha: Bool, isPartial: Bool)
            do {
                decoded = try stream.withUnsafeBufferPointer { buffer in
                    guard let base = buffer.baseAddress, let reader = PNGReader(base, buffer.count) else {
                        throw DecodingFailure.badImageData("APNG: out of memory creating the reader")
                    }
                    return try reader.decodeFrame(control, index: index)
                }
            } catch  where container.isTruncated && index > 0 && index == container.frameCount - 1 {
                // The data ends before a row of the last frame arrived: the frames before it stand.
                isPartial = true
                break
            }
            if index == 0 {
                colorSpace = decoded.colorSpace
                hasAlpha = decoded.hasAlpha
            }
            canvas.draw(decoded.pixels, control: control, isFirst: index == 0)
            if !hasAlpha { hasAlpha = canvas.hasTransparency }
            let frame = ImageFrame(
                width: canvas.size.width, height: canvas.size.height, bytesPerRow: canvas.size.width * 4,
                pixels: canvas.pixels, duration: control.duration)
            frames.append(PixelResampler.resample(frame, to: sizing.target))
            canvas.endFrame()
            if decoded.isPartial {
                isPartial = true
                break
            }
        }
        var image = Image(
            format: .png, width: sizing.target.width, height: sizing.target.height,
            originalWidth: sizing.original.width, originalHeight: sizing.original.height, frames: frames,
            frameCount: container.isTruncated
                ? max(container.declaredFrames, container.frameCount) : container.frameCount,
            loopCount: container.plays, hasAlpha: hasAlpha, isPartial: isPartial)
        ColorManagement.apply(PNGDecoder.cicp(in: data) ?? colorSpace, to: &image, options: options)
        image.orient(orientation, options: options)
        return image
    }
}

extension PNGReader {
    /// Decodes one APNG frame's stream at full size to RGBA8, without colour conversion.
    func decodeFrame(_ control: APNGContainer.FrameControl, index: Int) throws -> (
        pixels: [UInt8], colorSpace: EmbeddedColorSpace?, hasAlpha: Bool, isPartial: Bool
    ) {
        var header = wi_png_header()
        guard wi_png_read_header(handle, &header) == 0 else {
            throw DecodingFailure.badImageData("APNG frame \(index) header unreadable: \(message)")
        }
        let stride = control.width * 4
        var rows: UInt32 = 0
        var status: Int32 = 0
        let pixels = [UInt8](unsafeUninitializedCapacity: stride * control.height) { buffer, count in
            if let base = buffer.baseAddress {
                // wi_png_decode writes every row: decoded pixels or zeros.
                status = wi_png_decode(
                    handle, 1, base, stride, UInt32(control.width), UInt32(control.height), &rows)
                count = stride * control.height
            } else {
                status = -1
                count = 0
            }
        }
        guard status == 0 || rows > 0 else {
            throw DecodingFailure.badImageData("APNG frame \(index) undecodable: \(message)")
        }
        // The colour space is read while the reader, which owns the profile's bytes, is alive.
        return (pixels, PNGDecoder.colorSpace(of: header), header.hasAlpha != 0, status != 0)
    }
}

/// The full-canvas RGBA8 bitmap APNG frames compose on, with the disposal of the frame before.
struct APNGCanvas {
    let size: PixelSize
    private(set) var pixels: [UInt8]
    /// The canvas before the current frame was drawn, when its dispose operation is 2 (previous).
    private var saved: [UInt8]?
    /// The current frame's rectangle and dispose operation, applied by `endFrame`.
    private var pending: APNGContainer.FrameControl?

    init(size: PixelSize) {
        self.size = size
        pixels = [UInt8](repeating: 0, count: size.width * size.height * 4)
    }

    /// Draws a frame's RGBA8 `source` (its rectangle's rows) at its place, replacing or compositing over
    /// the canvas as its blend operation says.
    mutating func draw(_ source: [UInt8], control: APNGContainer.FrameControl, isFirst: Bool) {
        var control = control
        // Dispose 2 on the first frame means dispose 1: there is nothing before it to restore.
        if isFirst, control.dispose == 2 { control.dispose = 1 }
        saved = control.dispose == 2 ? pixels : nil
        pending = control
        let rowBytes = control.width * 4
        source.withUnsafeBufferPointer { source in
            pixels.withUnsafeMutableBufferPointer { canvas in
                // The rectangle is inside the canvas (APNGContainer checks it) and `source` holds its rows.
                guard let input = source.baseAddress, let output = canvas.baseAddress,
                    source.count >= rowBytes * control.height
                else { return }
                for row in 0..<control.height {
                    let from = input + row * rowBytes
                    let to = output + ((control.y + row) * size.width + control.x) * 4
                    if control.blend == 0 {
                        to.update(from: from, count: rowBytes)
                    } else {
                        for pixel in 0..<control.width { Self.over(from + pixel * 4, to + pixel * 4) }
                    }
                }
            }
        }
    }

    /// Applies the current frame's dispose operation, before the next frame is drawn.
    mutating func endFrame() {
        guard let control = pending else { return }
        pending = nil
        switch control.dispose {
        case 1:
            for row in control.y..<(control.y + control.height) {
                let start = (row * size.width + control.x) * 4
                pixels.replaceSubrange(
                    start..<(start + control.width * 4), with: repeatElement(0, count: control.width * 4))
            }
        case 2:
            if let saved { pixels = saved }
            saved = nil
        default:
            break
        }
    }

    /// Whether any canvas pixel is not opaque.
    var hasTransparency: Bool {
        stride(from: 3, to: pixels.count, by: 4).contains { pixels[$0] != 255 }
    }

    /// `source` composited over `target` (straight alpha, "over" as PNG's blend operation 1 defines it).
    private static func over(_ source: UnsafePointer<UInt8>, _ target: UnsafeMutablePointer<UInt8>) {
        let alpha = UInt32(source[3])
        if alpha == 255 {
            target.update(from: source, count: 4)
            return
        }
        if alpha == 0 { return }
        let below = UInt32(target[3]) * (255 - alpha)  // the target's share, × 255
        let total = alpha * 255 + below  // the result's alpha, × 255
        for channel in 0..<3 {
            let value = UInt32(source[channel]) * alpha * 255 + UInt32(target[channel]) * below
            target[channel] = UInt8((value + total / 2) / total)
        }
        target[3] = UInt8((total + 127) / 255)
    }
}
