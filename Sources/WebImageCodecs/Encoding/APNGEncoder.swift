import Foundation

/// Encodes an animation as APNG, so it stays animated through a resize or any other transform; a still
/// image is written as a plain PNG (as SDWebImage's `SDImageAPNGCoder` writes one).
///
/// Each frame is compressed by libpng (through `PNGEncoder`: 8-bit RGBA, non-interlaced) and its image data
/// rewrapped: the first frame's stays `IDAT` (the default image is frame 0), the others become `fdAT`
/// chunks after an `fcTL` each. The first frame covers the whole canvas; each later one only the rectangle
/// that differs from the frame before it (``APNGFrameRegion``), with dispose operation none, so an
/// animation whose frames share most pixels stores little more than what moves. Decoders rebuild every
/// frame exactly: the frames of a decoded `Image` are whole canvases again. A frame's delay is its
/// `duration` in milliseconds (in hundredths of a second past 65.535 s), and `acTL`'s play count is the
/// image's `loopCount` (0 forever). The image's RGB ICC profile is written with the first frame unless
/// `embedsICCProfile` is off.
///
/// ```swift
/// let animation = try ImageDecoderRegistry.shared.decode(data)
/// let small = try ImageTransformer.resize(to: PixelSize(width: 128, height: 128), mode: .fit).transform(animation)
/// try APNGEncoder().encode(small).write(to: URL(fileURLWithPath: "small.png"))
/// ```
public struct APNGEncoder: ImageEncoding {
    /// `.png`: an APNG is a PNG file.
    public var format: ImageFormat { .png }
    /// Every parameter: `apng;level=6;icc=1`.
    public var key: String { "apng;level=\(compressionLevel);icc=\(embedsICCProfile ? 1 : 0)" }

    /// zlib compression level, 0 (none, fastest) … 9 (smallest). `6` by default.
    public var compressionLevel: Int
    /// Whether the image's ICC profile is written (`iCCP`). `true` by default.
    public var embedsICCProfile: Bool

    /// Creates an encoder.
    public init(compressionLevel: Int = 6, embedsICCProfile: Bool = true) {
        self.compressionLevel = compressionLevel
        self.embedsICCProfile = embedsICCProfile
    }

    /// Encodes every frame of `image`; one frame gives a plain PNG.
    ///
    /// - Throws: `ImageCodecError` `.encodingFailed` when the image has no frame, its frames differ in size,
    ///   a frame's size and pixel buffer disagree, or libpng fails.
    public func encode(_ image: Image) throws -> Data {
        let png = PNGEncoder(compressionLevel: compressionLevel, embedsICCProfile: embedsICCProfile)
        guard image.frames.count > 1 else { return try png.encode(image) }
        let first = image.frames[0]
        guard image.frames.allSatisfy({ $0.width == first.width && $0.height == first.height }) else {
            throw ImageCodecError(.encodingFailed, "APNG: the frames differ in size")
        }
        // Checked before any frame is compared with the one before it (which reads every row).
        for (index, frame) in image.frames.enumerated()
        where frame.width <= 0 || frame.height <= 0 || frame.bytesPerRow < frame.width * 4
            || frame.pixels.count < frame.height * frame.bytesPerRow
        {
            throw ImageCodecError(
                .encodingFailed,
                "APNG: invalid frame \(index): \(frame.width)×\(frame.height), \(frame.bytesPerRow) bytes per row, "
                    + "\(frame.pixels.count) bytes of pixels")
        }
        var output: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var sequence: UInt32 = 0
        for (index, frame) in image.frames.enumerated() {
            let region =
                index == 0 ? APNGFrameRegion(whole: frame) : APNGFrameRegion(from: image.frames[index - 1], to: frame)
            // The first frame carries the image's profile; the others contribute only their image data.
            let encoded = try index == 0 ? png.encode(image) : png.encode(region.frame)
            let chunks = Self.chunks(encoded)
            if index == 0 {
                for chunk in chunks where chunk.type == "IHDR" { output += chunk.whole }
                output += APNGContainer.chunk(
                    "acTL",
                    APNGContainer.bigEndian(UInt32(image.frames.count))
                        + APNGContainer.bigEndian(UInt32(clamping: max(0, image.loopCount))))
                for chunk in chunks where chunk.type == "iCCP" { output += chunk.whole }
            }
            let (numerator, denominator) = Self.delay(frame.duration)
            var control = APNGContainer.bigEndian(sequence)
            control += APNGContainer.bigEndian(UInt32(region.width)) + APNGContainer.bigEndian(UInt32(region.height))
            control += APNGContainer.bigEndian(UInt32(region.x)) + APNGContainer.bigEndian(UInt32(region.y))
            control += [UInt8(numerator >> 8), UInt8(numerator & 0xFF), UInt8(denominator >> 8)]
            control += [UInt8(denominator & 0xFF), 0, region.blendsOver ? 1 : 0]  // dispose none
            output += APNGContainer.chunk("fcTL", control)
            sequence += 1
            for chunk in chunks where chunk.type == "IDAT" {
                if index == 0 {
                    output += chunk.whole
                } else {
                    output += APNGContainer.chunk("fdAT", APNGContainer.bigEndian(sequence) + chunk.payload)
                    sequence += 1
                }
            }
        }
        output += APNGContainer.chunk("IEND", [])
        return Data(output)
    }

    /// A frame's delay as `fcTL`'s fraction: milliseconds, or hundredths of a second past 65.535 s.
    static func delay(_ duration: TimeInterval) -> (numerator: Int, denominator: Int) {
        let seconds = duration.isFinite ? max(0, duration) : 0
        let milliseconds = (seconds * 1000).rounded()
        if milliseconds <= 65_535 { return (Int(milliseconds), 1000) }
        return (Int(min(65_535, (seconds * 100).rounded())), 100)
    }

    /// The chunks of a PNG libpng wrote: type, payload and the whole chunk's bytes.
    private static func chunks(_ data: Data) -> [(type: String, payload: [UInt8], whole: [UInt8])] {
        let bytes = [UInt8](data)
        var result: [(type: String, payload: [UInt8], whole: [UInt8])] = []
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            guard offset + 12 + length <= bytes.count else { break }
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            result.append(
                (
                    type, Array(bytes[(offset + 8)..<(offset + 8 + length)]),
                    Array(bytes[offset..<(offset + 12 + length)])
                ))
            offset += 12 + length
        }
        return result
    }
}
