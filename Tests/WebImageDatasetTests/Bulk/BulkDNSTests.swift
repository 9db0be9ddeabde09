import Foundation
import TestSupport
import Testing

@testable import WebImageDataset

/// The DNS stage of `webimage bulk`: ``DNSClient`` against Debian's unbound on loopback (A, AAAA, CNAME,
/// NXDOMAIN, an answer too long for a datagram), ``DNSMessage`` against damaged and hostile answers, and
/// ``BulkHostResolver``'s cache. Every name is under `.test` and only unbound on 127.0.0.1 answers it.
@Suite("bulk DNS stage", .timeLimit(.minutes(5)))
struct BulkDNSTests {
    static let records =
        [
            "a.dns.test. 120 IN A 127.0.0.1",
            "a.dns.test. 120 IN AAAA ::1",
            "six.dns.test. 120 IN AAAA ::1",
            "alias.dns.test. 300 IN CNAME a.dns.test.",
            "chain.dns.test. 300 IN CNAME alias.dns.test.",
            "text.dns.test. 300 IN TXT \\\"no address here\\\"",
        ] + (1...120).map { "many.dns.test. 60 IN A 127.0.\($0 / 250).\($0 % 250 + 1)" }

    @Test(
        "unbound's answers: A and AAAA, aliases chased, NXDOMAIN and no-address said, a long answer over TCP",
        .enabled(if: Unbound.available, "make test installs unbound"))
    func lookupsAgainstUnbound() throws {
        let server = try Unbound(zone: "dns.test", records: Self.records)
        let client = try #require(DNSClient(server: server.address))
        let a = try client.lookup("a.dns.test")
        #expect(a.addresses == ["127.0.0.1", "::1"])
        #expect(a.ttl > 0 && a.ttl <= 120)
        #expect(try client.lookup("A.DNS.TEST.").addresses == ["127.0.0.1", "::1"])
        #expect(try client.lookup("six.dns.test").addresses == ["::1"])
        #expect(try client.lookup("chain.dns.test").addresses == ["127.0.0.1", "::1"])
        // 120 A records do not fit a 512-byte datagram: the truncated answer is asked again over TCP.
        let many = try client.lookup("many.dns.test").addresses
        #expect(many.count == 120 && Set(many).count == 120)
        func failure(_ name: String) -> String? {
            do {
                _ = try client.lookup(name)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(failure("none.dns.test") == "the resolver \(server.address) says 'none.dns.test' does not exist")
        #expect(failure("text.dns.test") == "the resolver \(server.address) has no address for 'text.dns.test'")
        #expect(failure("bad name.dns.test") == "'bad name.dns.test' is not a DNS name")
        #expect(failure(String(repeating: "a", count: 64) + ".test")?.contains("is not a DNS name") == true)
        // Outside its zone: unbound's own default zone for .test says NXDOMAIN; any other name is refused
        // (`local-zone: "." refuse`: unbound never recurses, nothing leaves the machine).
        #expect(failure("other.test") == "the resolver \(server.address) says 'other.test' does not exist")
        let refused = failure("images.example.com")
        #expect(refused?.contains("rcode 5 (refused)") == true, "\(refused ?? "")")
    }

    @Test("a server that is not there or never answers: a failure naming it, within the timeout")
    func silentServers() throws {
        // Nothing listens: the kernel's port-unreachable ends the wait at once.
        let closed = try RawConnection.freePort()
        var client = try #require(DNSClient(server: "127.0.0.1:\(closed)"))
        client.timeout = 5
        #expect(throws: DNSFailure.self) { try client.lookup("a.dns.test") }
        // A socket that reads and never answers: each attempt waits its timeout.
        let (silent, port) = try RawConnection.boundUDPSocket()
        defer { close(silent) }
        client = try #require(DNSClient(server: "127.0.0.1:\(port)"))
        client.timeout = 0.2
        do {
            _ = try client.lookup("a.dns.test")
            Issue.record("a server that never answers gave an answer")
        } catch {
            #expect(error.message.contains("no answer from the resolver") && error.message.contains("within 0.2 s"))
        }
    }

    @Test("--resolver's spellings: an address, a port, IPv6 in brackets; names and bad ports refused")
    func serverSpellings() {
        #expect(DNSClient(server: "127.0.0.1").map { "\($0.address) \($0.port)" } == "127.0.0.1 53")
        #expect(DNSClient(server: "10.0.0.2:5353").map { "\($0.address) \($0.port)" } == "10.0.0.2 5353")
        #expect(DNSClient(server: "[::1]:54").map { "\($0.address) \($0.port)" } == "::1 54")
        #expect(DNSClient(server: "::1").map { "\($0.address) \($0.port)" } == "::1 53")
        for bad in ["dns.example", "127.0.0.1:0", "127.0.0.1:99999", "[::1]x", "", "1.2.3"] {
            #expect(DNSClient(server: bad) == nil, "\(bad)")
        }
    }

    /// A valid answer for `a.dns.test` A: 127.0.0.1, then an alias record, built by hand.
    static func answer(id: UInt16) -> [UInt8] {
        let labels = try! DNSMessage.labels(of: "a.dns.test")
        var bytes = DNSMessage.query(id: id, labels: labels, type: DNSMessage.typeA)
        bytes[2] = 0x81
        bytes[3] = 0x80
        bytes[7] = 2  // two answers
        bytes += [0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]
        bytes += [0xC0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 0xC0, 12]  // a CNAME to itself
        return bytes
    }

    @Test("answers are checked: another id, question or type is ignored; loops and overruns end; 20,000 mutants")
    func hostileAnswers() {
        let labels = try! DNSMessage.labels(of: "a.dns.test")
        let good = Self.answer(id: 0x1234)
        let parsed = DNSMessage.parse(good, id: 0x1234, labels: labels, type: DNSMessage.typeA)
        #expect(parsed?.addresses == ["127.0.0.1"] && parsed?.ttl == 60 && parsed?.rcode == 0)
        #expect(DNSMessage.parse(good, id: 0x1235, labels: labels, type: DNSMessage.typeA) == nil)
        #expect(DNSMessage.parse(good, id: 0x1234, labels: labels, type: DNSMessage.typeAAAA) == nil)
        let other = try! DNSMessage.labels(of: "b.dns.test")
        #expect(DNSMessage.parse(good, id: 0x1234, labels: other, type: DNSMessage.typeA) == nil)
        var query = good
        query[2] = 0x01  // not a response
        #expect(DNSMessage.parse(query, id: 0x1234, labels: labels, type: DNSMessage.typeA) == nil)
        // A name whose pointer points at itself, and one past the end: no answer, no hang.
        var loop = good
        loop.replaceSubrange(28..<30, with: [0xC0, 28])
        #expect(DNSMessage.parse(loop, id: 0x1234, labels: labels, type: DNSMessage.typeA) == nil)
        var past = good
        past.replaceSubrange(28..<30, with: [0xFF, 0xFF])
        #expect(DNSMessage.parse(past, id: 0x1234, labels: labels, type: DNSMessage.typeA) == nil)
        var generator = SeededGenerator(seed: 53)
        var answered = 0
        for round in 0..<20_000 {
            var mutant = good
            if round % 5 == 0 {
                mutant = Array(mutant.prefix(Int.random(in: 0..<mutant.count, using: &generator)))
            } else {
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    mutant[Int.random(in: 12..<mutant.count, using: &generator)] = UInt8.random(
                        in: 0...255, using: &generator)
                }
            }
            if let answer = DNSMessage.parse(mutant, id: 0x1234, labels: labels, type: DNSMessage.typeA) {
                answered += 1
                #expect(answer.addresses.count <= 1)
            }
        }
        #expect(answered > 0 && answered < 20_000, "\(answered)")
    }

    @Test(
        "the stage looks each host up once for all its rows, and remembers a failure",
        .enabled(if: Unbound.available, "make test installs unbound"))
    func oneLookupPerHost() async throws {
        let server = try Unbound(zone: "dns.test", records: Self.records)
        let resolver = BulkHostResolver(concurrency: 4, client: DNSClient(server: server.address))
        #expect(resolver.isExclusive)
        #expect(resolver.addresses(of: "a.dns.test") == nil)
        let results = await withTaskGroup(of: Result<[String], DNSFailure>.self) { group in
            for index in 0..<200 {
                group.addTask { await resolver.resolve(index % 2 == 0 ? "a.dns.test" : "NONE.dns.test") }
            }
            var results: [Result<[String], DNSFailure>] = []
            for await result in group { results.append(result) }
            return results
        }
        #expect(results.filter { (try? $0.get()) == ["127.0.0.1", "::1"] }.count == 100)
        #expect(results.filter { (try? $0.get()) == nil }.count == 100)
        #expect(resolver.lookups == 2)
        #expect(resolver.addresses(of: "a.dns.test") == ["127.0.0.1", "::1"])
        #expect(resolver.addresses(of: "none.dns.test") == nil)
        // The system resolver: localhost is in /etc/hosts (no query leaves the machine).
        let system = BulkHostResolver(concurrency: 2, client: nil)
        #expect(!system.isExclusive)
        let local = try await system.resolve("localhost").get()
        #expect(local.contains("127.0.0.1") || local.contains("::1"), "\(local)")
    }
}
