import Foundation

/// DNS messages as ``DNSClient`` sends and reads them (RFC 1035): a query of one question with recursion
/// desired, and the A and AAAA records of an answer, bounds-checked throughout.
enum DNSMessage {
    static let typeA: UInt16 = 1
    static let typeCNAME: UInt16 = 5
    static let typeAAAA: UInt16 = 28

    /// What an answer to one query says.
    struct Answer: Equatable {
        /// The response code: 0 no error, 2 server failure, 3 no such name, 5 refused.
        var rcode: Int
        /// Whether the server cut the answer to fit a datagram (ask again over TCP).
        var truncated: Bool
        /// The addresses of the name, or of the CNAME chain that starts at it, as text.
        var addresses: [String]
        /// The smallest TTL of those records; nil when there are none.
        var ttl: Int?
        /// Where the name's CNAME chain ends, when it has one: the name to ask next when no address came
        /// with it (a server that does not chase aliases itself).
        var alias: String?
    }

    /// The labels of `name` (a trailing dot dropped): ASCII letters, digits, `-` and `_`, each 1 to 63
    /// bytes, 253 bytes in all.
    static func labels(of name: String) throws(DNSFailure) -> [[UInt8]] {
        let trimmed = name.hasSuffix(".") ? String(name.dropLast()) : name
        let labels = trimmed.split(separator: ".", omittingEmptySubsequences: false).map { Array($0.utf8) }
        let allowed = { (byte: UInt8) in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        guard trimmed.utf8.count <= 253, !labels.isEmpty,
            labels.allSatisfy({ (1...63).contains($0.count) && $0.allSatisfy(allowed) })
        else { throw DNSFailure("'\(name.prefix(253))' is not a DNS name") }
        return labels
    }

    /// A query for `type` records of `labels`, recursion desired.
    static func query(id: UInt16, labels: [[UInt8]], type: UInt16) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in labels { bytes += [UInt8(label.count)] + label }
        bytes += [0, UInt8(type >> 8), UInt8(type & 0xFF), 0, 1]
        return bytes
    }

    /// The answer `bytes` give to the query (`id`, `labels`, `type`); nil when they are not that answer (another
    /// id, not a response, another question, or malformed): the caller ignores them and waits on.
    static func parse(_ bytes: [UInt8], id: UInt16, labels: [[UInt8]], type: UInt16) -> Answer? {
        var reader = Reader(bytes: bytes)
        guard let answerID = reader.u16(), answerID == id, let flags = reader.u16(), flags & 0x8000 != 0,
            (flags >> 11) & 0xF == 0, let questions = reader.u16(), questions == 1, let count = reader.u16(),
            reader.u16() != nil, reader.u16() != nil
        else { return nil }
        let asked = labels.map { String(decoding: $0, as: UTF8.self).lowercased() }.joined(separator: ".")
        guard let question = reader.name(), question == asked, reader.u16() == type, reader.u16() == 1 else {
            return nil
        }
        var answer = Answer(rcode: Int(flags & 0xF), truncated: flags & 0x0200 != 0, addresses: [], ttl: nil)
        var records: [(owner: String, type: UInt16, ttl: Int, data: Range<Int>)] = []
        for _ in 0..<count {
            guard let owner = reader.name(), let recordType = reader.u16(), let recordClass = reader.u16(),
                let ttl = reader.u32(), let length = reader.u16(), let data = reader.skip(Int(length))
            else { return answer.truncated ? answer : nil }
            if recordClass == 1 { records.append((owner, recordType, Int(min(ttl, 0x7FFF_FFFF)), data)) }
        }
        // The names the chain reaches from the question, through CNAME records.
        var names: Set<String> = [asked]
        var grew = true
        while grew {
            grew = false
            for record in records where record.type == typeCNAME && names.contains(record.owner) {
                var target = Reader(bytes: bytes, position: record.data.lowerBound)
                if let name = target.name(), names.insert(name).inserted {
                    grew = true
                    answer.alias = name
                }
            }
        }
        for record in records where record.type == type && names.contains(record.owner) {
            let data = Array(bytes[record.data])
            guard let text = address(data) else { continue }
            answer.addresses.append(text)
            answer.ttl = min(answer.ttl ?? .max, record.ttl)
        }
        return answer
    }

    /// An A or AAAA record's data as text; nil for any other length.
    private static func address(_ data: [UInt8]) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch data.count {
        case 4:
            var value = in_addr()
            withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: data) }
            guard inet_ntop(AF_INET, &value, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        case 16:
            var value = in6_addr()
            withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: data) }
            guard inet_ntop(AF_INET6, &value, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        default:
            return nil
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Reads a message front to back; every read is bounds-checked and returns nil past the end.
    struct Reader {
        let bytes: [UInt8]
        var position = 0

        mutating func u16() -> UInt16? {
            guard position + 2 <= bytes.count else { return nil }
            defer { position += 2 }
            return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
        }

        mutating func u32() -> UInt32? {
            guard let high = u16(), let low = u16() else { return nil }
            return UInt32(high) << 16 | UInt32(low)
        }

        /// Passes `count` bytes; their range.
        mutating func skip(_ count: Int) -> Range<Int>? {
            guard count >= 0, position + count <= bytes.count else { return nil }
            defer { position += count }
            return position..<(position + count)
        }

        /// A name, lowercased, its compression pointers followed (at most 64, never forward past the end),
        /// at most 255 bytes; the reader ends after the name's own bytes.
        mutating func name() -> String? {
            var labels: [String] = []
            var length = 0
            var cursor = position
            var jumps = 0
            var end: Int?
            while true {
                guard cursor < bytes.count else { return nil }
                let byte = Int(bytes[cursor])
                if byte == 0 {
                    position = end ?? cursor + 1
                    return labels.joined(separator: ".")
                }
                if byte & 0xC0 == 0xC0 {
                    guard cursor + 1 < bytes.count, jumps < 64 else { return nil }
                    if end == nil { end = cursor + 2 }
                    cursor = (byte & 0x3F) << 8 | Int(bytes[cursor + 1])
                    jumps += 1
                    continue
                }
                guard byte & 0xC0 == 0, cursor + 1 + byte <= bytes.count else { return nil }
                length += byte + 1
                guard length <= 255 else { return nil }
                labels.append(String(decoding: bytes[(cursor + 1)..<(cursor + 1 + byte)], as: UTF8.self).lowercased())
                cursor += 1 + byte
            }
        }
    }
}
