import CCurl
import Foundation

/// The destination policy, applied where curl opens a connection's socket (`CURLOPT_OPENSOCKETFUNCTION`).
///
/// curl calls the callback with the resolved address of every connection it tries: each address of a
/// name in turn (both families when it races them), on every hop of a redirect chain, and the proxy's
/// address when a proxy is used. Judging the binary address there, rather than the URL's host, covers
/// every spelling of a numeric host, every redirect and a DNS answer that changed since an earlier check.
/// Returning `CURL_SOCKET_BAD` makes curl give up on that address (`CURLE_COULDNT_CONNECT` when none is
/// left) without a socket, so nothing is sent to it. A connection reused from the transport's pool was
/// opened under the same policy: each downloader has its own transport, and so its own connections.
extension CurlTransfer {
    /// What the policy decided about the current hop's connection attempts (reset by `applyHop()`), so that
    /// a `CURLE_COULDNT_CONNECT` is reported as the policy's refusal only when it was one.
    struct DestinationAttempts {
        /// The addresses refused, in the order curl tried them.
        var refused: [IPAddress] = []
        /// Sockets opened for permitted addresses.
        var permitted = 0
    }

    /// Routes connections through the policy, unless it allows everything (then curl opens sockets itself,
    /// as without a policy). `userdata` is this transfer, unretained (see `configure()`).
    func installDestinationCheck(userdata: UnsafeMutableRawPointer) throws(TransportError) {
        let policy = request.destinationPolicy
        if let invalid = policy.invalidNetworks.first {
            throw DestinationPolicy.invalidNetworkError(invalid, url: request.url)
        }
        guard !policy.allowsEverything else { return }
        try CurlRuntime.check(wi_easy_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, userdata), "OPENSOCKETDATA")
        try CurlRuntime.check(
            wi_easy_setopt_opensocket_function(easy, curlOpenSocketCallback), "OPENSOCKETFUNCTION")
    }

    /// The socket for a connection to `address`, or `CURL_SOCKET_BAD` when the policy refuses it.
    /// Transport thread (curl calls it from `curl_multi_perform`).
    fileprivate func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        let target = address.pointee
        let ip = IPAddress(socketAddress: wi_curl_sockaddr_address(address), length: Int(target.addrlen))
        // An address that is neither IPv4 nor IPv6 (curl would only use another family for a Unix socket,
        // which this library never configures) is refused too: the policy cannot judge it.
        guard let ip, request.destinationPolicy.allows(ip) else {
            if let ip { destinations.refused.append(ip) }
            return CURL_SOCKET_BAD
        }
        destinations.permitted += 1
        // What curl does without the callback (curl sets non-blocking mode and its options afterwards),
        // plus close-on-exec so a child process of the application never inherits the connection.
        return socket(target.family, target.socktype | Int32(SOCK_CLOEXEC.rawValue), target.protocol)
    }

    /// Turns curl's `CURLE_COULDNT_CONNECT` into `destinationNotAllowed` when the policy refused every
    /// address curl tried on this hop; when some permitted address failed to connect as well, the error
    /// stays `cannotConnect` and its message names the refused ones too.
    func explainRefusedDestinations(in error: inout TransportError) {
        guard !destinations.refused.isEmpty else { return }
        var seen = Set<IPAddress>()
        let addresses = destinations.refused.filter { seen.insert($0).inserted }.map(\.description)
        let list = addresses.joined(separator: ", ")
        guard destinations.permitted == 0 else {
            error.message += " (the destination policy also refused \(list))"
            return
        }
        let noun = addresses.count == 1 ? "address" : "addresses"
        var message = "the destination policy (\(request.destinationPolicy)) refuses the \(noun) \(list)"
        if redirectsFollowed > 0 {
            let hops = redirectsFollowed == 1 ? "1 redirect" : "\(redirectsFollowed) redirects"
            message += " of \(currentURL.redactedString), reached after \(hops)"
        }
        error.kind = .destinationNotAllowed
        error.message = message + "; nothing was sent"
    }
}

// C entry point. `clientp` is the unretained CurlTransfer set in `installDestinationCheck`: the transport
// holds the transfer while its handle is in the multi handle, the only time curl opens sockets for it.
private let curlOpenSocketCallback: wi_opensocket_callback = { clientp, _, address in
    guard let clientp else { return CURL_SOCKET_BAD }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(clientp).takeUnretainedValue()
    return transfer.openSocket(address)
}
