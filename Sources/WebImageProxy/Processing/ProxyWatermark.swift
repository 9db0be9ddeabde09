import Crypto
import Foundation
import WebImage
import WebImageCodecs

/// The image a proxy draws where a URL asks for `watermark` (imgproxy's `IMGPROXY_WATERMARK_PATH` and
/// `IMGPROXY_WATERMARK_OPACITY`): decoded once, when the server starts, and kept.
///
/// ```swift
/// var configuration = ImageProxyConfiguration()
/// configuration.watermark = try ProxyWatermark(contentsOfFile: "/etc/webimage/mark.png", opacity: 0.8)
/// ```
public struct ProxyWatermark: Sendable {
    /// The watermark's first frame, upright, sRGB, straight-alpha RGBA.
    public let image: Image
    /// The base opacity every `watermark` opacity is multiplied by, in (0, 1].
    public let opacity: Double
    /// A digest of the pixels and the base opacity: part of a result's cache key, so a result cache kept
    /// across restarts never answers with another watermark's results.
    let identity: String

    /// The largest file read (a watermark is a small image; this only bounds what a wrong path can cost).
    public static let largestFileBytes = 64 << 20
    /// The most pixels a watermark may have: imgproxy's default source limit.
    public static let mostPixels = 16_800_000

    /// Why a watermark cannot be used; `description` names the file when there is one.
    public struct LoadError: Error, Sendable, CustomStringConvertible {
        /// The sentence, naming the file and what is wrong with it.
        public let description: String
    }

    /// `image`'s first frame as the watermark, its opacity multiplied by `opacity`.
    ///
    /// - Throws: `LoadError` when `opacity` is not in (0, 1], or the image has no pixels or is truncated.
    public init(image: Image, opacity: Double = 1) throws(LoadError) {
        guard opacity > 0, opacity <= 1 else {
            throw LoadError(description: "the watermark opacity must be greater than 0 and at most 1, not \(opacity)")
        }
        guard let frame = image.frames.first, frame.width > 0, frame.height > 0, frame.width <= frame.bytesPerRow / 4,
            case (let bytes, let overflow) = frame.height.multipliedReportingOverflow(by: frame.bytesPerRow), !overflow,
            frame.pixels.count >= bytes
        else { throw LoadError(description: "the watermark image has no pixels, or fewer than its size says") }
        guard !image.isPartial else { throw LoadError(description: "the watermark image is truncated") }
        var first = image
        first.frames = [frame]
        first.frameCount = 1
        (first.width, first.height) = (frame.width, frame.height)
        (first.originalWidth, first.originalHeight) = (frame.width, frame.height)
        self.image = first
        self.opacity = opacity
        var hash = SHA256()
        hash.update(data: Data("\(frame.width)x\(frame.height)x\(frame.bytesPerRow):\(opacity)\n".utf8))
        hash.update(data: frame.pixels)
        identity = HexDigits.lowercase(hash.finalize().prefix(12))
    }

    /// The image in the file at `path` as the watermark: its first frame, upright, in sRGB.
    ///
    /// - Throws: `LoadError` naming `path` when the file cannot be read, is larger than
    ///   `largestFileBytes`, is not an image the codecs decode, has more than `mostPixels` pixels or ends
    ///   early, or when `opacity` is not in (0, 1].
    public init(contentsOfFile path: String, opacity: Double = 1) throws(LoadError) {
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            data = try handle.read(upToCount: Self.largestFileBytes + 1) ?? Data()
        } catch {
            throw LoadError(description: "cannot read the watermark file '\(path)': \(error.localizedDescription)")
        }
        try self.init(data: data, source: "file '\(path)'", opacity: opacity)
    }

    /// The image file in `data` as the watermark: its first frame, upright, in sRGB. `source` says where the
    /// bytes came from in an error, after "the watermark": `file '/etc/mark.png'`, `at 'https://…'`.
    ///
    /// ```swift
    /// let watermark = try ProxyWatermark(data: bytes, source: "in IMGPROXY_WATERMARK_DATA", opacity: 0.5)
    /// ```
    ///
    /// - Throws: `LoadError` naming `source` when `data` is larger than `largestFileBytes`, is not an image
    ///   the codecs decode, has more than `mostPixels` pixels or ends early, or when `opacity` is not in
    ///   (0, 1].
    public init(data: Data, source: String, opacity: Double = 1) throws(LoadError) {
        guard data.count <= Self.largestFileBytes else {
            throw LoadError(description: "the watermark \(source) is larger than \(Self.largestFileBytes) bytes")
        }
        var options = ImageDecodingOptions(maximumImagePixels: Self.mostPixels, decodeFirstFrameOnly: true)
        options.maximumAnimationFrames = 1
        let image: Image
        do {
            image = try ImageDecoderRegistry.shared.decode(data, options: options)
        } catch {
            throw LoadError(description: "the watermark \(source) is not an image that can be decoded: \(error)")
        }
        do throws(LoadError) {
            try self.init(image: image, opacity: opacity)
        } catch {
            throw LoadError(description: "the watermark \(source): \(error.description)")
        }
    }
}
