import Foundation
import NIOCore

extension LocalImageServer {
    /// Whether the server speaks plain HTTP or HTTPS: ``none`` here; `LocalImageServerTLS` adds
    /// `.selfSigned` (HTTPS with a fresh self-signed certificate for `127.0.0.1` and `localhost`, ALPN
    /// `http/1.1` only) and `.selfSignedHTTP2` (the same, offering `h2` first).
    public struct TLSMode: Sendable, Equatable {
        /// Plain HTTP.
        public static let none = TLSMode(security: nil)

        /// What makes the connections secure; nil for plain HTTP.
        package let security: (any LocalServerSecurity)?

        package init(security: (any LocalServerSecurity)?) {
            self.security = security
        }

        /// Whether the server speaks TLS at all.
        public var isTLS: Bool { security != nil }

        public static func == (lhs: TLSMode, rhs: TLSMode) -> Bool { lhs.security?.name == rhs.security?.name }
    }

    /// Errors from starting the server.
    public enum StartError: Error, CustomStringConvertible {
        /// `start()` was called after `shutdown()`; a server runs at most once.
        case alreadyShutDown

        /// A readable description.
        public var description: String {
            switch self {
            case .alreadyShutDown:
                "LocalImageServer.start() after shutdown()"
            }
        }
    }
}

/// How a server's connections are made secure (`LocalImageServerTLS`): the seam that keeps swift-nio-ssl
/// and swift-nio-http2 out of this module.
package protocol LocalServerSecurity: Sendable {
    /// A name telling modes apart (``LocalImageServer/TLSMode``'s equality).
    var name: String { get }
    /// What every connection of a server started with `identity`'s certificate shares.
    func connections(identity: SelfSignedIdentity) throws -> any LocalServerConnectionSecurity
}

/// Sets up each accepted connection of a running server.
package protocol LocalServerConnectionSecurity: Sendable {
    /// Adds the TLS handler to `channel`, then the HTTP pipeline for the protocol the client chose.
    func configure(_ channel: Channel, core: ServerCore, connectionID: Int) -> EventLoopFuture<Void>
}
