import Foundation
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
}
