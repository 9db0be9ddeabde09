import CCurl
import Foundation

/// Process-wide libcurl set-up and the one place where curl's result codes become typed errors.
package enum CurlRuntime {
    /// `curl_global_init` is not thread-safe and must run once before any other curl call; a `static let`
    /// initializer runs exactly once, under Swift's own lock. SIGPIPE is ignored process-wide because a
    /// peer closing a socket mid-write would otherwise kill the process (curl's `NOSIGNAL` covers only
    /// its own timeouts).
    package static let initialized: Bool = {
        wi_ignore_sigpipe()
        return curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
    }()

    /// libcurl's version as the running library reports it, e.g. "7.88.1"; "?" when it reports none.
    package static var libraryVersion: String {
        guard let info = wi_curl_version_info(), let version = info.pointee.version else { return "?" }
        return String(cString: version)
    }

    /// The TLS library libcurl runs on, e.g. "OpenSSL/3.0.11"; "none" for a libcurl without TLS.
    package static var tlsLibraryVersion: String {
        guard let info = wi_curl_version_info(), let ssl = info.pointee.ssl_version else { return "none" }
        return String(cString: ssl)
    }

    /// Throws unless libcurl initialised.
    package static func ensureInitialized() throws(TransportError) {
        guard initialized else { throw TransportError(.failed, "curl_global_init failed") }
    }

    /// Checks the result of a `curl_easy_setopt` shim: a failing option is a programming or build error
    /// (an option this libcurl lacks), reported as invalidDownloadOperation rather than ignored.
    package static func check(_ code: CURLcode, _ what: @autoclosure () -> String) throws(TransportError) {
        guard code != CURLE_OK else { return }
        let text = curl_easy_strerror(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
        throw TransportError(
            .setupFailed, "curl rejected \(what()): \(text)", curlCode: Int(code.rawValue))
    }

    /// Checks a multi-handle call: anything but `CURLM_OK` becomes a `transport` error naming the call and
    /// curl's text for the code.
    package static func checkMulti(_ code: CURLMcode, _ what: @autoclosure () -> String) throws(TransportError) {
        guard code != CURLM_OK else { return }
        throw multiError(code, what())
    }

    /// The error for a failed multi-handle call.
    package static func multiError(_ code: CURLMcode, _ what: String) -> TransportError {
        let text = curl_multi_strerror(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
        return TransportError(.failed, "\(what) failed: \(text)", curlCode: Int(code.rawValue))
    }

    /// Checks a share-handle call: anything but `CURLSHE_OK` becomes a `transport` error.
    package static func checkShare(_ code: CURLSHcode, _ what: @autoclosure () -> String) throws(TransportError) {
        guard code != CURLSHE_OK else { return }
        let text = curl_share_strerror(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
        throw TransportError(.failed, "\(what()) failed: \(text)", curlCode: Int(code.rawValue))
    }

    /// Turns a failed transfer's `CURLcode` and error-buffer text into a typed error.
    package static func error(for code: CURLcode, buffer: String, url: URL?) -> TransportError {
        let kind: TransportError.Kind
        switch code {
        case CURLE_OPERATION_TIMEDOUT: kind = .timedOut
        case CURLE_COULDNT_CONNECT: kind = .cannotConnect
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: kind = .cannotResolveHost
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_CRL_BADFILE, CURLE_SSL_INVALIDCERTSTATUS:
            kind = .sslFailure
        case CURLE_TOO_MANY_REDIRECTS: kind = .tooManyRedirects
        case CURLE_FILESIZE_EXCEEDED: kind = .responseTooLarge
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2,
            CURLE_HTTP2_STREAM, CURLE_HTTP3:
            kind = .connectionLost
        case CURLE_UNSUPPORTED_PROTOCOL: kind = .unsupportedProtocol
        case CURLE_BAD_CONTENT_ENCODING: kind = .badContentEncoding
        case CURLE_URL_MALFORMAT: kind = .invalidURL
        default: kind = .failed
        }
        let summary = curl_easy_strerror(code).map { String(cString: $0) } ?? "curl error"
        let message = buffer.isEmpty ? summary : "\(summary): \(buffer)"
        return TransportError(kind, message, url: url, curlCode: Int(code.rawValue))
    }
}
