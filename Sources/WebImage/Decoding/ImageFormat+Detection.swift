import Foundation

extension ImageFormat {
    /// Finds the format of `data` from its first bytes (magic numbers), never from a file name or MIME type.
    ///
    /// ```swift
    /// ImageFormat.detect(Data([0xFF, 0xD8, 0xFF, 0xE0]))  // .jpeg
    /// ```
    ///
    /// - Returns: `.unknown` for empty data, data too short to tell, and anything unrecognised.
    public static func detect(_ data: Data) -> ImageFormat {
        var header = [UInt8](repeating: 0, count: 12)
        let count = min(12, data.count)
        header.withUnsafeMutableBytes { _ = data.copyBytes(to: $0, from: data.startIndex..<data.startIndex + count) }
        func starts(with magic: [UInt8], at offset: Int = 0) -> Bool {
            count >= offset + magic.count && Array(header[offset..<offset + magic.count]) == magic
        }
        if starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(with: Array("GIF87a".utf8)) || starts(with: Array("GIF89a".utf8)) { return .gif }
        if starts(with: Array("RIFF".utf8)) && starts(with: Array("WEBP".utf8), at: 8) { return .webp }
        return .unknown
    }
}
