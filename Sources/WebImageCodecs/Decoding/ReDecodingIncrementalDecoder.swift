import Foundation

/// An incremental decoder that decodes all the data received so far on every update.
///
/// The built-in JPEG and GIF decoders use it: libjpeg decodes a truncated progressive JPEG from the scans
/// that arrived (a coarse whole image) and a truncated baseline JPEG down to the last complete row, and
/// giflib yields the frames that arrived. A class used from one thread at a time (see
/// `ImageIncrementalDecoding`).
public final class ReDecodingIncrementalDecoder: ImageIncrementalDecoding {
    private let decoder: any ImageDecoding
    private let options: ImageDecodingOptions
    private var lastPartialByteCount = 0

    /// Wraps `decoder`, decoding with `options`.
    public init(decoder: any ImageDecoding, options: ImageDecodingOptions) {
        self.decoder = decoder
        self.options = options
    }

    /// Decodes the data so far; `nil` when nothing new arrived or it cannot be decoded yet.
    public func decodePartial(_ data: Data) -> Image? {
        guard data.count > lastPartialByteCount else { return nil }
        lastPartialByteCount = data.count
        guard var image = try? decoder.decode(data, options: options.forPartialDecode) else { return nil }
        image.isPartial = true
        return image
    }

    /// Decodes the complete data with the wrapped decoder.
    public func decodeFinal(_ data: Data) throws -> Image {
        try decoder.decode(data, options: options)
    }
}
