import Testing

@testable import WebImageTransport

/// `DestinationPolicy`'s judgement of an address, with no network: every non-public range, allow and deny
/// lists, CIDR notation. (The policy applied to real connections through the downloader: WebImageTests'
/// DestinationPolicyTests.)
@Suite(.timeLimit(.minutes(2))) struct DestinationPolicyTests {
    @Test func publicOnlyRefusesEveryNonPublicIPv4Range() {
        let refused = [
            "0.0.0.0", "0.255.255.255", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.255", "127.0.0.1",
            "127.255.255.254", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.1", "192.0.2.1",
            "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9", "224.0.0.1",
            "239.255.255.250", "240.0.0.1", "255.255.255.255",
        ]
        for address in refused {
            #expect(!DestinationPolicy.isPublic(address), "\(address)")
            #expect(!DestinationPolicy.publicOnly.allows(address), "\(address)")
            #expect(DestinationPolicy.allowAll.allows(address), "\(address)")
        }
        // Just outside each range.
        let allowed = [
            "1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255",
            "128.0.0.0", "169.253.255.255", "172.15.255.255", "172.32.0.0", "192.0.1.255", "192.0.3.0",
            "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0", "203.0.112.255", "223.255.255.255",
        ]
        for address in allowed {
            #expect(DestinationPolicy.isPublic(address), "\(address)")
            #expect(DestinationPolicy.publicOnly.allows(address), "\(address)")
        }
    }

    @Test func publicOnlyRefusesEveryNonPublicIPv6Range() {
        let refused = [
            "::", "::1", "fe80::1", "febf:ffff::1", "fc00::1", "fd12:3456::1", "ff02::1", "ff0e::1", "2001:db8::1",
            "2001:db8:ffff::1", "::127.0.0.1", "100::1", "fec0::1", "3fff::1",
        ]
        for address in refused {
            #expect(!DestinationPolicy.isPublic(address), "\(address)")
            #expect(!DestinationPolicy.publicOnly.allows(address), "\(address)")
        }
        for address in ["2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450::1", "fe00::1", "2001:db9::1"] {
            #expect(DestinationPolicy.isPublic(address), "\(address)")
            #expect(DestinationPolicy.publicOnly.allows(address), "\(address)")
        }
    }

    @Test func ipv4EmbeddedInIPv6IsJudgedAsItsIPv4Address() {
        // IPv4-mapped, NAT64 (64:ff9b::/96) and 6to4 (2002::/16, the IPv4 address in bits 16-47).
        for address in [
            "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.1.2.3", "::ffff:169.254.169.254", "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe", "64:ff9b::192.168.0.1", "2002:7f00:1::", "2002:a00:1::1", "2002:c0a8:101::5",
        ] {
            #expect(!DestinationPolicy.isPublic(address), "\(address)")
            #expect(!DestinationPolicy.publicOnly.allows(address), "\(address)")
        }
        for address in ["::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"] {
            #expect(DestinationPolicy.isPublic(address), "\(address)")
        }
        // The lists match the IPv4 address too: mapped is that address, NAT64 and 6to4 either form.
        let loopback = DestinationPolicy.publicOnly.allowing(["127.0.0.0/8"])
        #expect(loopback.allows("::ffff:127.0.0.1") && loopback.allows("64:ff9b::7f00:1"))
        #expect(!loopback.allows("::1"))
        let noTen = DestinationPolicy.allowAll.denying(["10.0.0.0/8"])
        for address in ["10.0.0.1", "::ffff:10.0.0.1", "64:ff9b::10.0.0.1", "2002:a00:1::"] {
            #expect(!noTen.allows(address), "\(address)")
        }
        #expect(noTen.allows("::ffff:11.0.0.1") && noTen.allows("127.0.0.1"))
        // A mapped network in IPv6 notation is the IPv4 network it covers.
        #expect(DestinationPolicy.publicOnly.allowing(["::ffff:127.0.0.0/104"]).allows("127.1.2.3"))
    }

    @Test func denyingWinsOverAllowingAndAllowingOverridesPublicOnly() {
        let policy = DestinationPolicy.publicOnly.allowing(["10.1.0.0/16", "::1/128"]).denying(["10.1.2.0/24"])
        #expect(policy.allows("10.1.0.5") && policy.allows("10.1.255.1") && policy.allows("::1"))
        #expect(!policy.allows("10.1.2.3"))  // denied inside an allowed network
        #expect(!policy.allows("10.2.0.1") && !policy.allows("127.0.0.1"))  // publicOnly's own refusals stay
        #expect(policy.allows("8.8.8.8"))
        // Order does not matter: denying first, allowing after, same answers.
        let reordered = DestinationPolicy.publicOnly.denying(["10.1.2.0/24"]).allowing(["10.1.0.0/16", "::1/128"])
        for address in ["10.1.0.5", "10.1.2.3", "::1", "10.2.0.1", "8.8.8.8"] {
            #expect(policy.allows(address) == reordered.allows(address), "\(address)")
        }
        let denyPublic = DestinationPolicy.allowAll.denying(["8.8.8.0/24"]).allowing(["8.8.8.8/32"])
        #expect(!denyPublic.allows("8.8.8.8") && denyPublic.allows("127.0.0.1"))
        // allowAll with allow lists still allows everything; denying anything does not.
        #expect(DestinationPolicy.allowAll.allowing(["10.0.0.0/8"]).allowsEverything)
        #expect(!DestinationPolicy.allowAll.denying(["10.0.0.0/8"]).allowsEverything)
        #expect(!DestinationPolicy.publicOnly.allowsEverything)
        // Not numeric addresses: refused.
        for text in ["localhost", "127.1", "2130706433", "0x7f.0.0.1", "", "fe80::1%lo"] {
            #expect(!DestinationPolicy.allowAll.allows(text) && !DestinationPolicy.isPublic(text), "\(text)")
        }
    }

    @Test func networksMustBeCIDRNotation() {
        for text in ["10.0.0.0/8", "0.0.0.0/0", "127.0.0.1", "127.0.0.1/32", "::1/128", "::/0", "fc00::/7", "::1"] {
            #expect(DestinationPolicy.isValidNetwork(text), "\(text)")
        }
        for text in [
            "", "10.0.0.0/", "10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/8/8", "10.1.2.3/8",
            "fc00::1/7", "127.1/8", "localhost", "10.0.0.0 /8", "10.0.0.0/ 8", "10.0.0.0/0x8", "fe80::/10%lo",
        ] {
            #expect(!DestinationPolicy.isValidNetwork(text), "\(text)")
        }
        let policy = DestinationPolicy.publicOnly.allowing(["127.0.0.0/8", "10.1.2.3/8"]).denying(["nope"])
        #expect(policy.invalidNetworks == ["10.1.2.3/8", "nope"])
        #expect(!policy.allowsEverything)
    }
}
