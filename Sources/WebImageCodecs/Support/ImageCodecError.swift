import Foundation

/// The error WebImageCodecs' decoders, transformers and encoders throw.
///
/// The downloader reports a codec error as `ImageCodecError` `.badImageData`, with this error as its
/// `underlying` error and the same message; code that decodes, transforms or encodes by itself catches
/// this type.
///
/// ```swift
/// do {
///     let image = try ImageDecoderRegistry.shared.decode(upload)
///     let thumbnail = try ImageTransformer.resize(to: Size(width: 256, height: 256)).transform(image)
///     return try thumbnail.encoded(as: .webP)
/// } catch let error as ImageCodecError where error.code == .badImageData {
///     return reject("not an image we can read: \(error.message)")
/// }
/// ```
public struct ImageCodecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The numeric code.
        public let rawValue: Int
        /// Creates a code from its number.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// 1001 (the number of `ImageDownloaderError.Code.badImageData`): the data is empty, in no format a
        /// decoder recognises, damaged, or over a limit (dimensions, pixel memory, frames, profile size).
        public static let badImageData = Code(rawValue: 1001)
        /// 1100: an encoder could not write the image.
        public static let encodingFailed = Code(rawValue: 1100)
        /// 1101: a transformer was given parameters it cannot apply, such as a 0×0 size.
        public static let invalidParameters = Code(rawValue: 1101)
        /// 1102: an encode gave up because its `EncodeStopCheck` said so.
        public static let stopped = Code(rawValue: 1102)

        /// The code's name, e.g. "badImageData".
        public var description: String {
            switch self {
            case .badImageData: "badImageData"
            case .encodingFailed: "encodingFailed"
            case .invalidParameters: "invalidParameters"
            case .stopped: "stopped"
            default: "code\(rawValue)"
            }
        }
    }

    /// A configured limit that refused the work, so a service can say which one (and a client knows that
    /// another request, not another file, is the fix).
    public enum Limit: String, Sendable, Hashable {
        /// The image declares more pixels than `ImageDecodingOptions.maximumImagePixels`.
        case maximumImagePixels
        /// The decode or transform needs more pixel memory than the whole budget
        /// (`DecodeMemoryBudget.limit`, the downloader's `maximumDecodeMemory`).
        case maximumDecodeMemory
        /// The budget could hold the work, but other decodes held too much of it for too long: a busy
        /// process, not a request too large.
        case decodeMemoryInUse
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for people, e.g. "PNG header unreadable: Not a PNG file".
    public var message: String
    /// The limit that refused the work, when a limit is why it failed; nil otherwise.
    public var limit: Limit?

    /// Creates an error.
    public init(_ code: Code, _ message: String, limit: Limit? = nil) {
        self.code = code
        self.message = message
        self.limit = limit
    }

    /// "badImageData (1001): …".
    public var description: String { "\(code) (\(code.rawValue)): \(message)" }
}

/// Builds the errors every decoder throws, so their messages read alike.
enum DecodingFailure {
    /// "empty image data".
    static func emptyData() -> ImageCodecError {
        ImageCodecError(.badImageData, "empty image data (0 bytes)")
    }

    /// A `badImageData` error with `message`, and the limit that refused the work when one did.
    static func badImageData(_ message: String, limit: ImageCodecError.Limit? = nil) -> ImageCodecError {
        ImageCodecError(.badImageData, message, limit: limit)
    }
}
