import Foundation

/// Why a name did not resolve: the sentence a row's `error_message` carries.
struct DNSFailure: Error, Sendable, Equatable {
    let message: String

    init(_ message: String) { self.message = message }
}

/// A stub resolver asking one DNS server (`webimage bulk --resolver`): an A and an AAAA query over UDP
/// (RFC 1035), again over TCP when an answer is truncated, each attempt bounded by ``timeout``.
///
/// Answers are checked before they are believed: the query id, the response bit and the question echoed
/// must match what was sent (a datagram from elsewhere is ignored), names are read with at most 64
/// compression pointers and 255 bytes, and only A and AAAA records of the name or of the CNAME chain that
/// starts at it count. Every lookup blocks its thread; ``BulkHostResolver`` runs them on threads of their
/// own.
struct DNSClient: Sendable {
    /// The server's address (IPv4 or IPv6 text) and port.
    let address: String
    let port: UInt16
    /// Seconds one attempt waits for the answers; 2.
    var timeout: TimeInterval = 2
    /// Attempts over UDP before the lookup fails; 2.
    var attempts = 2

    /// The server of `text`: `ADDRESS`, `ADDRESS:PORT` or `[IPV6]:PORT`, port 53 by default; nil when it is
    /// not a numeric address (a resolver named by a name would need a resolver itself).
    init?(server text: String) {
        var host = text
        var port: UInt16 = 53
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let value = UInt16(rest.dropFirst()), value > 0 else { return nil }
                port = value
            }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            host = String(text[..<colon])
            guard let value = UInt16(text[text.index(after: colon)...]), value > 0 else { return nil }
            port = value
        }
        var v4 = in_addr()
        var v6 = in6_addr()
        guard inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1 else { return nil }
        address = host
        self.port = port
    }

    /// The addresses of `name` (IPv4 first) and the smallest TTL among them, in seconds. An alias whose
    /// answer brings no address is asked for in turn, at most 8 times.
    func lookup(_ name: String) throws(DNSFailure) -> (addresses: [String], ttl: Int) {
        var labels = try DNSMessage.labels(of: name)
        for _ in 0..<8 {
            let (addresses, ttl, alias) = try ask(labels)
            if !addresses.isEmpty { return (addresses, ttl) }
            guard let alias else { break }
            labels = try DNSMessage.labels(of: alias)
        }
        throw DNSFailure("the resolver \(address):\(port) has no address for '\(name.prefix(253))'")
    }

    /// One name's records, asked up to ``attempts`` times while the failures may pass.
    private func ask(_ labels: [[UInt8]]) throws(DNSFailure) -> (addresses: [String], ttl: Int, alias: String?) {
        var lastFailure = AttemptFailure("no answer from the resolver \(address):\(port)")
        for _ in 0..<max(1, attempts) {
            do {
                return try exchange(labels)
            } catch {
                lastFailure = error
                if error.isFinal { break }
            }
        }
        throw DNSFailure(lastFailure.message)
    }

    /// One attempt: the A and AAAA queries over UDP at once (as glibc sends them), then over TCP for a
    /// truncated answer.
    private func exchange(_ labels: [[UInt8]]) throws(AttemptFailure) -> (
        addresses: [String], ttl: Int, alias: String?
    ) {
        let types = [DNSMessage.typeA, DNSMessage.typeAAAA]
        var ids: [UInt16] = []
        while ids.count < types.count {
            let id = UInt16.random(in: 0...UInt16.max)
            if !ids.contains(id) { ids.append(id) }
        }
        let queries = zip(ids, types).map { id, type in
            (
                query: DNSMessage.query(id: id, labels: labels, type: type),
                accept: { (bytes: [UInt8]) in DNSMessage.parse(bytes, id: id, labels: labels, type: type) }
            )
        }
        var answers = try DNSSocket.udp(address: address, port: port, timeout: timeout, queries: queries)
        for index in answers.indices where answers[index].truncated {
            answers[index] = try DNSSocket.tcp(
                address: address, port: port, timeout: timeout, query: queries[index].query,
                accept: queries[index].accept)
        }
        let name = labels.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".")
        if answers.allSatisfy({ $0.rcode == 3 }) {
            throw AttemptFailure("the resolver \(address):\(port) says '\(name)' does not exist", isFinal: true)
        }
        if let failed = answers.first(where: { $0.rcode != 0 && $0.rcode != 3 }) {
            let meaning = failed.rcode == 2 ? "server failure" : failed.rcode == 5 ? "refused" : "error"
            throw AttemptFailure(
                "the resolver \(address):\(port) answered '\(name)' with rcode \(failed.rcode) (\(meaning))",
                isFinal: failed.rcode == 5)
        }
        return (answers.flatMap(\.addresses), answers.compactMap(\.ttl).min() ?? 0, answers.compactMap(\.alias).first)
    }
}

/// One attempt's failure: final when asking again cannot change it (NXDOMAIN, no address, refused).
struct AttemptFailure: Error {
    let message: String
    var isFinal = false

    init(_ message: String, isFinal: Bool = false) {
        self.message = message
        self.isFinal = isFinal
    }
}
