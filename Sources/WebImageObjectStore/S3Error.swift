/// A failed object-store request: what kind of failure, the store's own error code and message when it
/// sent one (S3's XML `<Error>`), and the request it answered.
public struct S3Error: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as far as a caller decides what to do next.
    public enum Kind: String, Sendable {
        /// The variables or the address are incomplete or wrong (no credentials, no bucket).
        case configuration
        /// The store refused the credentials or the signature (403, `InvalidAccessKeyId`,
        /// `SignatureDoesNotMatch`, `AccessDenied`, `ExpiredToken`…): no retry fixes it.
        case credentials
        /// The bucket or the object does not exist (404).
        case notFound
        /// Any other refusal of the request (4xx): no retry fixes it.
        case rejected
        /// The store failed (5xx) on every attempt.
        case server
        /// The connection failed (refused, reset, timed out, TLS) on every attempt.
        case network
        /// The store's answer cannot be understood (a missing field, a response over the size bound, a
        /// listing that does not end).
        case badResponse
        /// The object is larger than ``S3Configuration/maximumDownloadBytes``: no retry fixes it.
        case tooLarge
        /// A local file could not be read or written.
        case file
    }

    /// What went wrong.
    public let kind: Kind
    /// The sentence that says it, with the store's code and message.
    public let message: String
    /// The HTTP status, when the store answered.
    public let status: Int?
    /// S3's error code (`NoSuchBucket`, `InvalidAccessKeyId`…), when it sent one.
    public let code: String?

    /// An error of `kind`.
    public init(_ kind: Kind, _ message: String, status: Int? = nil, code: String? = nil) {
        self.kind = kind
        self.message = message
        self.status = status
        self.code = code
    }

    /// Whether a later run cannot succeed without a change of configuration (the command exits with 2):
    /// credentials, configuration, missing buckets and other refusals.
    public var isPermanent: Bool {
        switch kind {
        case .configuration, .credentials, .notFound, .rejected, .tooLarge: true
        case .server, .network, .badResponse, .file: false
        }
    }

    /// The message.
    public var description: String { message }

    /// The error for a response with a status outside 2xx: its `<Error><Code>` and `<Message>` when the
    /// body has them, made printable (``printable(_:limit:)``): the store's words reach a terminal.
    static func response(status: Int, body: [UInt8], request: String) -> S3Error {
        let code = S3XML.first("Code", in: body)
        let detail = S3XML.first("Message", in: body)
        let said = [code, detail].compactMap { $0 }.map { printable($0) }.joined(separator: ": ")
        let what = "\(request) failed with HTTP \(status)" + (said.isEmpty ? "" : " (\(said))")
        let credentialCodes: Set<String> = [
            "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "ExpiredToken",
            "TokenRefreshRequired", "InvalidClientTokenId", "AuthorizationHeaderMalformed", "MissingSecurityHeader",
        ]
        let kind: Kind
        if let code, credentialCodes.contains(code) {
            kind = .credentials
        } else {
            switch status {
            case 401, 403: kind = .credentials
            case 404: kind = .notFound
            case 500...: kind = .server
            default: kind = .rejected
            }
        }
        let hint =
            kind == .credentials
            ? "; check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and AWS_REGION" : ""
        return S3Error(kind, what + hint, status: status, code: code.map { printable($0) })
    }

    /// `text` as it may be printed on a terminal: control characters (C0, DEL, C1) and the bidirectional
    /// overrides as escapes (`\r`, `\n`, `\t`, `\u{1B}`), and at most `limit` characters, so what a store
    /// or a user wrote can neither move the cursor, recolour, ring nor flood the terminal.
    public static func printable(_ text: some StringProtocol, limit: Int = 512) -> String {
        var result = ""
        var characters = 0
        for scalar in text.unicodeScalars {
            guard characters < limit else {
                result += "…"
                break
            }
            characters += 1
            switch scalar.value {
            case 0x0A: result += "\\n"
            case 0x0D: result += "\\r"
            case 0x09: result += "\\t"
            case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
