import Foundation
import Testing
import WebImageObjectStore

/// Presigned GET URLs: AWS's published example, the query a session token adds, and bucket names.
@Suite("S3Presigner")
struct S3PresignerTests {
    static let example = S3Configuration(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        region: "us-east-1")

    @Test("AWS's documented presigned GET of examplebucket/test.txt, byte for byte")
    func awsExample() throws {
        // The example of "Authenticating Requests: Using Query Parameters (AWS Signature Version 4)":
        // 2013-05-24T00:00:00Z, valid for 86,400 s.
        var presigner = S3Presigner(configuration: Self.example)
        presigner.lifetime = 86_400
        let url = try presigner.signed(
            try #require(URL(string: "https://examplebucket.s3.amazonaws.com/test.txt")),
            date: Date(timeIntervalSince1970: 1_369_353_600))
        #expect(
            url.absoluteString
                == "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                + "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
                + "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
                + "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
    }

    @Test("a session token is a signed query parameter; another second, another signature")
    func sessionTokenAndDate() throws {
        var configuration = Self.example
        configuration.sessionToken = "token/with+slash"
        configuration.endpoint = URL(string: "http://127.0.0.1:9000")
        let presigner = S3Presigner(configuration: configuration)
        let location = S3Location(bucket: "data", key: "a b/c.jpg")
        let first = try presigner.url(for: location, date: Date(timeIntervalSince1970: 1_700_000_000))
        let text = first.absoluteString
        #expect(text.hasPrefix("http://127.0.0.1:9000/data/a%20b/c.jpg?"), "\(text)")
        #expect(text.contains("X-Amz-Security-Token=token%2Fwith%2Bslash"), "\(text)")
        let later = try presigner.url(for: location, date: Date(timeIntervalSince1970: 1_700_000_001))
        #expect(later != first)
    }

    @Test("a bucket that is not a valid S3 name never becomes part of a URL")
    func bucketNames() {
        let presigner = S3Presigner(configuration: Self.example)
        for bucket in ["my-data", "a.b.c", "abc", String(repeating: "a", count: 63)] {
            #expect((try? presigner.objectURL(for: S3Location(bucket: bucket, key: "k"))) != nil, "\(bucket)")
        }
        for bucket in [
            "ab", "Data", "a#b", "a@evil.com", "a:80", "-ab", "ab-", "a/b", "", String(repeating: "a", count: 64),
        ] {
            #expect(throws: S3Error.self, "\(bucket)") {
                try presigner.objectURL(for: S3Location(bucket: bucket, key: "k"))
            }
        }
    }
}
