import Foundation

/// Which addresses a downloader may connect to: the guard against server-side request forgery, where a
/// URL from someone else (a user's avatar link, a row of a dataset) points at `127.0.0.1`, a cloud
/// metadata service on `169.254.169.254` or a machine of the private network.
///
/// The policy judges the address curl is about to connect to (`CURLOPT_OPENSOCKETFUNCTION`), after the
/// name was resolved and for every redirect hop, so one check covers every spelling of an address
/// (`http://2130706433/`, `http://0x7f.1/`, `http://[::ffff:127.0.0.1]/`), every redirect and a name
/// whose DNS answer changes between two lookups. A refused connection is never opened: nothing is sent,
/// and the download fails with `destinationNotAllowed` naming the address. A name with several addresses
/// goes on to the next one; the download fails only when no permitted address was left to try.
///
/// ```swift
/// var config = ImageDownloaderConfig.default
/// config.destinationPolicy = .publicOnly.allowing(["10.1.0.0/16"]).denying(["10.1.2.0/24"])
/// ```
///
/// How an address is judged, first match wins:
/// 1. A network of `denying(_:)` refuses it: denying wins over everything.
/// 2. A network of `allowing(_:)` permits it, even one `publicOnly` refuses (`publicOnly.allowing(["::1/128"])`
///    reaches the local machine over IPv6 and nothing else private).
/// 3. The base: `allowAll` permits it; `publicOnly` permits it when it is public (`isPublic(_:)`).
///
/// An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is judged as its IPv4 address throughout. A NAT64
/// (`64:ff9b::/96`) or 6to4 (`2002::/16`) address is matched against the lists both as itself and as
/// the IPv4 address it embeds, and `publicOnly` judges it by that IPv4 address.
///
/// A network string that is not CIDR notation (see `isValidNetwork(_:)`) is kept in `invalidNetworks`,
/// and every download of a downloader with such a policy fails at once with `invalidDownloadOperation`
/// naming it, with nothing sent: a typo never quietly widens or narrows the policy.
///
/// With a proxy (curl reads `http_proxy`, `https_proxy` and `all_proxy` from the environment), curl
/// connects to the proxy, not to the image's host: the policy then judges the proxy's address (so
/// `publicOnly` refuses a proxy on the private network unless `allowing` names it), and where the proxy
/// connects is up to the proxy. An egress proxy that refuses private destinations is the other way to
/// enforce this. `file:` URLs (when `allowedProtocols` has `file`) connect to nothing and are not judged.
public struct DestinationPolicy: Sendable, Hashable, CustomStringConvertible {
    /// Whether addresses outside `allowed` must be public.
    private let publicOnlyBase: Bool
    private var allowed: [IPNetwork] = []
    private var denied: [IPNetwork] = []
    /// The strings given to `allowing(_:)` or `denying(_:)` that are not CIDR notation.
    public private(set) var invalidNetworks: [String] = []

    /// Every address, as SDWebImage (and curl) connect: the library's default.
    public static let allowAll = DestinationPolicy(publicOnlyBase: false)

    /// Public addresses only: refuses loopback, private, link-local, shared (CGNAT), multicast, reserved and
    /// documentation addresses (the list is `isPublic(_:)`'s). `webimage bulk`'s default.
    public static let publicOnly = DestinationPolicy(publicOnlyBase: true)

    private init(publicOnlyBase: Bool) {
        self.publicOnlyBase = publicOnlyBase
    }

    /// This policy, also permitting the addresses of `networks` (CIDR notation, e.g.
    /// `["10.1.0.0/16", "::1/128"]`; a bare address is a network of one), unless a `denying` network
    /// refuses them. Adds to earlier calls.
    public func allowing(_ networks: [String]) -> DestinationPolicy {
        var policy = self
        for text in networks {
            if let network = IPNetwork(text) {
                policy.allowed.append(network)
            } else {
                policy.invalidNetworks.append(text)
            }
        }
        return policy
    }

    /// This policy, refusing the addresses of `networks` (CIDR notation) whatever else permits them. Adds
    /// to earlier calls.
    public func denying(_ networks: [String]) -> DestinationPolicy {
        var policy = self
        for text in networks {
            if let network = IPNetwork(text) {
                policy.denied.append(network)
            } else {
                policy.invalidNetworks.append(text)
            }
        }
        return policy
    }

    /// Whether `text` is a network `allowing(_:)` and `denying(_:)` accept: a numeric IPv4 (dotted quad) or
    /// IPv6 address, optionally followed by `/` and a prefix length within 0…32 or 0…128, with no address
    /// bits set past the prefix (`10.0.0.0/8`, not `10.1.2.3/8`).
    public static func isValidNetwork(_ text: String) -> Bool {
        IPNetwork(text) != nil
    }

    /// Whether this policy permits connecting to `address`, a numeric IPv4 (dotted quad) or IPv6 address.
    /// Text that is not such an address (a name, `127.1`) is refused.
    public func allows(_ address: String) -> Bool {
        IPAddress(address).map(allows) ?? false
    }

    /// Whether this policy permits every address: `allowAll` with nothing denied (what it allows adds
    /// nothing). Such a downloader neither installs the connection check nor keeps off the shared HTTP
    /// cache.
    public var allowsEverything: Bool {
        !publicOnlyBase && denied.isEmpty && invalidNetworks.isEmpty
    }

    /// "allowAll", "publicOnly", "publicOnly allowing 127.0.0.0/8 denying 10.0.0.0/8".
    public var description: String {
        var text = publicOnlyBase ? "publicOnly" : "allowAll"
        if !allowed.isEmpty { text += " allowing " + allowed.map(\.description).joined(separator: ", ") }
        if !denied.isEmpty { text += " denying " + denied.map(\.description).joined(separator: ", ") }
        if !invalidNetworks.isEmpty { text += " invalid " + invalidNetworks.joined(separator: ", ") }
        return text
    }

    /// The error of a download refused because the policy holds `network`, which is not CIDR notation.
    package static func invalidNetworkError(_ network: String, url: URL?) -> TransportError {
        TransportError(
            .setupFailed,
            "the destination policy's network \"\(network)\" is not CIDR notation (such as 10.0.0.0/8 or "
                + "::1/128); nothing was sent", url: url)
    }

    func allows(_ address: IPAddress) -> Bool {
        // The forms matched against the lists: a mapped address is its IPv4 address only; NAT64 and 6to4
        // are themselves and the IPv4 address they carry.
        let forms: [IPAddress]
        if address.isIPv4Mapped, let v4 = address.embeddedIPv4 {
            forms = [v4]
        } else {
            forms = [address] + (address.embeddedIPv4.map { [$0] } ?? [])
        }
        if forms.contains(where: { form in denied.contains { $0.contains(form) } }) { return false }
        if forms.contains(where: { form in allowed.contains { $0.contains(form) } }) { return true }
        return !publicOnlyBase || Self.isPublic(address)
    }

    // MARK: Public addresses

    /// Whether `address` (a numeric IPv4 or IPv6 address) is public, as `publicOnly` judges it; false for
    /// text that is not such an address.
    ///
    /// Not public: IPv4 "this network" 0/8, private 10/8, 172.16/12 and 192.168/16, shared (CGNAT)
    /// 100.64/10, loopback 127/8, link-local 169.254/16, IETF protocol assignments 192.0.0/24, documentation
    /// 192.0.2/24, 198.51.100/24 and 203.0.113/24, the old 6to4 relay anycast 192.88.99/24, benchmarking
    /// 198.18/15, multicast 224/4, reserved 240/4 and broadcast 255.255.255.255. IPv6 unspecified `::` and
    /// loopback `::1` (with the rest of the deprecated IPv4-compatible `::/96`), IPv4-translated
    /// `::ffff:0:0:0/96`, NAT64 for local use `64:ff9b:1::/48`, discard-only `100::/64`, documentation
    /// `2001:db8::/32` and `3fff::/20`, unique-local `fc00::/7`, link-local `fe80::/10`, the old
    /// site-local `fec0::/10` and multicast `ff00::/8`. An IPv4-mapped (`::ffff:0:0/96`), NAT64
    /// (`64:ff9b::/96`) or 6to4 (`2002::/16`) address is public when the IPv4 address it carries is.
    public static func isPublic(_ address: String) -> Bool {
        IPAddress(address).map(isPublic) ?? false
    }

    static func isPublic(_ address: IPAddress) -> Bool {
        if let v4 = address.embeddedIPv4 { return isPublic(v4) }
        let reserved = address.family == .v4 ? nonPublicV4 : nonPublicV6
        return !reserved.contains { $0.contains(address) }
    }

    private static let nonPublicV4: [IPNetwork] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
        "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    ].compactMap(IPNetwork.init)

    private static let nonPublicV6: [IPNetwork] = [
        "::/96", "::ffff:0:0:0/96", "64:ff9b:1::/48", "100::/64", "2001:db8::/32", "3fff::/20", "fc00::/7",
        "fe80::/10", "fec0::/10", "ff00::/8",
    ].compactMap(IPNetwork.init)
}
