import Foundation
import Locking
import WebImage

/// `webimage bulk`'s DNS stage (`--dns-concurrency`, `--resolver`): each row's host is resolved before its
/// download, at most ``concurrency`` lookups at once, each host once while its answer lasts, and the
/// downloader connects to those addresses (it is this run's ``HostAddressProviding``) instead of resolving
/// again. Rows of one host wait on one lookup; a failed lookup is remembered for ``negativeSeconds``, so a
/// dead host's thousand rows cost one query, not a thousand.
///
/// Lookups go to the system resolver (`getaddrinfo`, as curl's own would) or, with a ``DNSClient``, to the
/// DNS server the user named: then every host, a redirect's included, is resolved there and nowhere else
/// (``isExclusive``). Each lookup blocks a thread of its own, never Swift's cooperative pool.
final class BulkHostResolver: HostAddressProviding {
    /// Lookups at once.
    let concurrency: Int
    /// The user's DNS server; nil for the system resolver.
    let client: DNSClient?
    /// Seconds an answer is kept: its TTL, within 30 s … 1 h (the system resolver gives no TTL: 300 s).
    static let minimumSeconds = 30
    static let maximumSeconds = 3_600
    static let systemSeconds = 300
    /// Seconds a failure is kept.
    static let negativeSeconds = 60

    private let slots: DownloadSlots
    private let state = Lock(State())

    private struct Entry {
        var result: Result<[String], DNSFailure>
        var expires: Date
    }

    private struct State {
        var cache: [String: Entry] = [:]
        var waiting: [String: [CheckedContinuation<Result<[String], DNSFailure>, Never>]] = [:]
        /// Lookups made, for the run's summary and the tests.
        var lookups = 0
    }

    /// A stage of `concurrency` lookups at once through `client`, or the system resolver.
    init(concurrency: Int, client: DNSClient?) {
        self.concurrency = max(1, concurrency)
        self.client = client
        slots = DownloadSlots(count: max(1, concurrency))
    }

    var isExclusive: Bool { client != nil }

    /// The lookups made so far.
    var lookups: Int { state.withLock { $0.lookups } }

    func addresses(of host: String) -> [String]? {
        state.withLock { state in
            guard case .success(let addresses)? = state.cache[host]?.result else { return nil }
            return addresses
        }
    }

    /// The addresses of `host` (lowercased): from the cache while its answer lasts, else looked up, once for
    /// every row that asks meanwhile.
    func resolve(_ host: String) async -> Result<[String], DNSFailure> {
        let host = host.lowercased()
        enum Step {
            case done(Result<[String], DNSFailure>)
            case wait
            case lookUp
        }
        let step: Step = state.withLock { state in
            if let entry = state.cache[host], entry.expires > Date() { return .done(entry.result) }
            if state.waiting[host] != nil { return .wait }
            state.waiting[host] = []
            return .lookUp
        }
        switch step {
        case .done(let result):
            return result
        case .wait:
            return await withCheckedContinuation { continuation in
                let answered: Result<[String], DNSFailure>? = state.withLock { state in
                    // The lookup may have ended between the two locks.
                    if state.waiting[host] == nil { return state.cache[host]?.result }
                    state.waiting[host, default: []].append(continuation)
                    return nil
                }
                if let answered { continuation.resume(returning: answered) }
            }
        case .lookUp:
            await slots.acquire()
            let (result, seconds) = await lookUp(host)
            await slots.release()
            let waiters = state.withLock { state in
                state.lookups += 1
                if state.cache.count >= Self.maximumEntries { Self.prune(&state.cache) }
                state.cache[host] = Entry(result: result, expires: Date().addingTimeInterval(TimeInterval(seconds)))
                return state.waiting.removeValue(forKey: host) ?? []
            }
            for waiter in waiters { waiter.resume(returning: result) }
            return result
        }
    }

    /// Hosts remembered at most: a run over millions of hosts keeps the recent ones (~100 bytes each).
    static let maximumEntries = 200_000

    /// Drops the expired entries, then, if that is not enough, half of the others.
    private static func prune(_ cache: inout [String: Entry]) {
        let now = Date()
        cache = cache.filter { $0.value.expires > now }
        if cache.count >= maximumEntries / 2 {
            for key in cache.keys.prefix(cache.count / 2) { cache[key] = nil }
        }
    }

    /// One lookup on a thread of its own: the addresses and how long to keep them.
    private func lookUp(_ host: String) async -> (Result<[String], DNSFailure>, Int) {
        let client = client
        return await withCheckedContinuation { continuation in
            let thread = Thread {
                let outcome: (Result<[String], DNSFailure>, Int)
                if let client {
                    do throws(DNSFailure) {
                        let (addresses, ttl) = try client.lookup(host)
                        outcome = (.success(addresses), min(max(ttl, Self.minimumSeconds), Self.maximumSeconds))
                    } catch {
                        outcome = (.failure(error), Self.negativeSeconds)
                    }
                } else {
                    let result = Self.systemLookup(host)
                    outcome = (result, (try? result.get()) == nil ? Self.negativeSeconds : Self.systemSeconds)
                }
                continuation.resume(returning: outcome)
            }
            thread.name = "webimage-dns"
            thread.start()
        }
    }

    /// `getaddrinfo`'s addresses of `host`, IPv4 first.
    static func systemLookup(_ host: String) -> Result<[String], DNSFailure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            return .failure(
                DNSFailure("cannot resolve '\(host.prefix(253))': \(String(cString: gai_strerror(status)))"))
        }
        defer { freeaddrinfo(first) }
        var v4: [String] = []
        var v6: [String] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let current = node {
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if let address = current.pointee.ai_addr,
                getnameinfo(
                    address, current.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0
            {
                let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if current.pointee.ai_family == AF_INET6 {
                    if !v6.contains(text) { v6.append(text) }
                } else if !v4.contains(text) {
                    v4.append(text)
                }
            }
            node = current.pointee.ai_next
        }
        return v4.isEmpty && v6.isEmpty
            ? .failure(DNSFailure("no address for '\(host.prefix(253))'")) : .success(v4 + v6)
    }
}
