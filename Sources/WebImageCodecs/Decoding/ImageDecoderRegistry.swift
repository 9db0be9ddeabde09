import Foundation
import Locking

/// The decoders WebImage knows, asked in reverse order of registration: the decoder registered last is
/// asked first, so registering a decoder adds a format or overrides a built-in one.
///
/// Thread-safe: the list sits behind a `Lock`, and decoding runs outside it.
///
/// ```swift
/// let image = try ImageDecoderRegistry.shared.decode(data)
/// ImageDecoderRegistry.shared.register(MyTIFFDecoder())   // asked before the built-ins from now on
/// ```
public final class ImageDecoderRegistry: Sendable {
    /// The registry the downloader uses unless told otherwise; starts with `builtInDecoders`.
    public static let shared = ImageDecoderRegistry()

    /// JPEG (libjpeg-turbo), PNG (libpng), GIF (giflib), WebP (libwebp), AVIF (libavif), JPEG XL (libjxl)
    /// and HEIC/HEIF (libheif), in registration order.
    public static var builtInDecoders: [any ImageDecoding] {
        [JPEGDecoder(), PNGDecoder(), GIFDecoder(), WebPDecoder(), AVIFDecoder(), JXLDecoder(), HEIFDecoder()]
    }

    private let decoders: Lock<[any ImageDecoding]>

    /// Creates a registry holding `decoders` in registration order (the last is asked first).
    public init(decoders: [any ImageDecoding] = ImageDecoderRegistry.builtInDecoders) {
        self.decoders = Lock(decoders)
    }

    /// Adds `decoder`; it is asked before every decoder registered earlier.
    public func register(_ decoder: any ImageDecoding) {
        decoders.withLock { $0.append(decoder) }
    }

    /// The registered decoders in the order they are asked (last registered first).
    public var orderedDecoders: [any ImageDecoding] {
        decoders.withLock { Array($0.reversed()) }
    }

    /// The first decoder, in asking order, that can decode `data`; `nil` when none can.
    public func decoder(for data: Data) -> (any ImageDecoding)? {
        orderedDecoders.first { $0.canDecode(data) }
    }

    /// Decodes `data` with the first decoder that accepts it.
    ///
    /// - Throws: `ImageCodecError` `.badImageData` for empty data (message mentions "empty"), data
    ///   no decoder recognises, and whatever the chosen decoder refuses.
    public func decode(_ data: Data, options: ImageDecodingOptions = .default) throws -> Image {
        guard !data.isEmpty else { throw DecodingFailure.emptyData() }
        guard let decoder = decoder(for: data) else {
            throw DecodingFailure.badImageData("the data is not in a format any registered decoder recognises")
        }
        var image = try decoder.decode(data, options: options)
        if options.keepsEXIF { image.exif = EXIFMetadata.block(in: data, format: image.format) }
        return image
    }

    /// An incremental decoder for the format the first bytes of `data` show, or `nil` while too few bytes
    /// have arrived to tell (or no decoder recognises them).
    public func makeIncrementalDecoder(
        for data: Data, options: ImageDecodingOptions = .default
    ) -> (any ImageIncrementalDecoding)? {
        decoder(for: data)?.makeIncrementalDecoder(options: options)
    }
}
