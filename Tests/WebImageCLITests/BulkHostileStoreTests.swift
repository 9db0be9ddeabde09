import Foundation
import LocalImageServer
import Locking
import TestSupport
import Testing

/// `webimage bulk` with `s3://` input and output against a store that does not play by the rules: a
/// few routes of the loopback test server acting as S3 (`AWS_ENDPOINT_URL` points at it).
@Suite("webimage bulk against a hostile object store", .timeLimit(.minutes(10)))
struct BulkHostileStoreTests {
    /// A bucket of the loopback server that answers what `webimage bulk` asks of S3 (GetObject,
    /// PutObject, HeadObject, DeleteObject, a ListObjectsV2 of one page) from memory, unless
    /// `override` answers first.
    final class Bucket: Sendable {
        let objects = Lock<[String: Data]>([:])

        init(
            _ server: LocalImageServer, _ name: String,
            override: @escaping @Sendable (LocalImageServer.Request) -> LocalImageServer.Response? = { _ in nil }
        ) {
            server.route("/\(name)") { [objects] request in
                if let answer = override(request) { return answer }
                let raw = request.path.dropFirst(name.count + 1).drop { $0 == "/" }
                let key = String(raw).removingPercentEncoding ?? String(raw)
                if request.queryValue("list-type") != nil {
                    let prefix = request.queryValue("prefix") ?? ""
                    let contents = objects.withLock { $0 }.filter { $0.key.hasPrefix(prefix) }.sorted {
                        $0.key < $1.key
                    }
                    .map { "<Contents><Key>\($0.key)</Key><Size>\($0.value.count)</Size></Contents>" }
                    return .text(
                        "<ListBucketResult>\(contents.joined())<IsTruncated>false</IsTruncated></ListBucketResult>")
                }
                switch request.method {
                case "PUT":
                    objects.withLock { $0[key] = request.body }
                    return LocalImageServer.Response(headers: [("ETag", "\"e\"")])
                case "DELETE":
                    objects.withLock { $0[key] = nil }
                    return LocalImageServer.Response(status: 204)
                default:
                    guard let data = objects.withLock({ $0[key] }) else {
                        return .text("<Error><Code>NoSuchKey</Code><Message>none</Message></Error>", status: 404)
                    }
                    return LocalImageServer.Response(body: .data(data))
                }
            }
        }

        var keys: [String] { objects.withLock { Array($0.keys) } }
    }

    /// A server with a `/img/` route of PNGs, and a list of `count` of its URLs in `folder`.
    static func server(listIn folder: URL, count: Int = 3) throws -> (LocalImageServer, URL) {
        let server = LocalImageServer(root: nil)
        try server.start()
        server.route("/img/") { _ in
            LocalImageServer.Response(headers: [("Content-Type", "image/png")], body: .data(LocalImageServer.pixelPNG))
        }
        let list = try BulkCommandTests.writeList(
            (0..<count).map { server.url("/img/\($0).png").absoluteString }, to: folder)
        return (server, list)
    }

    /// The AWS variables of a store at `server`.
    static func environment(_ server: LocalImageServer, _ extra: [String: String] = [:]) -> [String: String] {
        [
            "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "",
            "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": server.url("/").absoluteString, "AWS_ENDPOINT_URL_S3": "",
            "AWS_MAX_ATTEMPTS": "",
        ].merging(extra) { $1 }
    }

    static func arguments(_ input: String, _ output: String, _ extra: [String] = []) -> [String] {
        ["bulk", "--allow-destination", "127.0.0.0/8", input, "--output", output, "--size", "16"] + extra
    }

    @Test("a listing whose store repeats its continuation token ends the run with an error")
    func repeatedContinuationToken() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (server, list) = try Self.server(listIn: folder)
        defer { server.shutdown() }
        let pages = Lock(0)
        // The same token on every page; the 50th is the last, so a client that loops still ends.
        let bucket = Bucket(server, "loop") { request in
            guard request.queryValue("list-type") != nil else { return nil }
            let page = pages.withLock { count -> Int in
                count += 1
                return count
            }
            let more =
                page < 50 ? "<IsTruncated>true</IsTruncated><NextContinuationToken>again</NextContinuationToken>" : ""
            return .text(
                "<ListBucketResult><Contents><Key>run/x\(page)</Key><Size>1</Size></Contents>\(more)</ListBucketResult>"
            )
        }
        let run = try await CLIRunner.run(
            "webimage", Self.arguments(list.path, "s3://loop/run"), environment: Self.environment(server))
        #expect(run.status == 1, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        #expect(
            run.stderr.contains("ListObjectsV2 s3://loop/run/: the store repeated a continuation token"),
            "\(run.stderr)")
        #expect(pages.withLock { $0 } == 2)
        #expect(!bucket.keys.contains { $0.hasSuffix(".tar") }, "no shard was made")
    }

    @Test("a listing page with more keys than the 1,000 asked for ends the run with an error")
    func oversizedListingPage() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (server, list) = try Self.server(listIn: folder)
        defer { server.shutdown() }
        let maxKeys = Lock<[String]>([])
        // 5,000 keys a page, truncated 100 times: within the page cap, 500,000 keys held if believed.
        let page = (0..<5_000).map { "<Contents><Key>run/x\($0)</Key><Size>1</Size></Contents>" }.joined()
        let pages = Lock(0)
        let bucket = Bucket(server, "wide") { request in
            guard request.queryValue("list-type") != nil else { return nil }
            let number = pages.withLock { count -> Int in
                count += 1
                return count
            }
            maxKeys.withLock { $0.append(request.queryValue("max-keys") ?? "none") }
            let more =
                number < 100
                ? "<IsTruncated>true</IsTruncated><NextContinuationToken>t\(number)</NextContinuationToken>" : ""
            return .text("<ListBucketResult>\(page)\(more)</ListBucketResult>")
        }
        let run = try await CLIRunner.run(
            "webimage", Self.arguments(list.path, "s3://wide/run"), environment: Self.environment(server))
        #expect(run.status == 1, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        #expect(
            run.stderr.contains("ListObjectsV2 s3://wide/run/: a page of 5000 keys, more than the 1000 asked for"),
            "\(run.stderr)")
        #expect(maxKeys.withLock { $0 } == ["1000"], "one page was read, asking for 1,000 keys")
        #expect(!bucket.keys.contains { $0.hasSuffix(".tar") }, "no shard was made")
    }

    @Test("an s3:// location with a . or .. segment exits with 2 before any request")
    func dotSegmentsAreRefused() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (server, list) = try Self.server(listIn: folder)
        defer { server.shutdown() }
        let data = Bucket(server, "data")
        let other = Bucket(server, "other")
        data.objects.withLock { $0["in.csv"] = try? Data(contentsOf: list) }
        let runs = [
            (list.path, "s3://data/../other/"), ("s3://data/dir/../in.csv", folder.appendingPathComponent("out").path),
            ("s3://data/./in.csv", "s3://data/run"),
        ]
        for (input, output) in runs {
            server.resetLog()
            let run = try await CLIRunner.run(
                "webimage", Self.arguments(input, output), environment: Self.environment(server))
            let location = input.hasPrefix("s3://") ? input : output
            #expect(run.status == 2, "\(input) → \(output): \(run.stderr)")
            #expect(run.stderr.contains("'\(location)' has a '"), "\(run.stderr)")
            #expect(server.requests.filter { !$0.path.hasPrefix("/img/") }.isEmpty, "no request reached the store")
        }
        #expect(other.keys.isEmpty, "nothing was written into another bucket")
    }

    @Test("an input whose key's last segment is longer than a file name is read")
    func longKeyIsRead() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (server, list) = try Self.server(listIn: folder, count: 5)
        defer { server.shutdown() }
        let data = Bucket(server, "data")
        let name = String(repeating: "x", count: 300) + ".csv"
        data.objects.withLock { $0["lists/" + name] = try? Data(contentsOf: list) }
        let run = try await CLIRunner.run(
            "webimage",
            Self.arguments("s3://data/lists/" + name, folder.appendingPathComponent("out").path, ["--plan-only"]),
            environment: Self.environment(server))
        #expect(run.status == 0, "\(run.stderr)")
        let plan = try #require(try CLIRunner.jsonObjects(run).first)
        #expect(plan["rows"] as? Int == 5)
        #expect(plan["input"] as? String == name, "the plan names the key, not its local copy")
    }

    @Test("an endless input stops at --max-input-bytes, exits with 2 and leaves nothing in TMPDIR")
    func endlessInput() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (server, _) = try Self.server(listIn: folder)
        defer { server.shutdown() }
        _ = Bucket(server, "data") { request in
            switch request.path {
            case "/data/endless.csv":
                LocalImageServer.Response(body: .pattern(count: 1 << 40), delivery: .chunked(chunkSize: 64 << 10))
            case "/data/huge.csv": LocalImageServer.Response(body: .pattern(count: 1 << 40))
            default: nil
            }
        }
        let scratch = folder.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        for key in ["endless.csv", "huge.csv"] {
            let run = try await CLIRunner.run(
                "webimage",
                Self.arguments(
                    "s3://data/\(key)", folder.appendingPathComponent("out").path, ["--max-input-bytes", "1000000"]),
                environment: Self.environment(server, ["TMPDIR": scratch.path]))
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains("larger than the 1000000 bytes"), "\(run.stderr)")
            #expect(run.stderr.contains("--max-input-bytes"), "\(run.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == [], "TMPDIR is left empty")
            #expect(server.bytesSent(for: "/data/\(key)") < 64 << 20)
        }
    }

    @Test("a trickling input fails after --s3-stall-timeout on each attempt")
    func tricklingInput() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (server, _) = try Self.server(listIn: folder)
        defer { server.shutdown() }
        // 10 bytes a second for an hour.
        _ = Bucket(server, "data") { request in
            request.path == "/data/slow.csv"
                ? LocalImageServer.Response(
                    body: .pattern(count: 36_000), delivery: .drip(chunkSize: 1, interval: .milliseconds(100))) : nil
        }
        let run = try await CLIRunner.run(
            "webimage",
            Self.arguments(
                "s3://data/slow.csv", folder.appendingPathComponent("out").path, ["--s3-stall-timeout", "1"]),
            environment: Self.environment(server, ["AWS_MAX_ATTEMPTS": "2"]))
        #expect(run.status == 1, "\(run.stderr)")
        #expect(
            run.stderr.contains("GetObject s3://data/slow.csv") || run.stderr.contains("/data/slow.csv"),
            "\(run.stderr)")
        #expect(run.stderr.contains("(after 2 attempts)"), "\(run.stderr)")
        #expect(server.count(for: "/data/slow.csv") == 2)
    }

    @Test("the store's code and message reach the terminal with their control characters escaped")
    func storeMessagesAreEscaped() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (server, list) = try Self.server(listIn: folder)
        defer { server.shutdown() }
        _ = Bucket(server, "data") { _ in
            .text(
                "<Error><Code>Access\u{1B}]0;pwned\u{07}Denied</Code><Message>\u{1B}[2J\u{1B}[31mred\rover\u{07}"
                    + "</Message></Error>", status: 403)
        }
        let run = try await CLIRunner.run(
            "webimage", Self.arguments(list.path, "s3://data/run"), environment: Self.environment(server))
        #expect(run.status == 2, "\(run.stderr)")
        let controls = run.stderr.unicodeScalars.filter { $0.properties.generalCategory == .control && $0 != "\n" }
        #expect(controls.isEmpty, "\(run.stderr.debugDescription)")
        #expect(run.stderr.contains(#"\u{1B}[2J\u{1B}[31mred\rover\u{7}"#), "\(run.stderr)")
        #expect(run.stderr.contains(#"Access\u{1B}]0;pwned\u{7}Denied"#), "\(run.stderr)")
    }
}
