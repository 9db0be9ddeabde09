import CGIF
import Foundation

/// Encodes as GIF89a with giflib: a still image or an animation, each frame in its own palette of at most
/// 256 colours (see `GIFPalette`: exact when the frame has that few, else giflib's median-cut quantizer,
/// `GifQuantizeBuffer`; no dithering).
///
/// Pixels with alpha below 128 become the frame's one transparent index; the rest are written opaque.
/// Every frame covers the whole canvas. A frame is disposed of "restore to background" when the frame
/// after it has transparent pixels (so they show through to nothing, as in the source) and left in place
/// otherwise. A frame's delay is its `duration` in hundredths of a second (at most 655.35 s); decoders
/// show delays of 0 and 1 as 0.1 s, `GIFDecoder` among them. An animation's `loopCount` is written as the
/// NETSCAPE2.0 extension's count, which `GIFDecoder` reads back as it is (0 forever); a `loopCount` of 1
/// is written as no extension, which plays once.
///
/// ```swift
/// let gif = try GIFEncoder().encode(animation)
/// ```
public struct GIFEncoder: ImageEncoding {
    /// Asked before every frame and every 16 rows of LZW compression; when it says stop, `encode` throws
    /// `.stopped`. Not part of `key`. nil by default.
    public var stopCheck: EncodeStopCheck?

    /// `.gif`.
    public var format: ImageFormat { .gif }
    /// The quantizer is the only choice that changes the bytes: `gif;quantizer=giflib-median-cut`.
    public var key: String { "gif;quantizer=giflib-median-cut" }

    /// Creates an encoder.
    public init(stopCheck: EncodeStopCheck? = nil) {
        self.stopCheck = stopCheck
    }

    /// Encodes every frame of `image`.
    ///
    /// - Throws: `ImageCodecError` `.encodingFailed` when the image has no frame, its frames differ in size
    ///   or a frame's size and pixel buffer disagree, or giflib fails; `.stopped` when `stopCheck` says stop.
    public func encode(_ image: Image) throws -> Data {
        _ = try EncodingCheck.frames(image, format: "GIF")
        let sink = GIFByteSink()
        var error: Int32 = 0
        // passUnretained: `sink` outlives the GifFileType, which is closed before this function returns
        // (on every path below), so giflib never writes through a dangling pointer.
        guard let gif = EGifOpen(Unmanaged.passUnretained(sink).toOpaque(), gifWrite, &error) else {
            throw Self.failure("cannot start the file", error)
        }
        do {
            try withExtendedLifetime(sink) { try write(image, to: gif) }
        } catch {
            var ignored: Int32 = 0
            EGifCloseFile(gif, &ignored)
            throw error
        }
        guard EGifCloseFile(gif, &error) == GIF_OK else { throw Self.failure("cannot finish the file", error) }
        return Data(sink.bytes)
    }

    private func write(_ image: Image, to gif: UnsafeMutablePointer<GifFileType>) throws {
        let first = image.frames[0]
        EGifSetGifVersion(gif, true)
        try Self.check(
            EGifPutScreenDesc(gif, Int32(first.width), Int32(first.height), 8, 0, nil), gif, "the screen")
        if image.frames.count > 1, image.loopCount != 1 {
            try Self.putLoopCount(image.loopCount, gif)
        }
        // Each frame's disposal depends on the next one's transparency: palettes are made one frame ahead.
        // The last frame's disposal comes before the first frame when the animation starts again.
        try stopCheck?.check("GIF")
        var palette = try GIFPalette(first)
        let firstHasTransparency = palette.transparentIndex != nil
        for index in image.frames.indices {
            var next: GIFPalette?
            if index + 1 < image.frames.count {
                try stopCheck?.check("GIF")
                next = try GIFPalette(image.frames[index + 1])
            }
            let clears = next.map { $0.transparentIndex != nil } ?? (image.frames.count > 1 && firstHasTransparency)
            try putFrame(image.frames[index], palette, disposal: clears ? DISPOSE_BACKGROUND : DISPOSE_DO_NOT, gif)
            if let next { palette = next }
        }
    }

    /// The NETSCAPE2.0 application extension: sub-block 1 carries the loop count, little-endian.
    private static func putLoopCount(_ loopCount: Int, _ gif: UnsafeMutablePointer<GifFileType>) throws {
        let count = UInt16(clamping: max(0, loopCount))
        var name = Array("NETSCAPE2.0".utf8)
        var block: [UInt8] = [1, UInt8(count & 0xFF), UInt8(count >> 8)]
        try check(EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE), gif, "the loop count")
        try check(EGifPutExtensionBlock(gif, Int32(name.count), &name), gif, "the loop count")
        try check(EGifPutExtensionBlock(gif, Int32(block.count), &block), gif, "the loop count")
        try check(EGifPutExtensionTrailer(gif), gif, "the loop count")
    }

    private func putFrame(
        _ frame: ImageFrame, _ palette: GIFPalette, disposal: Int32, _ gif: UnsafeMutablePointer<GifFileType>
    ) throws {
        var control = GraphicsControlBlock()
        control.DisposalMode = disposal
        control.UserInputFlag = false
        let seconds = frame.duration.isFinite ? max(0, frame.duration) : 0
        control.DelayTime = Int32(min(65_535, (seconds * 100).rounded()))
        control.TransparentColor = palette.transparentIndex.map(Int32.init) ?? Int32(NO_TRANSPARENT_COLOR)
        var extensionBytes = [UInt8](repeating: 0, count: 4)
        let length = EGifGCBToExtension(&control, &extensionBytes)
        try Self.check(EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, Int32(length), &extensionBytes), gif, "a frame")

        let entries = palette.colors.count / 3 + (palette.transparentIndex == nil ? 0 : 1)
        // A colour table has 2, 4, …, 256 entries.
        var tableSize = 2
        while tableSize < entries { tableSize *= 2 }
        var table = [GifColorType](repeating: GifColorType(), count: tableSize)
        for entry in 0..<(palette.colors.count / 3) {
            table[entry] = GifColorType(
                Red: palette.colors[entry * 3], Green: palette.colors[entry * 3 + 1],
                Blue: palette.colors[entry * 3 + 2])
        }
        guard let map = GifMakeMapObject(Int32(tableSize), &table) else {
            throw ImageCodecError(.encodingFailed, "GIF: giflib could not make a colour table (out of memory)")
        }
        defer { GifFreeMapObject(map) }
        try Self.check(
            EGifPutImageDesc(gif, 0, 0, Int32(frame.width), Int32(frame.height), false, map), gif, "a frame")
        var rows = palette.indices
        try rows.withUnsafeMutableBufferPointer { indices in
            guard let base = indices.baseAddress else { return }
            for y in 0..<frame.height {
                if y % 16 == 0 { try stopCheck?.check("GIF") }
                try Self.check(EGifPutLine(gif, base + y * frame.width, Int32(frame.width)), gif, "a row")
            }
        }
    }

    private static func check(_ status: Int32, _ gif: UnsafeMutablePointer<GifFileType>, _ what: String) throws {
        guard status == GIF_OK else { throw failure("cannot write \(what)", gif.pointee.Error) }
    }

    private static func failure(_ what: String, _ code: Int32) -> ImageCodecError {
        let text = GifErrorString(code).map { String(cString: $0) } ?? "giflib error \(code)"
        return ImageCodecError(.encodingFailed, "GIF: \(what): \(text)")
    }
}

/// The bytes giflib writes through `gifWrite`.
private final class GIFByteSink {
    var bytes: [UInt8] = []
}

/// giflib's output callback: appends `length` bytes and returns how many it took.
private let gifWrite: OutputFunc = { gif, buffer, length in
    guard let gif, let user = gif.pointee.UserData else { return 0 }
    guard let buffer, length > 0 else { return length == 0 ? 0 : -1 }
    let sink = Unmanaged<GIFByteSink>.fromOpaque(user).takeUnretainedValue()
    sink.bytes.append(contentsOf: UnsafeBufferPointer(start: buffer, count: Int(length)))
    return length
}
