import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The proxy mounted in a Hummingbird application of your own, beside its routes: what a Swift server team
/// reaches for where imgproxy offers only a binary.
///
/// ```swift
/// var configuration = ImageProxyConfiguration()
/// configuration.signingKeys = [SigningKey(hexKey: key, hexSalt: salt)!]
/// let router = Router()
/// router.get("/hello") { _, _ in "hello" }
/// router.addProxyRoutes(ImageProxy(configuration: configuration), under: "/images")
/// // GET /images/{signature}/{options}/plain/{source} and /images/info/... answer as `webimage serve` does.
/// let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 8080)))
/// try await app.runService()
/// ```
///
/// Every `GET` and `HEAD` under the path goes to ``ImageProxy/respond(to:)`` with the path after the mount
/// point, still percent-encoded (the signature covers those bytes): image URLs and `/info` URLs, signed,
/// limited and cached as the proxy's configuration says. The proxy's operational paths (`/health`,
/// `/health/ready`, `/metrics` and `ImageProxyConfiguration.healthCheckPath`) are not answered under the
/// mount point (404): the application has its own health checks, and passes its own
/// `PrometheusCollectorRegistry` to ``ImageProxy/init(configuration:logger:accessLogger:metricsRegistry:)`` to
/// expose the proxy's metrics where it exposes the rest.
extension RouterMethods {
    /// Mounts `proxy` under `path` (such as `"/images"`); see the extension's comment for what it answers.
    @discardableResult
    public func addProxyRoutes(_ proxy: ImageProxy, under path: String) -> Self {
        let prefix = "/" + path.split(separator: "/").joined(separator: "/")
        let mount = prefix == "/" ? "" : prefix
        let operational: Set<String> = [
            "/health", "/health/ready", "/metrics", proxy.configuration.healthCheckPath ?? "/health",
        ]
        for method in [HTTPRequest.Method.get, .head] {
            on(RouterPath(mount + "/**"), method: method) { request, _ -> Response in
                let raw = request.uri.path
                guard raw.hasPrefix(mount + "/") else { return Response(status: .notFound) }
                let inner = String(raw.dropFirst(mount.count))
                guard !operational.contains(inner) else { return Response(status: .notFound) }
                let answer = await proxy.respond(to: ProxyRequest(request, path: inner))
                return Response(answer)
            }
        }
        return self
    }
}

extension ProxyRequest {
    /// `request`'s method and the fields the proxy reads, with `path` as the proxy's path.
    init(_ request: Request, path: String) {
        self.init(
            method: request.method.rawValue, path: path, accept: request.headers[.accept],
            ifNoneMatch: request.headers[.ifNoneMatch], ifModifiedSince: request.headers[.ifModifiedSince],
            clientHints: ProxyServer.clientHints(request.headers), authorization: request.headers[.authorization])
        for name in ProxyTracing.propagatedFields {
            if let field = HTTPField.Name(name), let value = request.headers[field] { traceContext[name] = value }
        }
    }
}

extension Response {
    /// The proxy's answer as Hummingbird's response; a field name HTTP does not allow is left out.
    init(_ answer: ProxyResponse) {
        var fields = HTTPFields()
        for (name, value) in answer.headers {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        self.init(
            status: HTTPResponse.Status(code: answer.status), headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}
