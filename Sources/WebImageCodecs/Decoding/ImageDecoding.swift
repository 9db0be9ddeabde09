import Foundation

/// Turns the bytes of one or more image formats into an `Image`.
///
/// Register your own with `ImageDecoderRegistry.register(_:)` to add a format or replace a built-in
/// decoder. Implementations must be thread-safe: `decode` may run on several threads at once.
///
/// ```swift
/// struct BMPDecoder: ImageDecoding {
///     func canDecode(_ data: Data) -> Bool { data.starts(with: Array("BM".utf8)) }
///     func decode(_ data: Data, options: ImageDecodingOptions) throws -> Image { ... }
/// }
/// ImageDecoderRegistry.shared.register(BMPDecoder())
/// ```
public protocol ImageDecoding: Sendable {
    /// Whether this decoder understands `data`, judged from its first bytes.
    func canDecode(_ data: Data) -> Bool
    /// Decodes complete data. Throws `ImageCodecError` with code `.badImageData` when it cannot.
    ///
    /// Truncated data that still yields pixels gives an image with `isPartial == true`.
    func decode(_ data: Data, options: ImageDecodingOptions) throws -> Image
    /// A fresh decoder for data that arrives in pieces (one per download).
    ///
    /// The default re-decodes the data received so far each time (see `ReDecodingIncrementalDecoder`).
    func makeIncrementalDecoder(options: ImageDecodingOptions) -> any ImageIncrementalDecoding
}

extension ImageDecoding {
    /// Re-decodes everything received so far on each update.
    public func makeIncrementalDecoder(options: ImageDecodingOptions) -> any ImageIncrementalDecoding {
        ReDecodingIncrementalDecoder(decoder: self, options: options)
    }
}

/// Decodes an image while its bytes arrive, for progressive display.
///
/// Each call gets **all the bytes received so far** (the accumulated body, which only ever grows by
/// appending); decoders that stream keep track of what they consumed. An instance belongs to one download
/// and must be used from one thread at a time (calls may move between threads, never overlap) — it is
/// not `Sendable`. The downloader asks for at most one partial image at a time and then calls
/// `decodeFinal(_:)` once, on the same instance, with the whole body.
public protocol ImageIncrementalDecoding: AnyObject {
    /// A partial image (`isPartial == true`) from the bytes so far, or `nil` when nothing new can be
    /// shown yet (header incomplete, no new rows, or the data cannot be decoded incrementally). Never throws:
    /// problems surface in `decodeFinal(_:)`.
    func decodePartial(_ data: Data) -> Image?
    /// The image from the complete data; equal to `decode(data, options:)` of the decoder that made this
    /// incremental decoder.
    func decodeFinal(_ data: Data) throws -> Image
}
