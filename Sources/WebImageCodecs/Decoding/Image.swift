import Foundation

/// The container format of image bytes, found by their magic numbers (never by extension or MIME type).
public enum ImageFormat: String, Sendable, Hashable, CaseIterable {
    /// JPEG (JFIF/EXIF), starts with FF D8 FF.
    case jpeg
    /// PNG, starts with the 8-byte PNG signature.
    case png
    /// GIF87a / GIF89a.
    case gif
    /// WebP: a RIFF container whose form type is WEBP.
    case webp
    /// AVIF: an ISOBMFF (HEIF) file whose `ftyp` brands include `avif` (still) or `avis` (sequence).
    case avif
    /// JPEG XL: a bare codestream (FF 0A) or the ISOBMFF container (its 12-byte `JXL ` signature box).
    case jxl
    /// HEIC and other HEIF images: an ISOBMFF file whose `ftyp` brands name HEIF (`heic`, `heix`, `mif1`,
    /// and their sequence brands) but not AVIF.
    case heic
    /// Anything else.
    case unknown
}

/// One decoded frame: straight-alpha RGBA8 pixels, rows top to bottom.
public struct ImageFrame: Sendable {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Bytes per row of `pixels` (at least `width * 4`).
    public var bytesPerRow: Int
    /// RGBA8 pixels, straight (not premultiplied) alpha, `height * bytesPerRow` bytes.
    public var pixels: [UInt8]
    /// How long this frame shows, in seconds (0 for still images).
    public var duration: TimeInterval
    /// The frame at 16 bits a channel: RGBA16 samples, straight alpha, `width * 4` a row with no padding,
    /// beside `pixels`, which then hold the same picture rounded to 8 bits (`(sample + 128) / 257`). Only a
    /// decoder asked to keep them (``ImageDecodingOptions/keepsSixteenBits``, for a 16-bit PNG) makes them,
    /// and only the transforms that work at 16 bits carry them on (cropping, turning, flipping, placing on a
    /// canvas, resampling); anything else changes `pixels` alone, and the samples then no longer count:
    /// ``sixteenBitSamples`` is nil once `pixels` are not their rounding, and encoders write 8 bits.
    public var deepPixels: [UInt16]?

    /// Creates a frame.
    public init(
        width: Int, height: Int, bytesPerRow: Int, pixels: [UInt8], duration: TimeInterval = 0,
        deepPixels: [UInt16]? = nil
    ) {
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        self.pixels = pixels
        self.duration = duration
        self.deepPixels = deepPixels
    }

    /// A frame made from 16-bit samples (RGBA16, `width * 4` a row): `pixels` are their rounding to 8 bits.
    init(width: Int, height: Int, deepPixels: [UInt16], duration: TimeInterval = 0) {
        let pixels = [UInt8](unsafeUninitializedCapacity: deepPixels.count) { buffer, count in
            for index in deepPixels.indices { buffer[index] = Self.reduced(deepPixels[index]) }
            count = deepPixels.count
        }
        self.init(
            width: width, height: height, bytesPerRow: width * 4, pixels: pixels, duration: duration,
            deepPixels: deepPixels)
    }

    /// A 16-bit sample rounded to 8 bits: the nearest of the 256 levels (65535 / 255 = 257).
    @inline(__always) static func reduced(_ sample: UInt16) -> UInt8 { UInt8((UInt32(sample) + 128) / 257) }

    /// `deepPixels` while they still describe this frame: as many as its pixels, and `pixels` their
    /// rounding, sample for sample. Nil otherwise, as after a transform that works at 8 bits.
    public var sixteenBitSamples: [UInt16]? {
        guard let deep = deepPixels, deep.count == width * height * 4, pixels.count >= height * bytesPerRow else {
            return nil
        }
        let rowSamples = width * 4
        for row in 0..<height {
            let source = row * bytesPerRow
            let deepRow = row * rowSamples
            for index in 0..<rowSamples where pixels[source + index] != Self.reduced(deep[deepRow + index]) {
                return nil
            }
        }
        return deep
    }
}

/// A colour description by ITU-T H.273 code points.
public struct CICPDescription: Sendable, Hashable {
    /// Colour primaries: 1 BT.709/sRGB, 9 BT.2020, 12 Display P3, ...
    public var colorPrimaries: Int
    /// Transfer characteristics: 13 sRGB, 16 PQ (SMPTE ST 2084), 18 HLG, ...
    public var transferCharacteristics: Int

    /// Creates a description.
    public init(colorPrimaries: Int, transferCharacteristics: Int) {
        self.colorPrimaries = colorPrimaries
        self.transferCharacteristics = transferCharacteristics
    }
}

/// A decoded image: one frame for stills, several for animations.
public struct Image: Sendable {
    /// The format the bytes were in.
    public var format: ImageFormat
    /// Width of the decoded frames in pixels (after any scale-down or thumbnailing).
    public var width: Int
    /// Height of the decoded frames in pixels.
    public var height: Int
    /// Width the file declares, before any scaling.
    public var originalWidth: Int
    /// Height the file declares, before any scaling.
    public var originalHeight: Int
    /// The decoded frames; only the first when `decodeFirstFrameOnly` was asked for.
    public var frames: [ImageFrame]
    /// Number of frames the file holds (may exceed `frames.count`).
    public var frameCount: Int
    /// How many times an animation repeats; 0 means forever.
    public var loopCount: Int
    /// The EXIF orientation (1…8) still to apply to `frames` to show them upright: 1 after a default decode,
    /// which turns the pixels upright itself; the file's orientation (`fileOrientation`) when decoded with
    /// `ImageDecodingOptions.preserveOrientation`. `ImageTransformer.applyOrientation` applies it.
    public var exifOrientation: Int
    /// The orientation the file declares, 1…8 (1 when it declares none), whether or not the decoder applied
    /// it: the EXIF orientation tag, else XMP's `tiff:Orientation` (JPEG, PNG, WebP), AVIF's and HEIC's
    /// `irot` and `imir`, or JPEG XL's header.
    public var fileOrientation: Int
    /// Whether any pixel can be less than opaque.
    public var hasAlpha: Bool
    /// Whether this image was decoded from incomplete data: a progressive decode while the bytes arrive,
    /// or a final image whose file ends early (the rows that arrived; the rest filled in). The
    /// downloader's final result can have it set: see ``ImageDownloaderCompletedBlock``.
    public var isPartial: Bool
    /// The RGB ICC profile the pixels are in, when decoded with `colorSpace = .preserve` from a file that
    /// carried one; nil otherwise (the pixels are then sRGB, or unlabelled).
    public var iccProfile: Data?
    /// The ITU-T H.273 (CICP) colour description of the pixels, when decoded with `colorSpace = .preserve`
    /// from a file that describes its colour that way (AVIF's and HEIC's `nclx`): for PQ and HLG (HDR) the
    /// only description of the stored code values; nil otherwise.
    public var cicp: CICPDescription?
    /// The file's EXIF block (`EXIFMetadata.block(in:format:)`: JPEG, PNG and WebP), when decoded with
    /// `ImageDecodingOptions.keepsEXIF`; nil otherwise. The JPEG, PNG and WebP encoders write what is here
    /// (a still WebP only), so a caller that wants the source's metadata in a result sets it (its
    /// orientation set to 1 by `EXIFMetadata.upright` when the pixels are upright) and one that does not
    /// leaves it nil.
    public var exif: Data?

    /// Creates an image.
    public init(
        format: ImageFormat, width: Int, height: Int, originalWidth: Int? = nil, originalHeight: Int? = nil,
        frames: [ImageFrame], frameCount: Int? = nil, loopCount: Int = 0, exifOrientation: Int = 1,
        fileOrientation: Int? = nil, hasAlpha: Bool = false, isPartial: Bool = false, iccProfile: Data? = nil
    ) {
        self.format = format
        self.width = width
        self.height = height
        self.originalWidth = originalWidth ?? width
        self.originalHeight = originalHeight ?? height
        self.frames = frames
        self.frameCount = frameCount ?? frames.count
        self.loopCount = loopCount
        self.exifOrientation = exifOrientation
        self.fileOrientation = fileOrientation ?? exifOrientation
        self.hasAlpha = hasAlpha
        self.isPartial = isPartial
        self.iccProfile = iccProfile
    }

    /// Bytes of pixel memory held by all frames; the cost an image cache charges.
    public var pixelByteCount: Int { frames.reduce(0) { $0 + $1.pixels.count + ($1.deepPixels?.count ?? 0) * 2 } }
}
