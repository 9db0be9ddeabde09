import Hummingbird
import WebImageProxy

/// The README's example of a Hummingbird application that mounts the proxy beside its own routes, compiled
/// here with the test target, which has the `Tools` trait's packages: `make test-readme` checks that the
/// README's block is these lines, word for word. It is not run (it serves on port 8080 until stopped);
/// ProxyRoutesTests makes the same calls on a loopback port and asks the mounted routes.
enum READMEProxyMountExample {
    static func main() async throws {
        // README: begin
        var configuration = ImageProxyConfiguration()
        configuration.signingKeys = [SigningKey(hexKey: "736563726574", hexSalt: "68656c6c6f")!]
        let router = Router()
        router.get("/hello") { _, _ in "hello" }
        router.addProxyRoutes(ImageProxy(configuration: configuration), under: "/images")
        // GET /images/{signature}/{options}/plain/{source} and /images/info/… answer as `webimage serve` does.
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 8080)))
        try await app.runService()
        // README: end
    }
}
