/// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF), the
/// checksum of TFRecord framing. Neither zlib (CRC-32) nor swift-crypto has it; a table of 256 entries
/// computes a byte per step, fast enough for a shard's images.
enum CRC32C {
    /// The checksum of `bytes`; `"123456789"` gives 0xE3069283.
    static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
        }
        return crc ^ 0xFFFF_FFFF
    }

    /// TFRecord's masked checksum: the CRC rotated right by 15 bits plus 0xA282EAD8, so that a checksum
    /// stored inside checksummed data does not make a weak pattern.
    static func masked(_ bytes: some Sequence<UInt8>) -> UInt32 {
        let crc = checksum(bytes)
        return ((crc >> 15) | (crc << 17)) &+ 0xA282_EAD8
    }

    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        return crc
    }
}
