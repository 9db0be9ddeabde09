import Foundation

/// The chunks of an animated PNG (APNG), read and checked without decoding any pixel.
///
/// An APNG is a PNG whose `acTL` chunk, before the first `IDAT`, declares the frames and plays. Each frame
/// is an `fcTL` (its rectangle, delay, dispose and blend operations) followed by its data: `IDAT` for the
/// first frame when its `fcTL` comes before the `IDAT` (the default image is then frame 0), `fdAT` (a
/// sequence number, then `IDAT`'s content) for the others. An `IDAT` without an `fcTL` before it is a
/// default image that is not part of the animation, and is skipped.
///
/// Checked here, each failing with a `badImageData` that names the chunk: the CRC of `acTL`, `fcTL` and
/// `fdAT` (libpng checks the chunks it reads itself); the sequence numbers (0, 1, 2… over `fcTL` and
/// `fdAT`); each frame's rectangle (non-empty, inside the canvas; the first frame's is the whole canvas
/// when it is the default image); dispose and blend operations; a frame without data; and, in a file that
/// reaches `IEND`, that it holds the frames `acTL` declares. Data that ends early keeps the frames whose
/// data began (`isTruncated`).
struct APNGContainer {
    /// What an `fcTL` chunk says about one frame.
    struct FrameControl: Equatable {
        var width: Int
        var height: Int
        var x: Int
        var y: Int
        var delayNumerator: Int
        var delayDenominator: Int
        /// 0 none, 1 background (clear to transparent), 2 previous (restore).
        var dispose: Int
        /// 0 source (replace), 1 over (alpha-composite).
        var blend: Int

        /// Seconds the frame shows: the delay fraction, a denominator of 0 meaning 100. Like the GIF decoder
        /// (and SDWebImage, and browsers), 10 ms or less shows as 0.1 s.
        var duration: TimeInterval {
            let seconds = Double(delayNumerator) / Double(delayDenominator == 0 ? 100 : delayDenominator)
            return seconds <= 0.010 ? 0.1 : seconds
        }
    }

    /// One frame: its control and the byte ranges of its compressed data (`IDAT` content, or `fdAT` content
    /// without the sequence number), in file order.
    struct Frame {
        var control: FrameControl
        var data: [Range<Data.Index>]
    }

    /// The 13 bytes of IHDR.
    let header: Data
    let canvas: PixelSize
    /// How many frames `acTL` declares.
    let declaredFrames: Int
    /// `acTL`'s num_plays: 0 plays forever.
    let plays: Int
    /// Whole chunks (length, type, data, CRC) every frame's PNG stream needs: PLTE, tRNS and the colour
    /// chunks before the image data.
    let sharedChunks: [Range<Data.Index>]
    /// The frames whose `fcTL` was read and whose data began, in order: at most the `limit` given to
    /// `parse`.
    let frames: [Frame]
    /// How many frames the data holds (their `fcTL` read, their data begun), kept or not.
    let frameCount: Int
    /// Whether the data ended before `IEND`.
    let isTruncated: Bool

    /// Chunks copied into every frame's stream.
    static let shared: Set<String> = ["PLTE", "tRNS", "gAMA", "cHRM", "sRGB", "iCCP", "sBIT"]

    /// The container of `data`, or nil when it is a plain PNG (no `acTL` before the image data, or no PNG
    /// signature). Frames past the first `limit` are checked and counted, not kept, so a file of millions
    /// of tiny frames costs no memory for them.
    ///
    /// - Throws: `badImageData` for a malformed APNG (see the type's comment).
    static func parse(_ data: Data, limit: Int = .max) throws -> APNGContainer? {
        let bytes = ByteReader(data)
        guard bytes.matches([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], at: 0) else { return nil }
        var parser = Parser(data: data, bytes: bytes, limit: limit)
        var offset = 8
        while offset + 8 <= bytes.count {
            let length = bytes.uint32(at: offset, bigEndian: true)
            let type = String(decoding: data[bytes.range(offset + 4, offset + 8)], as: UTF8.self)
            let end = offset + 8 + length
            guard length <= 0x7FFF_FFFF, end + 4 <= bytes.count else {
                // The chunk is cut short (or declares more than PNG allows): the data ends here.
                parser.endEarly(in: type, dataStart: offset + 8)
                break
            }
            try parser.read(type, at: offset, end: end)
            if parser.reachedEnd { break }
            offset = end + 4
        }
        return try parser.container()
    }

    private static func failure(_ message: String) -> ImageCodecError {
        DecodingFailure.badImageData("APNG: \(message)")
    }

    /// What `parse` has learned so far from the chunks it read, in file order.
    private struct Parser {
        let data: Data
        let bytes: ByteReader
        let limit: Int
        var header: Data?
        var animation: (frames: Int, plays: Int)?
        var shared: [Range<Data.Index>] = []
        var frames: [Frame] = []
        // Frames whose fcTL was read (kept or not), and whether the last of them has data yet.
        var count = 0
        var lastHasData = false
        var nextSequence = 0
        var seenImageData = false
        // Set at the first IDAT: whether an fcTL came before it, making the default image frame 0.
        var defaultImageIsFrame: Bool?
        var reachedEnd = false

        init(data: Data, bytes: ByteReader, limit: Int) {
            self.data = data
            self.bytes = bytes
            self.limit = limit
        }

        /// Takes the chunk at `offset` (whole, its CRC at `end`), checking the animation chunks' CRC first.
        mutating func read(_ type: String, at offset: Int, end: Int) throws {
            let start = offset + 8
            let length = end - start
            let isAnimationChunk = ["acTL", "fcTL", "fdAT"].contains(type)
            if isAnimationChunk, type == "acTL" ? !seenImageData : animation != nil {
                let expected = Int(bytes.uint32(at: end, bigEndian: true))
                guard APNGContainer.crc(data[bytes.range(offset + 4, end)]) == expected else {
                    throw APNGContainer.failure("\(type) chunk at byte \(offset) fails its CRC")
                }
            }
            switch type {
            case "IHDR":
                guard length == 13 else { throw APNGContainer.failure("IHDR of \(length) bytes") }
                header = data.subdata(in: bytes.range(start, end))
            case "acTL" where !seenImageData:
                guard length == 8 else { throw APNGContainer.failure("acTL of \(length) bytes") }
                let count = bytes.uint32(at: start, bigEndian: true)
                guard count > 0 else { throw APNGContainer.failure("acTL declares 0 frames") }
                animation = (count, bytes.uint32(at: start + 4, bigEndian: true))
            case "fcTL" where animation != nil:
                guard length == 26 else { throw APNGContainer.failure("fcTL of \(length) bytes") }
                try checkSequence(offset, "fcTL")
                try readFrameControl(at: start)
            case "fdAT" where animation != nil:
                guard length >= 4 else { throw APNGContainer.failure("fdAT of \(length) bytes") }
                try checkSequence(offset, "fdAT")
                guard count > 0, seenImageData else { throw APNGContainer.failure("fdAT before an fcTL and IDAT") }
                lastHasData = true
                if count == frames.count { frames[frames.count - 1].data.append(bytes.range(start + 4, end)) }
            case "IDAT":
                // The default image belongs to the animation only when an fcTL came before it.
                if defaultImageIsFrame == nil { defaultImageIsFrame = count > 0 }
                if animation != nil, defaultImageIsFrame == true, count == 1 {
                    lastHasData = true
                    frames[0].data.append(bytes.range(start, end))
                }
                seenImageData = true
            case "IEND":
                reachedEnd = true
            default:
                if !seenImageData, APNGContainer.shared.contains(type) {
                    shared.append(bytes.range(offset, end + 4))
                }
            }
        }

        /// Starts a frame at an `fcTL` whose content begins at `start`, its sequence number checked.
        private mutating func readFrameControl(at start: Int) throws {
            if count > 0, !lastHasData { throw APNGContainer.failure("frame \(count - 1) has no image data") }
            let next = try APNGContainer.frameControl(bytes, at: start, canvas: header)
            if count == 0, !seenImageData {
                guard let canvas = header.map(APNGContainer.size), next.x == 0, next.y == 0,
                    next.width == canvas.width, next.height == canvas.height
                else {
                    throw APNGContainer.failure("the first frame, the default image, is not the whole canvas")
                }
            }
            if frames.count < limit { frames.append(Frame(control: next, data: [])) }
            count += 1
            lastHasData = false
        }

        private mutating func checkSequence(_ chunk: Int, _ type: String) throws {
            let sequence = bytes.uint32(at: chunk + 8, bigEndian: true)
            guard sequence == nextSequence else {
                throw APNGContainer.failure(
                    "\(type) has sequence number \(sequence) where \(nextSequence) was expected")
            }
            nextSequence += 1
        }

        /// The data ends inside a chunk of `type` whose content begins at `start`: what arrived of the last
        /// frame's data still decodes to the rows it holds.
        mutating func endEarly(in type: String, dataStart start: Int) {
            let belongs = type == "fdAT" ? seenImageData : count == 1 && (defaultImageIsFrame ?? true)
            let available = type == "fdAT" ? start + 4 : start
            if animation != nil, ["fdAT", "IDAT"].contains(type), belongs, available < bytes.count {
                lastHasData = true
                if count == frames.count {
                    frames[frames.count - 1].data.append(bytes.range(available, bytes.count))
                }
            }
        }

        /// The container the chunks describe, once the last has been read; nil for a plain PNG.
        func container() throws -> APNGContainer? {
            guard let animation else { return nil }
            guard let header else { throw APNGContainer.failure("no IHDR") }
            if count > 0, !lastHasData, reachedEnd {
                throw APNGContainer.failure("frame \(count - 1) has no image data")
            }
            if reachedEnd, count != animation.frames {
                throw APNGContainer.failure("acTL declares \(animation.frames) frames, the file holds \(count)")
            }
            return APNGContainer(
                header: header, canvas: APNGContainer.size(header), declaredFrames: animation.frames,
                plays: animation.plays,
                sharedChunks: shared, frames: frames.filter { !$0.data.isEmpty },
                frameCount: count > 0 && !lastHasData ? count - 1 : count, isTruncated: !reachedEnd)
        }
    }

    /// Whether PNG `data` is animated: true at an `acTL` before the first `IDAT`, false at an `IDAT` first,
    /// nil while the data holds neither yet.
    static func isAnimated(_ data: Data) -> Bool? {
        let bytes = ByteReader(data)
        var offset = 8
        while offset + 8 <= bytes.count {
            if bytes.matches(Array("acTL".utf8), at: offset + 4) { return true }
            if bytes.matches(Array("IDAT".utf8), at: offset + 4) { return false }
            offset += 12 + bytes.uint32(at: offset, bigEndian: true)
        }
        return nil
    }

    /// The canvas size IHDR declares.
    static func size(_ header: Data) -> PixelSize {
        let bytes = ByteReader(header)
        return PixelSize(width: bytes.uint32(at: 0, bigEndian: true), height: bytes.uint32(at: 4, bigEndian: true))
    }

    private static func frameControl(
        _ bytes: ByteReader, at start: Int, canvas header: Data?
    ) throws -> FrameControl {
        let control = FrameControl(
            width: bytes.uint32(at: start + 4, bigEndian: true), height: bytes.uint32(at: start + 8, bigEndian: true),
            x: bytes.uint32(at: start + 12, bigEndian: true), y: bytes.uint32(at: start + 16, bigEndian: true),
            delayNumerator: bytes.uint16(at: start + 20, bigEndian: true),
            delayDenominator: bytes.uint16(at: start + 22, bigEndian: true), dispose: Int(bytes[start + 24]),
            blend: Int(bytes[start + 25]))
        guard let header else { throw DecodingFailure.badImageData("APNG: fcTL before IHDR") }
        let canvas = size(header)
        // Every value is below 2^32, so the sums cannot overflow an Int.
        guard control.width > 0, control.height > 0, control.x + control.width <= canvas.width,
            control.y + control.height <= canvas.height
        else {
            throw DecodingFailure.badImageData(
                "APNG: a frame of \(control.width)×\(control.height) at (\(control.x), \(control.y)) is outside "
                    + "the \(canvas) canvas")
        }
        guard control.dispose <= 2, control.blend <= 1 else {
            throw DecodingFailure.badImageData(
                "APNG: unknown dispose (\(control.dispose)) or blend (\(control.blend)) operation")
        }
        return control
    }

    // MARK: - CRC

    /// PNG's CRC-32 (ISO 3309) of `bytes`.
    static func crc(_ bytes: some Sequence<UInt8>, initial: UInt32 = 0) -> UInt32 {
        var crc = ~initial
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 != 0 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// A whole chunk: length, `type`, `payload`, CRC.
    static func chunk(_ type: String, _ payload: some Collection<UInt8>) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        var chunk = [UInt8]()
        chunk.reserveCapacity(payload.count + 12)
        chunk += bigEndian(UInt32(payload.count))
        chunk += typeBytes
        chunk += payload
        chunk += bigEndian(crc(payload, initial: crc(typeBytes)))
        return chunk
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    /// A plain PNG of frame `index`: IHDR with the frame's size, the shared chunks, its data as IDAT, IEND.
    func stream(for index: Int, from data: Data) -> [UInt8] {
        let frame = frames[index]
        var ihdr = [UInt8](header)
        ihdr.replaceSubrange(0..<4, with: Self.bigEndian(UInt32(frame.control.width)))
        ihdr.replaceSubrange(4..<8, with: Self.bigEndian(UInt32(frame.control.height)))
        var stream: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        stream += Self.chunk("IHDR", ihdr)
        for range in sharedChunks { stream += data[range] }
        for range in frame.data { stream += Self.chunk("IDAT", data[range]) }
        stream += Self.chunk("IEND", [])
        return stream
    }
}
