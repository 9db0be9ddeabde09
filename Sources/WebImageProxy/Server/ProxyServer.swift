import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
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
    /// How long a connection may go without sending a whole request part (imgproxy's
    /// `IMGPROXY_READ_REQUEST_TIMEOUT`): a client that connects and sends a partial request head, or
    /// nothing, is disconnected after it. It is Hummingbird's idle timeout, so it also closes a kept-alive
    /// connection idle that long between requests, and each part of a request body restarts it (a body
    /// trickled in parts is not bounded as a whole, as Go's `ReadTimeout` bounds it). A request being
    /// answered is never cut by it. nil (no limit) by default.
    public var readTimeout: Duration?
    /// The most connections open at once (imgproxy's `IMGPROXY_MAX_CLIENTS`); past it the listener stops
    /// accepting, so further connections wait in the system's listen queue (256) until one closes, as
    /// behind imgproxy's `netutil.LimitListener`. 0 (no limit) by default.
    public var maximumConnections = 0
    /// Where the metrics get a listener of their own (imgproxy's `IMGPROXY_PROMETHEUS_BIND`), answering
    /// every `GET` path with them as imgproxy's does; give the proxy `servesMetrics` false so the main
    /// port does not answer `/metrics` too. nil (none) by default.
    public var metricsAddress: (host: String, port: Int)?
    /// More services run in the server's group, started before the listener and stopped after it has
    /// drained (a tracing exporter, so the last requests' spans are sent). None by default.
    public var services: [any Service] = []

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
        let (metricsListening, metricsListened) = AsyncStream<Void>.makeStream()
        var applicationConfiguration = ApplicationConfiguration(
            address: .hostname(host, port: port), serverName: "webimage")
        if maximumConnections > 0 {
            applicationConfiguration.availableConnectionsDelegate = MaximumAvailableConnections(
                maximumConnections, logger: logger)
        }
        let application = Application(
            responder: responder,
            server: .http1(configuration: HTTP1Channel.Configuration(idleTimeout: readTimeout.map(Self.timeAmount))),
            configuration: applicationConfiguration,
            onServerRunning: { channel in
                listening.withLock { $0 = true }
                // Reported once every listener listens: the metrics' too, when they have one.
                for await _ in metricsListening { break }
                await onListening(channel.localAddress?.port ?? port)
            },
            logger: logger)
        var services: [any Service] = self.services + [application]
        if let metricsAddress {
            services.append(
                MetricsListener(
                    proxy: proxy, host: metricsAddress.host, port: metricsAddress.port, logger: logger,
                    onListening: { metricsListened.finish() }))
        } else {
            metricsListened.finish()
        }
        // The group shuts services down in reverse order: the drain first, the listeners once it returned.
        services.append(DrainService(proxy: proxy, delay: drainDelay, logger: logger))
        var configuration = ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
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

extension ProxyServer {
    /// `duration` as NIO's nanoseconds, held at a day's (the longest wait `webimage serve` takes).
    static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        let held = min(max(seconds, 0), 86_400)
        return .nanoseconds(held * 1_000_000_000 + (held < 86_400 ? attoseconds / 1_000_000_000 : 0))
    }
}

/// The metrics on a listener of their own (`ProxyServer.metricsAddress`): every `GET` is answered with
/// them, as imgproxy's Prometheus server answers every path.
private struct MetricsListener: Service {
    let proxy: ImageProxy
    let host: String
    let port: Int
    let logger: Logger
    /// Called once the listener is open.
    let onListening: @Sendable () -> Void

    func run() async throws {
        let proxy = self.proxy
        let responder = CallbackResponder<BasicRequestContext> { _, _ in
            Response(proxy.metricsResponse())
        }
        let listening = Lock(false)
        let application = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "webimage"),
            onServerRunning: { [onListening] _ in
                listening.withLock { $0 = true }
                onListening()
            }, logger: logger)
        do {
            try await application.run()
        } catch let error as IOError where !listening.withLock({ $0 }) {
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
