import Foundation
import LocalImageServer
import Locking
import TestSupport
import Testing

@testable import WebImageObjectStore

/// The object-store client against a store that does not play by the rules (the loopback test server):
/// listings that never end, keys with dot segments, answers that never end or trickle, and error
/// messages holding terminal control characters.
@Suite("S3 client against a hostile store", .timeLimit(.minutes(5)))
struct S3HostileStoreTests {
    /// A started server and a client of it that tries each request once.
    static func store(_ change: (inout S3Configuration) -> Void = { _ in }) throws -> (LocalImageServer, S3Client) {
        let server = LocalImageServer(root: nil)
        try server.start()
        var configuration = S3Configuration(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret", endpoint: server.url("/"))
        configuration.maximumAttempts = 1
        configuration.retryDelay = 0.01
        change(&configuration)
        return (server, S3Client(configuration: configuration))
    }

    /// A ListObjectsV2 page of one key, truncated with `token` (or the last page without one).
    static func page(key: String, token: String?) -> LocalImageServer.Response {
        let truncated = token.map {
            "<IsTruncated>true</IsTruncated><NextContinuationToken>\($0)</NextContinuationToken>"
        }
        return .text(
            "<ListBucketResult><Contents><Key>\(key)</Key><Size>1</Size></Contents>"
                + (truncated ?? "<IsTruncated>false</IsTruncated>") + "</ListBucketResult>")
    }

    @Test func aRepeatedContinuationTokenEndsTheListing() async throws {
        let (server, client) = try Self.store()
        defer { server.shutdown() }
        let pages = Lock(0)
        // The same token every time; after 50 pages a last one, so a client that loops still ends.
        server.route("/loop") { _ in
            let page = pages.withLock { count -> Int in
                count += 1
                return count
            }
            return Self.page(key: "k\(page)", token: page < 50 ? "again" : nil)
        }
        do {
            let objects = try await S3Client.detached { try client.list(prefix: S3Location(bucket: "loop", key: "")) }
            Issue.record("a listing whose store repeats its token gave \(objects.count) objects")
        } catch let error as S3Error {
            #expect(error.kind == .badResponse, "\(error)")
            #expect(error.description.contains("repeated a continuation token"), "\(error)")
        }
        #expect(pages.withLock { $0 } == 2)
    }

    @Test func aListingEndsAtItsPageLimit() async throws {
        let (server, client) = try Self.store { $0.maximumListPages = 5 }
        defer { server.shutdown() }
        let pages = Lock(0)
        // A new token every time, never the last page (but after 50, so a client that loops still ends).
        server.route("/endless") { request in
            let page = pages.withLock { count -> Int in
                count += 1
                return count
            }
            return Self.page(key: "k\(page)", token: page < 50 ? "t\(page)-\(request.queryValue("prefix") ?? "")" : nil)
        }
        do {
            _ = try await S3Client.detached { try client.list(prefix: S3Location(bucket: "endless", key: "")) }
            Issue.record("a listing past its page limit ended")
        } catch let error as S3Error {
            #expect(error.kind == .badResponse && error.description.contains("after 5 pages"), "\(error)")
        }
        #expect(pages.withLock { $0 } == 5)
    }

    @Test func keysGoOnTheWireAsWritten() async throws {
        let (server, client) = try Self.store()
        defer { server.shutdown() }
        let paths = Lock<[String]>([])
        server.route("/data/") { request in
            paths.withLock { $0.append(request.path) }
            return .text("body")
        }
        // A location made in code (parse refuses these) still names the key it holds.
        let location = S3Location(bucket: "data", key: "dir/../in.csv")
        #expect(try await S3Client.detached { try client.data(location) } == Data("body".utf8))
        #expect(paths.withLock { $0 } == ["/data/dir/../in.csv"])
    }

    @Test func dotSegmentsAreRefusedWhenALocationIsParsed() throws {
        for text in [
            "s3://data/../other/", "s3://data/dir/../in.csv", "s3://data/./in.csv", "s3://../x", "s3://data/..",
        ] {
            do {
                let location = try S3Location.parse(text)
                Issue.record("\(text) parsed as \(String(describing: location))")
            } catch {
                #expect(error.kind == .configuration && error.isPermanent)
                #expect(error.description.contains("'\(text)'"), "\(error)")
            }
        }
        #expect(
            try S3Location.parse("s3://data/a..b/.c/in...csv") == S3Location(bucket: "data", key: "a..b/.c/in...csv"))
    }

    @Test func aLocalCopyIsNamedByAHashWithTheKeysExtension() throws {
        let long = S3Location(bucket: "data", key: "lists/" + String(repeating: "x", count: 300) + ".csv.gz")
        #expect(long.localFileName.utf8.count == 64 + ".csv.gz".utf8.count)
        #expect(long.localFileName.hasSuffix(".csv.gz"))
        #expect(S3Location(bucket: "data", key: "a/part-0.parquet").localFileName.hasSuffix(".parquet"))
        #expect(S3Location(bucket: "data", key: "a/b.c.jsonl").localFileName.hasSuffix(".jsonl"))
        #expect(!S3Location(bucket: "data", key: "a/..").localFileName.contains("."))
        #expect(!S3Location(bucket: "data", key: "a/noextension").localFileName.contains("."))
        // Two keys with the same last segment get two files.
        #expect(
            S3Location(bucket: "data", key: "a/in.csv").localFileName
                != S3Location(bucket: "data", key: "b/in.csv").localFileName)
    }

    @Test func anEndlessDownloadStopsAtItsBoundAndLeavesNoFile() async throws {
        let (server, client) = try Self.store { $0.maximumDownloadBytes = 1 << 20 }
        defer { server.shutdown() }
        // Chunked, so no length says it is too long: only the bytes do.
        server.route("/store/endless") { _ in
            LocalImageServer.Response(body: .pattern(count: 1 << 40), delivery: .chunked(chunkSize: 64 << 10))
        }
        server.route("/store/huge") { _ in LocalImageServer.Response(body: .pattern(count: 1 << 40)) }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        for key in ["endless", "huge"] {
            let file = folder.appendingPathComponent(key)
            do {
                try await S3Client.detached { try client.download(S3Location(bucket: "store", key: key), to: file) }
                Issue.record("a download of \(key) past its bound succeeded")
            } catch let error as S3Error {
                #expect(error.kind == .tooLarge && error.isPermanent, "\(error)")
                #expect(error.description.contains("GetObject s3://store/\(key)"), "\(error)")
                #expect(error.description.contains("1048576 bytes"), "\(error)")
            }
            #expect(!FileManager.default.fileExists(atPath: file.path), "the partial copy of \(key) is removed")
        }
        // The announced length fails before the body: far less than the bound went out.
        #expect(server.bytesSent(for: "/store/huge") < 64 << 20)
        #expect(server.bytesSent(for: "/store/endless") < 64 << 20)
    }

    @Test func aTrickleFailsAfterTheStallTimeout() async throws {
        let (server, client) = try Self.store {
            $0.stallTimeout = 1
            $0.maximumAttempts = 2
        }
        defer { server.shutdown() }
        // 10 bytes a second, far under 1 KiB/s, for an hour.
        server.route("/store/slow") { _ in
            LocalImageServer.Response(
                body: .pattern(count: 36_000), delivery: .drip(chunkSize: 1, interval: .milliseconds(100)))
        }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            try await S3Client.detached {
                try client.download(S3Location(bucket: "store", key: "slow"), to: folder.appendingPathComponent("slow"))
            }
            Issue.record("a trickling download succeeded")
        } catch let error as S3Error {
            #expect(error.kind == .network, "\(error)")
            #expect(error.description.contains("(after 2 attempts)"), "\(error)")
        }
        #expect(server.count(for: "/store/slow") == 2)
    }

    @Test func theStoresWordsArePrintable() async throws {
        let (server, client) = try Self.store()
        defer { server.shutdown() }
        server.route("/data/") { _ in
            .text(
                "<Error><Code>Access\u{1B}]0;title\u{07}Denied</Code><Message>\u{1B}[2J\u{1B}[31mred\rover\u{07}\u{202E}"
                    + "</Message></Error>", status: 403)
        }
        do {
            _ = try await S3Client.detached { try client.data(S3Location(bucket: "data", key: "k")) }
            Issue.record("a 403 gave an answer")
        } catch let error as S3Error {
            let text = error.description + (error.code ?? "")
            #expect(!text.unicodeScalars.contains { $0.properties.generalCategory == .control }, "\(error)")
            #expect(!text.unicodeScalars.contains("\u{202E}"), "\(error)")
            #expect(error.description.contains(#"\u{1B}[2J\u{1B}[31mred\rover\u{7}\u{202E}"#), "\(error)")
            #expect(error.kind == .credentials)
        }
        #expect(S3Error.printable(String(repeating: "a", count: 2000)).count == 513)
    }
}
