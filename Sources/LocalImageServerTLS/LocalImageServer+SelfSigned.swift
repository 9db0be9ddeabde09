import LocalImageServer
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOSSL

extension LocalImageServer.TLSMode {
    /// HTTPS with a fresh self-signed certificate for `127.0.0.1` and `localhost`, made with the `openssl`
    /// command at ``LocalImageServer/start()``. A client that verifies certificates against the system trust
    /// store rejects it; one that trusts ``LocalImageServer/certificateURL`` as a CA, or does not verify,
    /// accepts it. ALPN offers `http/1.1` only, so every client speaks HTTP/1.1.
    public static let selfSigned = Self(security: SelfSignedTLS(offersHTTP2: false))

    /// HTTPS as ``selfSigned``, with ALPN offering `h2` first and `http/1.1` second: a client that asks for
    /// HTTP/2 (curl over TLS does by default) gets it, with every stream of a connection sharing that
    /// connection's id; a client that offers only HTTP/1.1, or no ALPN, falls back.
    public static let selfSignedHTTP2 = Self(security: SelfSignedTLS(offersHTTP2: true))
}

/// The server's TLS: swift-nio-ssl with the self-signed identity, and HTTP/2 through swift-nio-http2 when
/// offered.
struct SelfSignedTLS: LocalServerSecurity {
    let offersHTTP2: Bool

    var name: String { offersHTTP2 ? "selfSignedHTTP2" : "selfSigned" }

    func connections(identity: SelfSignedIdentity) throws -> any LocalServerConnectionSecurity {
        let certificates = try NIOSSLCertificate.fromPEMFile(identity.certificateURL.path)
        let key = try NIOSSLPrivateKey(file: identity.keyURL.path, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.applicationProtocols = offersHTTP2 ? ["h2", "http/1.1"] : ["http/1.1"]
        return TLSConnections(context: try NIOSSLContext(configuration: configuration), offersHTTP2: offersHTTP2)
    }
}

/// Each accepted connection: the TLS handler, then HTTP/1.1, or HTTP/2 when the client chose `h2`.
struct TLSConnections: LocalServerConnectionSecurity {
    let context: NIOSSLContext
    let offersHTTP2: Bool

    func configure(_ channel: Channel, core: ServerCore, connectionID: Int) -> EventLoopFuture<Void> {
        do {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        guard offersHTTP2 else {
            return channel.eventLoop.makeCompletedFuture {
                try LocalImageServer.configureHTTP1(channel, core: core, connectionID: connectionID)
            }
        }
        return channel.configureHTTP2SecureUpgrade(
            h2ChannelConfigurator: { channel in
                Self.configureHTTP2(channel, core: core, connectionID: connectionID)
            },
            http1ChannelConfigurator: { channel in
                channel.eventLoop.makeCompletedFuture {
                    try LocalImageServer.configureHTTP1(channel, core: core, connectionID: connectionID)
                }
            })
    }

    /// The connection gets the HTTP/2 frame handler and a stream multiplexer; every stream the client
    /// opens gets the HTTP/2 → HTTP/1 codec and its own `ConnectionHandler`, so each route behaves on a
    /// stream as it does on an HTTP/1 connection.
    private static func configureHTTP2(_ channel: Channel, core: ServerCore, connectionID: Int) -> EventLoopFuture<
        Void
    > {
        channel.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: .init(), streamConfiguration: .init(),
            inboundStreamInitializer: { stream in
                stream.eventLoop.makeCompletedFuture {
                    let pipeline = stream.pipeline.syncOperations
                    try pipeline.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                    try pipeline.addHandler(
                        ConnectionHandler(core: core, connectionID: connectionID, carrier: .http2Stream))
                }
            }
        ).flatMapThrowing { _ in
            try channel.pipeline.syncOperations.addHandler(HTTP2ConnectionCloseCounter(core: core))
        }
    }
}

/// Counts an HTTP/2 connection's close in `ServerCore` (its streams' handlers never do).
final class HTTP2ConnectionCloseCounter: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    private let core: ServerCore
    private var counted = false

    init(core: ServerCore) {
        self.core = core
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !counted {
            counted = true
            core.connectionClosed()
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A protocol error on the connection ends it (the HTTP/2 handler has sent GOAWAY where it could).
        context.close(promise: nil)
    }
}
