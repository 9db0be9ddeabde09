import CLCMS
import Foundation

/// What placeholder hashes and image summaries need besides the hashes: a small copy of a frame, sRGB
/// pixels from an image decoded with its colour profile kept, and the name that profile gives itself.
///
/// ```swift
/// var options = ImageDecodingOptions()
/// options.decodeFirstFrameOnly = true
/// options.colorSpace = .preserve  // keeps `iccProfile`, so its name can be read
/// let image = try ImageDecoderRegistry.shared.decode(data, options: options)
/// let name = image.iccProfile.flatMap(ImagePlaceholders.colorProfileName)  // "Display P3"
/// let small = ImagePlaceholders.downscaled(ImagePlaceholders.sRGB(image).frames[0])
/// let blurHash = try BlurHash.encode(small)
/// let thumbHash = try ThumbHash.encode(small)
/// ```
public enum ImagePlaceholders {
    /// `frame` shrunk (Lanczos-3 on premultiplied alpha, after box averaging) to fit in `side`×`side`,
    /// keeping its aspect ratio, each side at least 1; the frame itself when it fits already. 100 (what
    /// ThumbHash takes) by default.
    public static func downscaled(_ frame: ImageFrame, toFit side: Int = ThumbHash.maximumSide) -> ImageFrame {
        let side = max(1, side)
        guard frame.width > side || frame.height > side, frame.width > 0, frame.height > 0 else { return frame }
        let scale = Double(side) / Double(max(frame.width, frame.height))
        let target = PixelSize(
            width: min(side, max(1, Int((Double(frame.width) * scale).rounded()))),
            height: min(side, max(1, Int((Double(frame.height) * scale).rounded()))))
        return LanczosResampler.resize(frame, to: target, mayBeOpaque: false)
    }

    /// `image` with its pixels in sRGB: converted through its `iccProfile` or its CICP description when it
    /// was decoded with `ImageColorSpace.preserve` and carries one (both are then cleared), as it is
    /// otherwise. A profile LittleCMS cannot use leaves the pixels as stored, as a default decode does.
    public static func sRGB(_ image: Image) -> Image {
        var converted = image
        var options = ImageDecodingOptions()
        options.colorSpace = .sRGB
        converted.iccProfile = nil
        converted.cicp = nil
        if let cicp = image.cicp, image.iccProfile == nil {
            let space = EmbeddedColorSpace.cicp(primaries: cicp.colorPrimaries, transfer: cicp.transferCharacteristics)
            ColorManagement.apply(space, to: &converted, options: options)
        } else if let profile = image.iccProfile {
            ColorManagement.apply(.icc(profile), to: &converted, options: options)
        }
        return converted
    }

    /// The name an ICC profile gives itself: its description tag (`desc`, a v2 text or a v4 localized
    /// one, English preferred), as LittleCMS reads it; nil when the profile cannot be read or has none.
    /// At most 256 characters are kept.
    public static func colorProfileName(_ profile: Data) -> String? {
        guard let parsed = ColorManagement.Profile(profile) else { return nil }
        var buffer = [CChar](repeating: 0, count: 257)
        let written = cmsGetProfileInfoASCII(
            parsed.handle, cmsInfoDescription, "en", "US", &buffer, UInt32(buffer.count))
        guard written > 0 else { return nil }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let name = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return name.isEmpty ? nil : name
    }
}
