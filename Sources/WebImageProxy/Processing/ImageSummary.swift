import Foundation
import WebImageCodecs

/// The JSON an `/info` URL answers with: what the source's bytes and first frame say about it, the
/// fields `InfoOptions` leaves out omitted. Field names are imgproxy's (`getting_info.mdx`) where it has
/// them; `color_profile` is this proxy's own.
///
/// ```json
/// {"blurhash":"L…","color_profile":null,"format":"jpeg","height":451,"mime_type":"image/jpeg",
///  "orientation":6,"pages_number":1,"size":31625,"thumb_hash":"5D49…","width":300}
/// ```
struct ImageSummary: Encodable {
    var width: Int?
    var height: Int?
    var orientation: Int?
    var format: String?
    var mimeType: String?
    var size: Int?
    var pagesNumber: Int?
    /// Set (to a name or nil) only when asked for, so that null can be told from left out.
    var colorProfile: String??
    var blurHash: String?
    /// ThumbHash's bytes as uppercase hex digits, as imgproxy writes them.
    var thumbHash: String?

    /// The summary of `image` (decoded first frame only, upright, with `ImageColorSpace.preserve`) from
    /// `bytes`, as `options` asks.
    ///
    /// - Throws: `PlaceholderError` when a hash cannot be made of the first frame (a decoder's frame
    ///   shorter than it declares).
    init(_ image: Image, bytes: Int, options: InfoOptions) throws(PlaceholderError) {
        if options.dimensions {
            // The decoder turned the pixels upright: the sizes account for the orientation, as imgproxy's.
            width = image.width
            height = image.height
            orientation = image.fileOrientation
        }
        if options.format {
            format = image.format.rawValue
            mimeType = "image/\(image.format.rawValue)"
        }
        if options.size { size = bytes }
        if options.pagesNumber { pagesNumber = image.frameCount }
        if options.colorProfile { colorProfile = .some(image.iccProfile.flatMap(ImagePlaceholders.colorProfileName)) }
        let wantsBlurHash = options.blurHashXComponents > 0 && options.blurHashYComponents > 0
        guard wantsBlurHash || options.thumbHash, let first = image.frames.first else { return }
        // Shrunk before the colour conversion: the conversion then costs 10,000 pixels at most, and the
        // hashes describe only what survives a 100×100 copy anyway.
        var small = image
        small.frames = [ImagePlaceholders.downscaled(first)]
        small.width = small.frames[0].width
        small.height = small.frames[0].height
        let frame = ImagePlaceholders.sRGB(small).frames[0]
        if wantsBlurHash {
            blurHash = try BlurHash.encode(
                frame, xComponents: options.blurHashXComponents, yComponents: options.blurHashYComponents)
        }
        if options.thumbHash {
            thumbHash = try ThumbHash.encode(frame).map { String(format: "%02X", $0) }.joined()
        }
    }

    private enum CodingKeys: String, CodingKey {
        case width, height, orientation, format, size
        case mimeType = "mime_type"
        case pagesNumber = "pages_number"
        case colorProfile = "color_profile"
        case blurHash = "blurhash"
        case thumbHash = "thumb_hash"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(width, forKey: .width)
        try container.encodeIfPresent(height, forKey: .height)
        try container.encodeIfPresent(orientation, forKey: .orientation)
        try container.encodeIfPresent(format, forKey: .format)
        try container.encodeIfPresent(mimeType, forKey: .mimeType)
        try container.encodeIfPresent(size, forKey: .size)
        try container.encodeIfPresent(pagesNumber, forKey: .pagesNumber)
        if let colorProfile { try container.encode(colorProfile, forKey: .colorProfile) }
        try container.encodeIfPresent(blurHash, forKey: .blurHash)
        try container.encodeIfPresent(thumbHash, forKey: .thumbHash)
    }

    /// The summary as JSON, keys sorted, slashes unescaped (`"image/png"`).
    var json: Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Only strings, integers and null: nothing here can fail to encode.
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }
}
