import Foundation

/// Why a transfer failed or could not be made, as the transport knows it. The downloader turns it into
/// `ImageDownloaderError` at its boundary (`ImageDownloaderError.init(transportError:)`); nothing in the
/// transport knows the downloader's error.
package struct TransportError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    package enum Kind: Sendable, Hashable {
        /// curl refused an option, or a handle or header list could not be made: nothing was sent.
        case setupFailed
        /// The URL, or a redirect's `Location`, is not a usable URL.
        case invalidURL
        /// A failure of libcurl or of the transport thread without a more specific kind.
        case failed
        /// No byte arrived within the idle timeout, the connection was not made in time, or the total
        /// timeout ran out.
        case timedOut
        /// The connection was refused or the host could not be reached.
        case cannotConnect
        /// The host name did not resolve.
        case cannotResolveHost
        /// The TLS handshake failed or the certificate was not trusted.
        case sslFailure
        /// More redirects than the request allows.
        case tooManyRedirects
        /// The body passed the request's maximum size.
        case responseTooLarge
        /// The connection closed before the whole body arrived.
        case connectionLost
        /// The URL or a redirect names a scheme the request does not allow.
        case unsupportedProtocol
        /// The body could not be decoded from its `Content-Encoding`.
        case badContentEncoding
        /// The destination policy refused every address of the connection.
        case destinationNotAllowed
        /// The transfer was cancelled.
        case cancelled
        /// The delegate ended the transfer with its own error, `reason`.
        case aborted
    }

    /// What went wrong.
    package var kind: Kind
    /// A sentence for people.
    package var message: String
    /// The URL the transfer was for.
    package var url: URL?
    /// The head of the last response, when one arrived.
    package var response: TransferResponse?
    /// libcurl's result code, for failures curl reported.
    package var curlCode: Int?
    /// The delegate's error, for `.aborted`.
    package var reason: (any Error)?
    /// For `.cannotResolveHost` from an exclusive `HostAddressProviding`: the host it had no addresses
    /// for (a redirect's, say), so the caller can resolve it and try again.
    package var unresolvedHost: String?

    /// An error of `kind`.
    package init(
        _ kind: Kind, _ message: String, url: URL? = nil, response: TransferResponse? = nil, curlCode: Int? = nil
    ) {
        self.kind = kind
        self.message = message
        self.url = url
        self.response = response
        self.curlCode = curlCode
    }

    /// The delegate's `reason` for ending a transfer.
    package static func aborted(by reason: any Error, url: URL?) -> TransportError {
        var error = TransportError(.aborted, String(describing: reason), url: url)
        error.reason = reason
        return error
    }

    /// "timedOut: …".
    package var description: String { "\(kind): \(message)" }
}
