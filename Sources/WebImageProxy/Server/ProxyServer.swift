import Foundation
import HTTPTypes
import Hummingbird
import Locking
import Logging
import NIOCore
import ServiceLifecycle

/// `ImageProxy` behind a Hummingbird 2 HTTP/1.1 server, run as a swift-service-lifecycle `ServiceGroup`.
///
/// SIGTERM and SIGINT shut it down gracefully, in this order: `/health/ready` answers 503 at once
/// (`ImageProxy.beginDraining()`), the listener stays open for `drainDelay` so load balancers see that and
/// stop sending, then the listener closes and the requests in flight finish. Requests still running
/// `drainTimeout` after the listener closed are cancelled. `run()` then returns normally.
///
/// ```swift
/// let server = ProxyServer(proxy: ImageProxy(configuration: configuration), host: "127.0.0.1", port: 8080)
/// try await server.run { port in print("listening on \(port)") }
/// ```
///
/// The request path is handed to the proxy as it came, still percent-encoded: the signature covers
/// those exact bytes, and a router would split and normalise them.
public struct ProxyServer: Sendable {
    /// The engine answering every request.
    public let proxy: ImageProxy
    /// The address listened on.
    public let host: String
    /// The port listened on; 0 picks a free one (`run` reports it).
    public let port: Int
    /// How long requests in flight may take to finish once the listener closed. 30 seconds by default.
    public let drainTimeout: Duration
    /// How long after SIGTERM the listener keeps accepting, answering `/health/ready` with 503. 0 by default.
    public let drainDelay: Duration
    /// Where the server and the service group log.
    public let logger: Logger

    /// A server for `proxy` on `host`:`port`.
    public init(
        proxy: ImageProxy, host: String, port: Int, drainTimeout: Duration = .seconds(30), drainDelay: Duration = .zero,
        logger: Logger = Logger(label: "webimage.serve")
    ) {
        self.proxy = proxy
        self.host = host
        self.port = port
        self.drainTimeout = drainTimeout
        self.drainDelay = drainDelay
        self.logger = logger
    }

    /// Serves until SIGTERM or SIGINT (or until the task is cancelled); `onListening` gets the bound port
    /// once the listener is open.
    ///
    /// - Throws: ``ProxyServerError`` naming the address and port when the listener cannot be opened (the
    ///   port is taken, the address is not this machine's, the port needs privileges); otherwise what the
    ///   service group throws.
    /// The client hints' fields of `headers`, in imgproxy's order of preference.
    static func clientHints(_ headers: HTTPFields) -> ClientHints {
        func values(_ names: [String]) -> [String] {
            names.compactMap { HTTPField.Name($0).flatMap { headers[$0] } }
        }
        return ClientHints(dpr: values(["Sec-CH-DPR", "DPR"]), width: values(["Sec-CH-Width", "Width"]))
    }

    public func run(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let proxy = self.proxy
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            Response(await proxy.respond(to: ProxyRequest(request, path: request.uri.path)))
        }
        let port = self.port
        let listening = Lock(false)
        let application = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "webimage"),
            onServerRunning: { channel in
                listening.withLock { $0 = true }
                await onListening(channel.localAddress?.port ?? port)
            },
            logger: logger)
        // The group shuts services down in reverse order: the drain first, the listener once it returned.
        var configuration = ServiceGroupConfiguration(
            services: [application, DrainService(proxy: proxy, delay: drainDelay, logger: logger)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = drainDelay + drainTimeout
        do {
            try await ServiceGroup(configuration: configuration).run()
        } catch let error as IOError where !listening.withLock({ $0 }) {
            // NIO's text names the system call, not the address: "bind(descriptor:ptr:bytes:): Address
            // already in use".
            throw ProxyServerError(host: host, port: port, reason: String(cString: strerror(error.errnoCode)))
        }
    }
}

/// The proxy's listener could not be opened.
public struct ProxyServerError: Error, CustomStringConvertible {
    /// The address asked for.
    public let host: String
    /// The port asked for.
    public let port: Int
    /// The system's reason, such as "Address already in use".
    public let reason: String

    /// "cannot listen on 127.0.0.1:8080: Address already in use".
    public var description: String {
        let address = host.contains(":") ? "[\(host)]" : host
        return "cannot listen on \(address):\(port): \(reason)"
    }
}

/// Waits for the graceful shutdown, then marks the proxy draining and keeps the listener open `delay`.
private struct DrainService: Service {
    let proxy: ImageProxy
    let delay: Duration
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()  // throws only when cancelled: the group is going down anyway
        proxy.beginDraining()
        logger.info("draining", metadata: ["in-flight": "\(proxy.load.jobsInFlight)"])
        if delay > .zero { try? await Task.sleep(for: delay) }
    }
}
