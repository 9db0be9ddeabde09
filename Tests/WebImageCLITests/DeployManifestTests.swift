import Foundation
import ServerTestSupport
import TestSupport
import Testing

/// deploy/kubernetes checked offline against Kubernetes' own schemas with kubernetes-validate (PyPI, in
/// `.venv-test`, which `make test` sets up), strictly: an unknown field is an error, not ignored.
@Suite("deploy/kubernetes manifests", .timeLimit(.minutes(5)))
struct DeployManifestTests {
    static let validator = Fixtures.packageRoot.appendingPathComponent(".venv-test/bin/kubernetes-validate").path
    static let kubernetes = Fixtures.packageRoot.appendingPathComponent("deploy/kubernetes")

    static func validate(_ files: [String]) async throws -> CLIRunner.Output {
        try #require(
            FileManager.default.isExecutableFile(atPath: validator),
            "kubernetes-validate is missing: `make test-python` installs it into .venv-test")
        return try await CLIRunner.runProgram(validator, ["--strict"] + files)
    }

    @Test("every resource of every manifest passes Kubernetes' schema, strictly")
    func manifestsValidate() async throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.kubernetes.path)
            .filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(files == ["indexed-job.yaml", "serve.yaml"])
        let run = try await Self.validate(files.map { Self.kubernetes.appendingPathComponent($0).path })
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let passed = (run.stdout + run.stderr).split(separator: "\n").filter { $0.contains(" passed for resource ") }
        let resources = passed.compactMap { $0.split(separator: " ").drop { $0 != "resource" }.dropFirst().first }
        #expect(
            Set(resources.map(String.init)) == [
                "job/webimage-bulk", "configmap/webimage-serve", "deployment/webimage-serve", "service/webimage-serve",
                "horizontalpodautoscaler/webimage-serve",
            ], "\(run.stdout)\(run.stderr)")
    }

    @Test("the check can fail: a misspelt field in a copy of serve.yaml is refused")
    func misspeltFieldIsRefused() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let yaml = try String(contentsOf: Self.kubernetes.appendingPathComponent("serve.yaml"), encoding: .utf8)
        #expect(yaml.contains("readinessProbe:"))
        let copy = folder.appendingPathComponent("serve.yaml")
        try yaml.replacingOccurrences(of: "readinessProbe:", with: "readinesProbe:").write(
            to: copy, atomically: true, encoding: .utf8)
        let run = try await Self.validate([copy.path])
        #expect(run.status != 0)
        #expect((run.stdout + run.stderr).contains("'readinesProbe' was unexpected"), "\(run.stdout)\(run.stderr)")
    }

    /// The `- item` lines under the first `args:` of `yaml`, without trailing `   # comments`.
    static func containerArguments(_ yaml: String) throws -> [String] {
        let lines = yaml.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex { $0.trimmingCharacters(in: .whitespaces) == "args:" })
        var arguments: [String] = []
        for line in lines[(start + 1)...] {
            let item = line.trimmingCharacters(in: .whitespaces)
            guard item.hasPrefix("- ") else { break }
            arguments.append(
                String(item.dropFirst(2)).components(separatedBy: "   #")[0].trimmingCharacters(in: .whitespaces))
        }
        return arguments
    }

    /// The ConfigMap's `data:` of `yaml`: `NAME: "value"` lines, comments skipped.
    static func configMapData(_ yaml: String) throws -> [String: String] {
        let lines = yaml.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex { $0 == "data:" })
        var data: [String: String] = [:]
        for line in lines[(start + 1)...] {
            guard line.hasPrefix("  ") else { break }
            let item = line.trimmingCharacters(in: .whitespaces)
            if item.hasPrefix("#") { continue }
            let parts = item.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let value = try #require(parts.count == 2 ? parts[1] : nil, "\(line)")
            #expect(value.hasPrefix("\"") && value.hasSuffix("\""), "ConfigMap values are strings: \(line)")
            data[parts[0]] = String(value.dropFirst().dropLast())
        }
        return data
    }

    @Test("serve.yaml runs as written: its ConfigMap's IMGPROXY_* variables, the key Secret, probes, drain")
    func serveArgumentsRunAsWritten() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let yaml = try String(contentsOf: Self.kubernetes.appendingPathComponent("serve.yaml"), encoding: .utf8)
        var arguments = try Self.containerArguments(yaml)
        #expect(arguments.first == "serve" && arguments.contains("--cache-dir=/cache"), "\(arguments)")
        #expect(yaml.contains("path: /health/ready") && yaml.contains("path: /health,"))
        #expect(yaml.contains("configMapRef: { name: webimage-serve }"))
        #expect(yaml.contains("name: IMGPROXY_KEY") && yaml.contains("name: IMGPROXY_SALT"))
        var environment = try Self.configMapData(yaml)
        #expect(
            environment["IMGPROXY_BIND"] == "0.0.0.0:8080" && environment["IMGPROXY_WORKERS"] == "2", "\(environment)")
        // Here: loopback on a free port, the cache in a temporary folder, and the origin's loopback address
        // allowed (the Deployment fetches from public addresses only).
        environment["IMGPROXY_BIND"] = "127.0.0.1:0"
        environment["IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES"] = "true"
        arguments = arguments.dropFirst().map { $0 == "--cache-dir=/cache" ? "--cache-dir=" + folder.path : $0 }
        // IMGPROXY_KEY and IMGPROXY_SALT come from the Secret in the cluster.
        let key = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
        let salt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
        environment["IMGPROXY_KEY"] = key
        environment["IMGPROXY_SALT"] = salt
        let serve = try await ServeProcess.start(arguments, environment: environment, listenFlags: false)
        #expect(try await serve.get("/health").status == 200)
        #expect(try await serve.get("/health/ready").status == 200)
        let path = "/rs:fill:64:64:0/plain/\(origin.url("/files/coffee-progressive.jpg").absoluteString)"
        let signed = "/" + (try await ServeProcess.sign(path, key: key, salt: salt)) + path
        let reply = try await serve.get(signed, headers: ["Accept": "image/avif,image/webp,*/*"])
        #expect(reply.status == 200, "\(serve.stderr)")
        // IMGPROXY_AUTO_WEBP: WebP for a browser's Accept, never AVIF unless a URL asks.
        #expect(reply.header("Content-Type") == "image/webp" && reply.header("Vary") == "Accept")
        #expect(reply.header("Cache-Control") == "public, max-age=31536000")
        // The result went to the cache folder.
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: folder.path)).isEmpty)
        #expect(await serve.stop() == 0, "\(serve.stderr)")
        #expect(!serve.stderr.contains("is not a setting"), "every variable of the ConfigMap is read: \(serve.stderr)")
    }
}
