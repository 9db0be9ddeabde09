/// Addresses a caller resolved itself, with a DNS stage of its own: the transport connects to these
/// instead of asking the system resolver (curl's `CURLOPT_RESOLVE`, for each hop's host and port). The
/// destination policy still judges every address connected to.
///
/// `webimage bulk` resolves each row's host before its download, at most `--dns-concurrency` at once,
/// through the system resolver or a DNS server of the user's choice (`--resolver`).
public protocol HostAddressProviding: Sendable {
    /// The addresses of `host` (lowercased, without brackets), as IPv4 or IPv6 text; nil when this provider
    /// has none for it. Called on the transport's thread for every hop: it must answer from memory.
    func addresses(of host: String) -> [String]?

    /// Whether a hop to a host the provider has no addresses for fails with `cannotResolveHost`
    /// (naming the host, so the caller can resolve it and try again) rather than going to the system
    /// resolver: true when the caller's resolver is not the system's.
    var isExclusive: Bool { get }
}
