import Foundation
import LocalImageServer
import Locking
import TestSupport
import Testing

@testable import WebImageObjectStore

/// The object-store client against moto's S3 server (signatures checked) and, for answers moto never
/// gives, the loopback test server.
// The limit only stops a hang: under ThreadSanitizer on a busy 2-core machine, filling 1,005 keys and an
// 11 MiB multipart upload through moto took over 5 minutes.
@Suite("S3 client", .timeLimit(.minutes(20)))
struct S3ClientTests {
    static func client(_ store: MotoS3, _ change: (inout S3Configuration) -> Void = { _ in }) throws -> S3Client {
        var configuration = try S3Configuration.fromEnvironment(store.environment())
        change(&configuration)
        return S3Client(configuration: configuration)
    }

    @Test(.enabled(if: MotoS3.available, "make test-python sets up .venv-test with moto[server] and boto3"))
    func multipartUploadsGiveTheSameBytes() async throws {
        let store = try await MotoS3.start()
        // S3 refuses parts under 5 MiB but the last: 11 MiB in 5 MiB parts is three parts.
        let client = try Self.client(store) {
            $0.multipartThreshold = 5 << 20
            $0.partSize = 5 << 20
        }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var generator = SystemRandomNumberGenerator()
        let bytes = Data((0..<(11 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let file = folder.appendingPathComponent("big.bin")
        try bytes.write(to: file)
        let location = S3Location(bucket: MotoS3.bucket, key: "parts/a big ü+file.bin")
        try await S3Client.detached { try client.upload(file: file, to: location) }
        let etag = try await store.tool("etag", [MotoS3.bucket, location.key])
        #expect(etag.contains("-3"), "a multipart ETag names its part count: \(etag)")
        let back = folder.appendingPathComponent("back.bin")
        try await S3Client.detached { try client.download(location, to: back) }
        #expect(try Data(contentsOf: back) == bytes)
        #expect(try await S3Client.detached { try client.size(of: location) } == bytes.count)
        try await S3Client.detached { try client.delete(location) }
        #expect(try await S3Client.detached { try client.size(of: location) } == nil)
    }

    @Test(.enabled(if: MotoS3.available, "make test-python sets up .venv-test with moto[server] and boto3"))
    func listingFollowsContinuationTokens() async throws {
        let store = try await MotoS3.start()
        let client = try Self.client(store)
        // 1,005 keys: two pages of ListObjectsV2. Names with a space, a plus, an ampersand and non-ASCII come
        // back as they were written.
        _ = try await store.tool("fill", [MotoS3.bucket, "many/", "1005"])
        let objects = try await S3Client.detached {
            try client.list(prefix: S3Location(bucket: MotoS3.bucket, key: "many/"))
        }
        #expect(objects.count == 1005)
        #expect(Set(objects.map(\.key)) == Set((0..<1005).map { String(format: "many/k %04d+&é.txt", $0) }))
        #expect(objects.allSatisfy { $0.size == 3 })
        let none = try await S3Client.detached {
            try client.list(prefix: S3Location(bucket: MotoS3.bucket, key: "nothing/"))
        }
        #expect(none.isEmpty)
    }

    @Test(.enabled(if: MotoS3.available, "make test-python sets up .venv-test with moto[server] and boto3"))
    func errorsCarryTheStoresCodeAndMessage() async throws {
        let store = try await MotoS3.start()
        let client = try Self.client(store)
        let missingBucket = S3Location(bucket: "no-such-bucket", key: "a")
        do {
            try await S3Client.detached { try client.put(Data("x".utf8), to: missingBucket) }
            Issue.record("a PUT into a missing bucket succeeded")
        } catch let error as S3Error {
            #expect(error.kind == .notFound && error.code == "NoSuchBucket" && error.status == 404)
            #expect(error.isPermanent)
            #expect(error.description.contains("PutObject s3://no-such-bucket/a failed with HTTP 404 (NoSuchBucket"))
        }
        let wrong = try Self.client(store) { $0.secretAccessKey = "wrong" }
        do {
            _ = try await S3Client.detached { try wrong.list(prefix: S3Location(bucket: MotoS3.bucket, key: "")) }
            Issue.record("a wrong secret was accepted")
        } catch let error as S3Error {
            #expect(error.kind == .credentials && error.code == "SignatureDoesNotMatch", "\(error)")
        }
    }

    @Test func fiveHundredsAreRetriedABoundedNumberOfTimes() async throws {
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        let requests = Lock(0)
        server.route("/flaky/") { _ in
            let count = requests.withLock { count -> Int in
                count += 1
                return count
            }
            // The first two attempts fail; the third succeeds.
            return count <= 2
                ? .text("<Error><Code>SlowDown</Code><Message>busy</Message></Error>", status: 503) : .text("ok")
        }
        server.route("/down/") { _ in
            .text("<Error><Code>InternalError</Code><Message>no</Message></Error>", status: 500)
        }
        var configuration = S3Configuration(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret", endpoint: server.url("/"))
        configuration.retryDelay = 0.01
        let client = S3Client(configuration: configuration)
        let flaky = try await S3Client.detached { try client.data(S3Location(bucket: "flaky", key: "k")) }
        #expect(String(decoding: flaky, as: UTF8.self) == "ok")
        #expect(requests.withLock { $0 } == 3)
        do {
            _ = try await S3Client.detached { try client.data(S3Location(bucket: "down", key: "k")) }
            Issue.record("a store that always fails gave an answer")
        } catch let error as S3Error {
            #expect(error.kind == .server && error.code == "InternalError" && !error.isPermanent)
            #expect(error.description.hasSuffix("(after 4 attempts)"), "\(error)")
        }
    }

    @Test func requestsCarryTheSignatureTheTokenAndThePayloadHash() async throws {
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        let seen = Lock<[LocalImageServer.Request]>([])
        server.route("/signed/") { request in
            seen.withLock { $0.append(request) }
            return .text("")
        }
        var configuration = S3Configuration(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret", sessionToken: "TOKEN", region: "eu-west-3",
            endpoint: server.url("/"))
        configuration.maximumAttempts = 1
        let client = S3Client(configuration: configuration)
        try await S3Client.detached { try client.put(Data("hello".utf8), to: S3Location(bucket: "signed", key: "k")) }
        let request = try #require(seen.withLock { $0.first })
        #expect(request.method == "PUT" && request.body == Data("hello".utf8))
        #expect(request.header("x-amz-security-token") == "TOKEN")
        // SHA-256 of "hello".
        #expect(
            request.header("x-amz-content-sha256")
                == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
        let authorization = try #require(request.header("Authorization"))
        #expect(authorization.hasPrefix("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"))
        #expect(authorization.contains("/eu-west-3/s3/aws4_request"))
        #expect(authorization.contains("x-amz-content-sha256") && authorization.contains("x-amz-security-token"))
    }

    @Test func configurationComesFromTheStandardVariables() throws {
        let configuration = try S3Configuration.fromEnvironment([
            "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "TOKEN",
            "AWS_DEFAULT_REGION": "eu-west-3",
        ])
        #expect(configuration.region == "eu-west-3" && configuration.sessionToken == "TOKEN")
        #expect(configuration.endpoint == nil)
        #expect(
            try S3Configuration.fromEnvironment([
                "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_REGION": "us-west-2",
                "AWS_DEFAULT_REGION": "eu-west-3",
            ]).region == "us-west-2")
        #expect(throws: S3Error.self) { try S3Configuration.fromEnvironment(["AWS_ACCESS_KEY_ID": "AK"]) }
        #expect(
            try S3Configuration.fromEnvironment([
                "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_ENDPOINT_URL": "http://127.0.0.1:1",
                "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:2",
            ]).endpoint == URL(string: "http://127.0.0.1:2"))
        #expect(throws: S3Error.self) {
            try S3Configuration.fromEnvironment([
                "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_ENDPOINT_URL": "ftp://x",
            ])
        }
        #expect(try S3Location.parse("s3://bucket/a/b.csv") == S3Location(bucket: "bucket", key: "a/b.csv"))
        // Virtual-hosted on AWS (path-style for a dotted bucket), path-style on a custom endpoint; keys
        // percent-encoded as SigV4 canonicalises them.
        #expect(
            configuration.url(bucket: "data", key: "a b/ü+.tar")
                == "https://data.s3.eu-west-3.amazonaws.com/a%20b/%C3%BC%2B.tar")
        #expect(configuration.url(bucket: "my.data", key: "k") == "https://s3.eu-west-3.amazonaws.com/my.data/k")
        var custom = configuration
        custom.endpoint = URL(string: "http://127.0.0.1:9000/")
        #expect(
            custom.url(bucket: "data", key: "", query: S3Configuration.query([("prefix", "a/b"), ("list-type", "2")]))
                == "http://127.0.0.1:9000/data?list-type=2&prefix=a%2Fb")
        #expect(try S3Location.parse("s3://bucket") == S3Location(bucket: "bucket", key: ""))
        #expect(try S3Location.parse("/data/list.csv") == nil)
        #expect(throws: S3Error.self) { try S3Location.parse("s3:///key") }
    }
}
