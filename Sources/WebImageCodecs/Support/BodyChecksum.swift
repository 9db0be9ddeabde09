import Foundation

/// A fast 64-bit non-cryptographic hash of a body (xxHash64-style lane mixing), stored in the index
/// to detect a body file whose bytes changed behind the cache's back, and in encoder keys (a JPEG's EXIF).
/// `package`: the caches in WebImage use it too.
package enum BodyChecksum {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let prime5: UInt64 = 0x27D4_EB2F_1656_67C5

    package static func hash(_ data: Data) -> UInt64 {
        data.withUnsafeBytes { buffer -> UInt64 in
            var hash = prime5 &+ UInt64(buffer.count)
            var offset = 0
            while offset + 8 <= buffer.count {
                var lane = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                lane = rotate(lane &* prime2, 31) &* prime1
                hash = rotate(hash ^ lane, 27) &* prime1 &+ prime4
                offset += 8
            }
            while offset < buffer.count {
                hash = rotate(hash ^ (UInt64(buffer[offset]) &* prime5), 11) &* prime1
                offset += 1
            }
            hash ^= hash >> 33
            hash = hash &* prime2
            hash ^= hash >> 29
            hash = hash &* prime3
            hash ^= hash >> 32
            return hash
        }
    }

    private static func rotate(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value << count) | (value >> (64 - count))
    }
}
