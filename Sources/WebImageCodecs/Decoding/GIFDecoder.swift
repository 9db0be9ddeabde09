import CGIF
import Foundation

/// Decodes GIF with giflib: static and animated, with per-frame delays, disposal methods (including
/// restore-to-previous), transparency and the NETSCAPE2.0 loop count; every frame is composed onto the
/// full canvas as RGBA8.
///
/// Delays of 0 or 1 hundredths of a second become 0.1 s, as browsers and SDWebImage show them. A file
/// without a loop extension plays once (`loopCount` 1); NETSCAPE2.0 with 0 loops forever (`loopCount` 0).
/// Frames are decoded eagerly (see `ImageDecodingOptions.preloadAllFrames`); thumbnails and scale-down
/// compose at canvas size and average each frame down. Data that ends inside a frame keeps the rows that
/// arrived and gives `isPartial == true`.
///
/// This file is the only one that calls giflib.
public struct GIFDecoder: ImageDecoding {
    /// Creates the decoder; it holds no state.
    public init() {}

    /// Whether `data` starts with "GIF87a" or "GIF89a".
    public func canDecode(_ data: Data) -> Bool { ImageFormat.detect(data) == .gif }

    /// Decodes `data`.
    public func decode(_ data: Data, options: ImageDecodingOptions) throws -> Image {
        try decodeCounting(data, options: options).image
    }

    /// Decodes `data`, also telling how many frame pixels giflib decompressed (the LZW work, which the
    /// clipping to the logical screen bounds).
    func decodeCounting(_ data: Data, options: ImageDecodingOptions) throws -> (image: Image, pixelsDecoded: Int) {
        guard !data.isEmpty else { throw DecodingFailure.emptyData() }
        return try data.withUnsafeBytes { raw -> (image: Image, pixelsDecoded: Int) in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                throw DecodingFailure.emptyData()
            }
            // A first pass over the records (no pixel is decompressed) counts the frames, so the memory is
            // claimed once, up front, for the frames that will be kept.
            let survey = try Self.withGIF(base, raw.count) { GIFSurvey(gif: $0) }
            return try Self.withGIF(base, raw.count) { gif in
                var reader = GIFFrameReader(gif: gif, options: options)
                let image = try reader.read(survey: survey)
                return (image, reader.pixelsDecoded)
            }
        }
    }

    /// Opens giflib on `count` bytes at `base` for the length of `body`.
    private static func withGIF<Result>(
        _ base: UnsafePointer<UInt8>, _ count: Int, _ body: (UnsafeMutablePointer<GifFileType>) throws -> Result
    ) throws -> Result {
        let source = GIFByteSource(base: base, count: count)
        var error: Int32 = 0
        // passUnretained: `source` is alive for this whole function and the GifFileType is closed
        // (deferred below) before it returns, so giflib never reads through a dangling pointer.
        guard let gif = DGifOpen(Unmanaged.passUnretained(source).toOpaque(), gifRead, &error) else {
            throw DecodingFailure.badImageData("GIF unreadable: \(GIFDecoder.errorText(error))")
        }
        defer { DGifCloseFile(gif, &error) }
        return try withExtendedLifetime(source) { try body(gif) }
    }

    /// Reads the next image descriptor into `gif.pointee.Image`; false when giflib fails.
    ///
    /// giflib also appends a copy of every descriptor to `SavedImages` (for `DGifSlurp`, which is not
    /// used here) and never gives it back before the file is closed: about 64 bytes a frame, so a 150 MB
    /// GIF of 10,000,000 1×1 frames made it hundreds of megabytes. Each copy is freed as soon as it is
    /// made, with the count reset, so giflib's next descriptor starts a fresh one-entry array.
    fileprivate static func readImageDescriptor(_ gif: UnsafeMutablePointer<GifFileType>) -> Bool {
        guard DGifGetImageDesc(gif) == GIF_OK else { return false }
        GifFreeSavedImages(gif)
        gif.pointee.ImageCount = 0
        return true
    }

    fileprivate static func errorText(_ code: Int32) -> String {
        GifErrorString(code).map { String(cString: $0) } ?? "giflib error \(code)"
    }
}

/// The bytes giflib reads through `gifRead`.
private final class GIFByteSource {
    let base: UnsafePointer<UInt8>
    let count: Int
    var offset = 0

    init(base: UnsafePointer<UInt8>, count: Int) {
        self.base = base
        self.count = count
    }
}

/// giflib's input callback: copies up to `length` bytes and returns how many it copied.
private let gifRead: InputFunc = { gif, buffer, length in
    guard let gif, let buffer, length > 0, let user = gif.pointee.UserData else { return 0 }
    let source = Unmanaged<GIFByteSource>.fromOpaque(user).takeUnretainedValue()
    let count = min(Int(length), source.count - source.offset)
    guard count > 0 else { return 0 }
    buffer.update(from: source.base + source.offset, count: count)
    source.offset += count
    return Int32(count)
}

/// What a pass over a GIF's records finds without decompressing any pixel: how many frames it holds
/// (up to where its data ends or breaks) and whether any frame asks for restore-to-previous disposal.
private struct GIFSurvey {
    var frames = 0
    var restoresPrevious = false

    init(gif: UnsafeMutablePointer<GifFileType>) {
        records: while true {
            var record = UNDEFINED_RECORD_TYPE
            guard DGifGetRecordType(gif, &record) == GIF_OK else { break }
            switch record {
            case IMAGE_DESC_RECORD_TYPE:
                guard GIFDecoder.readImageDescriptor(gif) else { break records }
                frames += 1
                guard GIFFrameReader.skipCodeBlocks(gif) else { break records }
            case EXTENSION_RECORD_TYPE:
                var code: Int32 = 0
                var block: UnsafeMutablePointer<GifByteType>?
                guard DGifGetExtension(gif, &code, &block) == GIF_OK else { break records }
                if code == GRAPHICS_EXT_FUNC_CODE, let first = block, first[0] >= 4, (first[1] >> 2) & 0x07 == 3 {
                    restoresPrevious = true
                }
                while block != nil {
                    guard DGifGetExtensionNext(gif, &block) == GIF_OK else { break records }
                }
            case TERMINATE_RECORD_TYPE:
                break records
            default:
                continue
            }
        }
    }
}

/// Walks a GIF's records with giflib's low-level API, so each frame is checked before its rows are read
/// and no frame is ever held as a whole index bitmap.
private struct GIFFrameReader {
    let gif: UnsafeMutablePointer<GifFileType>
    let options: ImageDecodingOptions
    private var frames: [ImageFrame] = []
    private var frameCount = 0
    private var loopCount = 1
    private var hasAlpha = false
    private var isPartial = false
    private var pendingControl: (disposal: Int, delay: Int, transparent: Int?) = (0, 0, nil)
    /// Frame pixels giflib decompressed so far.
    private(set) var pixelsDecoded = 0

    init(gif: UnsafeMutablePointer<GifFileType>, options: ImageDecodingOptions) {
        self.gif = gif
        self.options = options
    }

    private var errorText: String { GIFDecoder.errorText(gif.pointee.Error) }

    mutating func read(survey: GIFSurvey) throws -> Image {
        let sizing = try DecodeSizing(
            width: Int(gif.pointee.SWidth), height: Int(gif.pointee.SHeight), format: .gif, options: options)
        let finalSize = sizing.target
        // The working canvas (unless it is itself the last frame kept, at full size) and its saved copy
        // for restore-to-previous.
        let canvases = (finalSize == sizing.original ? 0 : 1) + (survey.restoresPrevious ? 1 : 0)
        let plan = sizing.animationPlan(declaredFrames: survey.frames, canvases: canvases, options: options)
        let claim = try PixelMemory.claim(
            plan.bytes, largest: PixelMemory.bytes(sizing.original), options: options,
            for: "GIF \(sizing.original) × \(plan.frames) frames")
        defer { claim.release() }
        var canvas = GIFCanvas(width: sizing.original.width, height: sizing.original.height)
        records: while true {
            var record = UNDEFINED_RECORD_TYPE
            guard DGifGetRecordType(gif, &record) == GIF_OK else {
                isPartial = true
                break
            }
            switch record {
            case IMAGE_DESC_RECORD_TYPE:
                guard GIFDecoder.readImageDescriptor(gif) else {
                    isPartial = true
                    break records
                }
                frameCount += 1
                if frames.count < plan.frames {
                    let complete = readFrame(into: &canvas)
                    if !hasAlpha { hasAlpha = canvas.hasTransparency }
                    let delay = pendingControl.delay <= 1 ? 0.1 : Double(pendingControl.delay) / 100
                    let frame = ImageFrame(
                        width: canvas.width, height: canvas.height, bytesPerRow: canvas.width * 4,
                        pixels: canvas.pixels, duration: delay)
                    frames.append(PixelResampler.resample(frame, to: finalSize))
                    guard complete else {
                        isPartial = true
                        break records
                    }
                } else if !Self.skipCodeBlocks(gif) {
                    isPartial = frames.isEmpty
                    break records
                }
                pendingControl = (0, 0, nil)
            case EXTENSION_RECORD_TYPE:
                guard readExtension() else {
                    isPartial = true
                    break records
                }
            case TERMINATE_RECORD_TYPE:
                break records
            default:
                continue
            }
        }
        guard !frames.isEmpty else { throw DecodingFailure.badImageData("GIF has no decodable frame: \(errorText)") }
        if frameCount == 1 { loopCount = 0 }
        return Image(
            format: .gif, width: finalSize.width, height: finalSize.height, originalWidth: sizing.original.width,
            originalHeight: sizing.original.height, frames: options.decodeFirstFrameOnly ? [frames[0]] : frames,
            frameCount: frameCount, loopCount: loopCount, hasAlpha: hasAlpha, isPartial: isPartial)
    }

    /// Reads the current frame's rows onto `canvas`; false when the data ended or broke inside it.
    private mutating func readFrame(into canvas: inout GIFCanvas) -> Bool {
        let desc = gif.pointee.Image
        let width = Int(desc.Width)
        let height = Int(desc.Height)
        let map = desc.ColorMap ?? gif.pointee.SColorMap
        var colors: [UInt8] = []
        if let map, let entries = map.pointee.Colors {
            let count = max(0, min(256, Int(map.pointee.ColorCount)))
            colors.reserveCapacity(count * 3)
            for index in 0..<count {
                colors.append(entries[index].Red)
                colors.append(entries[index].Green)
                colors.append(entries[index].Blue)
            }
        }
        let info = GIFCanvas.FrameInfo(
            left: Int(desc.Left), top: Int(desc.Top), width: width, height: height,
            disposal: pendingControl.disposal, transparentIndex: pendingControl.transparent)
        canvas.begin(info, colors: colors)
        defer { canvas.end() }
        // Interlaced frames store rows in four passes: every 8th from 0, every 8th from 4, every 4th from 2,
        // every 2nd from 1.
        let passes = desc.Interlace ? [(0, 8), (4, 8), (2, 4), (1, 2)] : [(0, 1)]
        // Only rows on the logical screen are drawn, so decompression stops after the last of them (in
        // file order) and the rest of the frame's data is skipped unread: a frame rectangle far larger
        // than the screen costs no more than its visible rows.
        let visibleRows = max(0, min(height, canvas.height - info.top))
        let visible = width > 0 && info.left < canvas.width && visibleRows > 0
        var rowsToRead = 0
        if visible {
            var position = 0
            for (start, step) in passes {
                for y in Swift.stride(from: start, to: height, by: step) {
                    position += 1
                    if y < visibleRows { rowsToRead = position }
                }
            }
        }
        guard rowsToRead > 0 else { return Self.skipCodeBlocks(gif) }
        var row = [UInt8](repeating: 0, count: width)
        var rowsRead = 0
        for (start, step) in passes {
            for y in Swift.stride(from: start, to: height, by: step) {
                let status = row.withUnsafeMutableBufferPointer { DGifGetLine(gif, $0.baseAddress, Int32(width)) }
                guard status == GIF_OK else { return false }
                pixelsDecoded += width
                canvas.draw(row: y, indices: row)
                rowsRead += 1
                // After a frame's last row giflib skips what is left of its data itself; before it, this does.
                if rowsRead == rowsToRead && rowsToRead < height { return Self.skipCodeBlocks(gif) }
            }
        }
        return true
    }

    /// Skips the rest of the current frame's compressed data without decompressing it.
    static func skipCodeBlocks(_ gif: UnsafeMutablePointer<GifFileType>) -> Bool {
        // The decompressor reads whole sub-blocks, so the next byte in the file is always a sub-block
        // length: DGifGetCodeNext can take over from any row.
        var block: UnsafeMutablePointer<GifByteType>?
        repeat {
            guard DGifGetCodeNext(gif, &block) == GIF_OK else { return false }
        } while block != nil
        return true
    }

    /// Reads one extension: graphics control (disposal, delay, transparency) and NETSCAPE2.0 (loop count).
    private mutating func readExtension() -> Bool {
        var code: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>?
        guard DGifGetExtension(gif, &code, &block) == GIF_OK else { return false }
        var isLoopExtension = false
        if let first = block {
            let length = Int(first[0])
            if code == GRAPHICS_EXT_FUNC_CODE, length >= 4 {
                let packed = Int(first[1])
                pendingControl.disposal = (packed >> 2) & 0x07
                pendingControl.delay = Int(first[2]) | Int(first[3]) << 8
                pendingControl.transparent = packed & 0x01 != 0 ? Int(first[4]) : nil
            } else if code == APPLICATION_EXT_FUNC_CODE, length == 11 {
                let name = String(decoding: UnsafeBufferPointer(start: first + 1, count: 11), as: UTF8.self)
                isLoopExtension = name == "NETSCAPE2.0" || name == "ANIMEXTS1.0"
            }
        }
        while block != nil {
            guard DGifGetExtensionNext(gif, &block) == GIF_OK else { return false }
            if isLoopExtension, let next = block, next[0] >= 3, next[1] == 1 {
                loopCount = Int(next[2]) | Int(next[3]) << 8
                isLoopExtension = false
            }
        }
        return true
    }
}
