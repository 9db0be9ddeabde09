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
                "job/webimage-bulk", "deployment/webimage-serve", "service/webimage-serve",
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

    @Test("serve.yaml's container arguments run as written: probes, a signed image from the key Secret, drain")
    func serveArgumentsRunAsWritten() async throws {
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let yaml = try String(contentsOf: Self.kubernetes.appendingPathComponent("serve.yaml"), encoding: .utf8)
        var arguments = try Self.containerArguments(yaml)
        #expect(arguments.first == "serve" && arguments.contains("--cache-dir=/cache"), "\(arguments)")
        #expect(yaml.contains("path: /health/ready") && yaml.contains("path: /health,"))
        // Here: loopback on a free port, the cache in a temporary folder, and the origin's network allowed
        // (the Deployment fetches from public addresses only).
        arguments = arguments.dropFirst().map { argument in
            switch argument {
            case "--host=0.0.0.0": "--host=127.0.0.1"
            case "--port=8080": "--port=0"
            case "--cache-dir=/cache": "--cache-dir=" + folder.path
            default: argument
            }
        }
        // WEBIMAGE_KEY and WEBIMAGE_SALT come from the Secret in the cluster.
        let key = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
        let salt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
        let serve = try await ServeProcess.start(
            arguments + ["--allow-destination", "127.0.0.0/8"],
            environment: ["WEBIMAGE_KEY": key, "WEBIMAGE_SALT": salt],
            listenFlags: false)
        #expect(try await serve.get("/health").status == 200)
        #expect(try await serve.get("/health/ready").status == 200)
        let path = "/rs:fill:64:64:0/plain/\(origin.url("/files/coffee-progressive.jpg").absoluteString)@png"
        let signed = "/" + (try await ServeProcess.sign(path, key: key, salt: salt)) + path
        let reply = try await serve.get(signed)
        #expect(reply.status == 200, "\(serve.stderr)")
        #expect(ServeProcess.pngSize(reply.body)?.width == 64)
        // The result went to the cache folder.
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: folder.path)).isEmpty)
        #expect(await serve.stop() == 0, "\(serve.stderr)")
    }
}
