import Foundation

/// A numeric IPv4 or IPv6 address, as `DestinationPolicy` judges it.
///
/// Text is read with `inet_pton`, which takes only the canonical spellings (dotted quad for IPv4,
/// RFC 4291 text for IPv6): the odd spellings a URL may use (`2130706433`, `0x7f.1`, `127.1`) never reach
/// this type as text, since the policy judges the binary address curl is about to connect to.
struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    enum Family: Sendable {
        case v4, v6

        /// Address bits: 32 or 128.
        var width: Int { self == .v4 ? 32 : 128 }
    }

    let family: Family
    /// The address, most significant bit first; an IPv4 address fills the low 32 bits.
    let value: UInt128

    init(v4 value: UInt32) {
        family = .v4
        self.value = UInt128(value)
    }

    init(v6 value: UInt128) {
        family = .v6
        self.value = value
    }

    /// Reads a dotted-quad IPv4 or an IPv6 address; nil for anything else (names, ports, zone ids).
    init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(v4: UInt32(bigEndian: v4.s_addr))
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            self.init(v6: Self.value(of: v6))
        } else {
            return nil
        }
    }

    /// Reads the address of a `sockaddr_in` or `sockaddr_in6` of `length` bytes; nil for other families.
    init?(socketAddress: UnsafePointer<sockaddr>, length: Int) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            let address = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in.self)
            self.init(v4: UInt32(bigEndian: address.sin_addr.s_addr))
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            let address = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in6.self)
            self.init(v6: Self.value(of: address.sin6_addr))
        default:
            return nil
        }
    }

    private static func value(of address: in6_addr) -> UInt128 {
        withUnsafeBytes(of: address) { bytes in bytes.reduce(UInt128(0)) { $0 << 8 | UInt128($1) } }
    }

    /// The IPv4 address an IPv6 address carries and reaches: IPv4-mapped (`::ffff:0:0/96`, the IPv4
    /// address itself on a dual-stack socket), NAT64 (`64:ff9b::/96`, RFC 6052) and 6to4 (`2002::/16`,
    /// RFC 3056, the relay's IPv4 address in bits 16–47). nil for an IPv4 address and any other IPv6.
    var embeddedIPv4: IPAddress? {
        guard family == .v6 else { return nil }
        let low32 = IPAddress(v4: UInt32(truncatingIfNeeded: value))
        if value >> 32 == 0xffff || value >> 32 == 0x64_ff9b << 64 { return low32 }
        if value >> 112 == 0x2002 { return IPAddress(v4: UInt32(truncatingIfNeeded: value >> 80)) }
        return nil
    }

    /// Whether this is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`): the same destination as `a.b.c.d`.
    var isIPv4Mapped: Bool { family == .v6 && value >> 32 == 0xffff }

    /// "127.0.0.1", "::1", "::ffff:127.0.0.1" (`inet_ntop`'s text).
    var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch family {
        case .v4:
            var address = in_addr(s_addr: UInt32(truncatingIfNeeded: value).bigEndian)
            guard inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        case .v6:
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { bytes in
                for index in 0..<16 { bytes[index] = UInt8(truncatingIfNeeded: value >> (8 * (15 - index))) }
            }
            guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A block of addresses in CIDR notation: `10.0.0.0/8`, `fc00::/7`; a bare address is a block of one.
struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    let family: IPAddress.Family
    /// The first address of the block (no bits set past the prefix).
    let base: UInt128
    let prefixLength: Int

    /// Reads `address/prefix` or a bare address. nil when the address is not numeric, the prefix is not a
    /// whole number within the family's width, or the address has bits set past the prefix
    /// (`10.1.2.3/8`: a typo for `10.0.0.0/8` or for `10.1.2.3/32`, so neither is guessed).
    ///
    /// An IPv4-mapped block (`::ffff:10.0.0.0/104`) is read as the IPv4 block it covers (`10.0.0.0/8`),
    /// since the policy judges a mapped address as its IPv4 address.
    init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else { return nil }
        var length = address.family.width
        if parts.count == 2 {
            let digits = parts[1]
            guard !digits.isEmpty, digits.count <= 3, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                let parsed = Int(digits), parsed <= length
            else { return nil }
            length = parsed
        }
        guard address.value & ~Self.mask(address.family, length) == 0 else { return nil }
        if address.isIPv4Mapped && length >= 96 {
            self.init(family: .v4, base: address.value & 0xffff_ffff, prefixLength: length - 96)
        } else {
            self.init(family: address.family, base: address.value, prefixLength: length)
        }
    }

    init(family: IPAddress.Family, base: UInt128, prefixLength: Int) {
        self.family = family
        self.base = base
        self.prefixLength = prefixLength
    }

    /// The mask of a `length`-bit prefix in the family's width (low bits for IPv4).
    private static func mask(_ family: IPAddress.Family, _ length: Int) -> UInt128 {
        let width = family.width
        guard length > 0 else { return 0 }
        let ones: UInt128 = width == 128 ? ~0 : (1 << width) - 1
        return (ones >> (width - length)) << (width - length)
    }

    func contains(_ address: IPAddress) -> Bool {
        address.family == family && address.value & Self.mask(family, prefixLength) == base
    }

    var description: String {
        let first = family == .v4 ? IPAddress(v4: UInt32(truncatingIfNeeded: base)) : IPAddress(v6: base)
        return "\(first)/\(prefixLength)"
    }
}
