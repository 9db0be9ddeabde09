import Crypto
import Foundation
import WebImageTransport

/// One request to the store, signed by libcurl (AWS Signature Version 4) and run to its end on the
/// calling thread by the transport's `BlockingTransfer`; this file says what S3 needs of it and puts the
/// transport's errors in the store's words.
///
/// The body goes as curl's post fields (whatever the method) with its SHA-256 in `x-amz-content-sha256`:
/// curl 7.88 hashes the post fields into the canonical request, and S3 wants the same hash in that
/// header; a newer curl reads the header. So the body is in memory: at most one part
/// (``S3Configuration/partSize``).
enum S3Transfer {
    /// Where the answer's body goes.
    enum Sink {
        /// Kept in memory, up to the configuration's ``S3Configuration/maximumResponseBytes``.
        case memory
        /// A 2xx answer's body is written to the file; an error's is kept in memory.
        case file(FileHandle)
    }

    /// The store's answer.
    struct Response {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]

        /// The last value of the header field `name` (case-insensitive).
        func header(_ name: String) -> String? {
            headers.values(for: name).last
        }
    }

    private static let emptyHash = HexDigits.lowercase(SHA256.hash(data: Data()))

    /// Runs `method` on `url` with `body` and `extraHeaders`, signed with `configuration`'s credentials.
    ///
    /// - Throws: ``S3Error/Kind/network`` for a transfer curl could not finish, with curl's message;
    ///   ``S3Error/Kind/badResponse`` for an answer in memory over the size bound;
    ///   ``S3Error/Kind/tooLarge`` for a file's over ``S3Configuration/maximumDownloadBytes``;
    ///   ``S3Error/Kind/file`` when the sink's file cannot be written.
    static func perform(
        method: String, url: String, body: [UInt8]?, extraHeaders: HTTPHeaders = HTTPHeaders(), sink: Sink = .memory,
        configuration: S3Configuration
    ) throws(S3Error) -> Response {
        guard let address = URL(string: url) else {
            throw S3Error(.configuration, "\(method) \(redacted(url)): not a usable URL")
        }
        var request = BlockingTransfer.Request(method: method, url: address)
        var headers = extraHeaders
        let payload = body ?? []
        let hash =
            body == nil || payload.isEmpty
            ? emptyHash : HexDigits.lowercase(SHA256.hash(data: payload))
        headers.add(name: "x-amz-content-sha256", value: hash)
        if let token = configuration.sessionToken { headers.add(name: "x-amz-security-token", value: token) }
        // No `Expect:` field to turn off curl's `Expect: 100-continue` (sent for bodies over 1 MiB): curl
        // 7.88 signs every header field it is given, the empty one too, and then does not send it, so the
        // store's signature would differ.
        request.headers = headers
        request.body = body
        request.maximumResponseSize = configuration.maximumResponseBytes
        if case .file(let handle) = sink {
            request.sink = .file(handle, maximumSize: configuration.maximumDownloadBytes)
        }
        request.totalTimeout = configuration.requestTimeout
        request.connectTimeout = configuration.connectTimeout
        request.lowSpeedLimit = configuration.lowSpeedLimit
        request.stallTimeout = configuration.stallTimeout
        // The key goes as written: without this curl removes `.` and `..` segments, and `a/../b` would
        // read (and sign) another object, or another bucket.
        request.keepsDotSegments = true
        request.signature = BlockingTransfer.AWSSignature(
            provider: "aws:amz:\(configuration.region):s3", accessKeyID: configuration.accessKeyID,
            secretAccessKey: configuration.secretAccessKey)

        let transfer: BlockingTransfer
        do {
            transfer = try BlockingTransfer(request)
        } catch {
            throw S3Error(.network, error.message)
        }
        do {
            let response = try transfer.perform()
            return Response(status: response.statusCode, headers: response.headers, body: response.body)
        } catch {
            throw Self.error(error, method: method, url: url, sink: sink, configuration: configuration)
        }
    }

    /// The transport's error for a request that was sent, in the store's words.
    private static func error(
        _ error: TransportError, method: String, url: String, sink: Sink, configuration: S3Configuration
    ) -> S3Error {
        switch error.kind {
        case .responseTooLarge:
            let status = error.response?.statusCode ?? 0
            if case .file = sink, (200..<300).contains(status) {
                let limit = configuration.maximumDownloadBytes
                let announced = error.response?.headers.values(for: "Content-Length").last.flatMap { Int64($0) } ?? 0
                return S3Error(
                    .tooLarge,
                    "the object is larger than the \(limit) bytes a download may have "
                        + (announced > limit ? "(Content-Length: \(announced))" : "(it went on past them)"))
            }
            return S3Error(
                .badResponse, "the store's answer is larger than \(configuration.maximumResponseBytes) bytes")
        case .aborted:
            let reason = error.reason.map { $0.localizedDescription } ?? error.message
            return S3Error(.file, "cannot write the downloaded object: \(reason)")
        default:
            return S3Error(.network, "\(method) \(redacted(url)): \(error.message)")
        }
    }

    /// The URL without its query (a continuation token, an upload id), for messages.
    static func redacted(_ url: String) -> String {
        String(url.prefix { $0 != "?" })
    }
}
