import Foundation

/// Builds the `badImageData` errors every decoder throws, so their messages read alike.
enum DecodingFailure {
    /// "empty image data".
    static func emptyData() -> ImageDownloaderError {
        ImageDownloaderError(.badImageData, "empty image data (0 bytes)")
    }

    /// A `badImageData` error with `message`.
    static func badImageData(_ message: String) -> ImageDownloaderError {
        ImageDownloaderError(.badImageData, message)
    }
}
