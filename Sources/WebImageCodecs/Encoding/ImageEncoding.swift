import Foundation

/// Turns an `Image` into the bytes of one format.
///
/// The built-in encoders: `JPEGEncoder` (libjpeg-turbo), `WebPEncoder` (libwebp, animations through
/// `WebPAnimEncoder`), `PNGEncoder` (libpng), `APNGEncoder` (animations as APNG, libpng per frame),
/// `AVIFEncoder` (libavif, when it has an AV1 encoder), `GIFEncoder` (giflib, stills and animations) and
/// `JXLEncoder` (libjxl, stills and animations).
/// `Image.encoded(as:quality:)` picks one with its defaults.
public protocol ImageEncoding: Sendable {
    /// The format the encoder writes.
    var format: ImageFormat { get }
    /// The encoded bytes. Throws `ImageCodecError` `.encodingFailed`.
    func encode(_ image: Image) throws -> Data
    /// Identifies the output: the format and every parameter that changes the bytes (two encoders with
    /// the same key must write the same bytes for one image); part of `ProcessedImageKey`. The built-in
    /// encoders name each parameter (`jpeg;q=85;…`); by default the format and the encoder's
    /// description, which for a structure lists its stored properties.
    var key: String { get }
}

extension ImageEncoding {
    /// The format and `String(describing: self)`.
    public var key: String { "\(format.rawValue);\(String(describing: self))" }
}

extension Image {
    /// The image encoded as `format` with that format's default encoder; `quality` (1…100) for the lossy
    /// ones: JPEG (85 when nil), WebP (lossy at `quality`, 80 when nil), AVIF (60 when nil), JPEG XL (80 when
    /// nil; 100 is lossless). PNG and GIF ignore it. An RGB ICC profile on the image (`colorSpace =
    /// .preserve`) is embedded (not by GIF, which has no place for one).
    ///
    /// - Throws: `ImageCodecError` `.encodingFailed` for HEIC and `.unknown` (no encoder), and when encoding fails.
    public func encoded(as format: ImageFormat, quality: Int? = nil) throws -> Data {
        let encoder: any ImageEncoding =
            switch format {
            case .jpeg: JPEGEncoder(quality: quality ?? 85)
            case .png: PNGEncoder()
            case .webp: WebPEncoder(quality: quality ?? 80)
            case .avif: AVIFEncoder(quality: quality ?? 60)
            case .gif: GIFEncoder()
            case .jxl: JXLEncoder(quality: quality ?? 80)
            case .heic, .unknown: UnsupportedEncoder(format: format)
            }
        return try encoder.encode(self)
    }
}

/// Checks shared by the encoders.
enum EncodingCheck {
    /// The first frame, after checking its buffer matches its size.
    static func frame(_ image: Image) throws -> ImageFrame {
        guard let frame = image.frames.first else {
            throw ImageCodecError(.encodingFailed, "the image has no frame to encode")
        }
        try check(frame)
        return frame
    }

    /// The first frame of an animation's encode, after checking every frame's buffer and that all frames
    /// have its size (`format` names the encoder in the error).
    static func frames(_ image: Image, format: String) throws -> ImageFrame {
        guard let first = image.frames.first else {
            throw ImageCodecError(.encodingFailed, "the image has no frame to encode")
        }
        for frame in image.frames {
            try check(frame)
            guard frame.width == first.width, frame.height == first.height else {
                throw ImageCodecError(.encodingFailed, "\(format): the frames differ in size")
            }
        }
        return first
    }

    static func check(_ frame: ImageFrame) throws {
        guard frame.width > 0, frame.height > 0, frame.width <= 65_535, frame.height <= 65_535,
            frame.bytesPerRow >= frame.width * 4, frame.pixels.count >= frame.height * frame.bytesPerRow
        else {
            throw ImageCodecError(
                .encodingFailed,
                "invalid frame: \(frame.width)×\(frame.height), \(frame.bytesPerRow) bytes per row, "
                    + "\(frame.pixels.count) bytes of pixels")
        }
    }

    /// A quality in 1…100.
    static func quality(_ value: Int) -> Int { min(100, max(1, value)) }
}

private struct UnsupportedEncoder: ImageEncoding {
    let format: ImageFormat
    func encode(_ image: Image) throws -> Data {
        throw ImageCodecError(.encodingFailed, "WebImage has no \(format.rawValue) encoder")
    }
}
