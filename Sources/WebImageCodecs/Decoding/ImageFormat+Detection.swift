import Foundation

extension ImageFormat {
    /// Finds the format of `data` from its first bytes (magic numbers), never from a file name or MIME type.
    ///
    /// ```swift
    /// ImageFormat.detect(Data([0xFF, 0xD8, 0xFF, 0xE0]))  // .jpeg
    /// ```
    ///
    /// AVIF is recognised when its `ftyp` box names `avif` or `avis` as the major brand or, within the first
    /// 64 bytes, as a compatible brand. Other HEIF files are `.heic` when a brand is one of HEIF's (`heic`,
    /// `heix`, `heim`, `heis`, `hevc`, `hevx`, `hevm`, `hevs`, `mif1`, `msf1`).
    ///
    /// - Returns: `.unknown` for empty data, data too short to tell, and anything unrecognised.
    public static func detect(_ data: Data) -> ImageFormat {
        var header = [UInt8](repeating: 0, count: 64)
        let count = min(64, data.count)
        header.withUnsafeMutableBytes { _ = data.copyBytes(to: $0, from: data.startIndex..<data.startIndex + count) }
        func starts(with magic: [UInt8], at offset: Int = 0) -> Bool {
            count >= offset + magic.count && Array(header[offset..<offset + magic.count]) == magic
        }
        if starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(with: Array("GIF87a".utf8)) || starts(with: Array("GIF89a".utf8)) { return .gif }
        if starts(with: Array("RIFF".utf8)) && starts(with: Array("WEBP".utf8), at: 8) { return .webp }
        if starts(with: [0xFF, 0x0A]) { return .jxl }
        if starts(with: [0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) { return .jxl }
        if starts(with: Array("ftyp".utf8), at: 4) {
            // The ftyp box: size, "ftyp", major brand, minor version, compatible brands to the box's end.
            let boxSize = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
            let end = min(count, boxSize)
            var offsets = [8]
            offsets += stride(from: 16, to: end - 3, by: 4)
            let brands = offsets.map { String(decoding: header[$0..<$0 + 4], as: UTF8.self) }
            if brands.contains(where: { $0 == "avif" || $0 == "avis" }) { return .avif }
            if brands.contains(where: Self.heifBrands.contains) { return .heic }
        }
        return .unknown
    }

    /// The `ftyp` brands of HEIF files other than AVIF: HEVC stills and sequences, and the generic image
    /// and sequence brands (libheif decides whether it can decode what they hold).
    static let heifBrands: Set<String> = [
        "heic", "heix", "heim", "heis", "hevc", "hevx", "hevm", "hevs", "mif1", "msf1",
    ]
}
