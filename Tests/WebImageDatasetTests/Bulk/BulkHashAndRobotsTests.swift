import Foundation
import Testing

@testable import WebImageDataset

/// `--compute-hash`, `--verify-hash`'s record fields, and img2dataset's X-Robots-Tag rule.
@Suite("Bulk hashes and robots tag")
struct BulkHashAndRobotsTests {
    /// RFC 1321's test suite and FIPS 180-4's SHA-512 examples.
    @Test("MD5 of RFC 1321's vectors, SHA-512 of NIST's, SHA-256 as before")
    func digestsMatchTheirVectors() {
        let md5: [(String, String)] = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"), ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"), ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a"
            ),
        ]
        for (text, digest) in md5 { #expect(BulkHashAlgorithm.md5.hex(Data(text.utf8)) == digest, "\(text)") }
        #expect(
            BulkHashAlgorithm.sha512.hex(Data("abc".utf8))
                == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        #expect(
            BulkHashAlgorithm.sha512.hex(
                Data(
                    ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                        + "mnopqrstnopqrstu").utf8))
                == "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
                + "501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909")
        #expect(
            BulkHashAlgorithm.sha256.hex(Data("abc".utf8))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("the record's hash field is named after its algorithm, null on failure, absent with none")
    func recordHashField() throws {
        var record = BulkSampleRecord(
            key: "000000001", url: "u", status: .success, hashAlgorithm: .md5, hash: "0cc175b9c0f1b6a831c399e269772661")
        var json = try JSONSerialization.jsonObject(with: try record.jsonData()) as? [String: Any]
        #expect(json?["md5"] as? String == "0cc175b9c0f1b6a831c399e269772661" && json?["sha256"] == nil)
        let decoded = try JSONDecoder().decode(BulkSampleRecord.self, from: try record.jsonData())
        #expect(decoded.hashAlgorithm == .md5 && decoded.hash == record.hash && decoded.saved.isEmpty)
        record.hashAlgorithm = .sha512
        record.hash = nil
        json = try JSONSerialization.jsonObject(with: try record.jsonData()) as? [String: Any]
        #expect(json?["sha512"] is NSNull)
        record.hashAlgorithm = nil
        json = try JSONSerialization.jsonObject(with: try record.jsonData()) as? [String: Any]
        #expect(!(json?.keys.contains { ["md5", "sha256", "sha512"].contains($0) } ?? true))
        #expect(BulkSampleRecord.fieldNames.isSuperset(of: ["md5", "sha256", "sha512"]))
        #expect(!BulkSampleRecord.fieldNames.contains("hash"))

        let (schema, _) = ShardParquetWriter.table([record], savedColumns: [], hashAlgorithm: .sha512)
        #expect(schema.columns.last?.name == "sha512")
        let (bare, _) = ShardParquetWriter.table([record], savedColumns: [], hashAlgorithm: nil)
        #expect(bare.columns.last?.name == "original_height")
        #expect(BulkFailure(code: "hashMismatch") == .hashMismatch && BulkFailure.hashMismatch.isPermanent)
    }

    @Test("X-Robots-Tag as img2dataset reads it: unscoped directives, and scoped ones for this agent only")
    func robotsTag() {
        let defaults = RobotsTagCheck(disallowed: BulkSettings().disallowedHeaderDirectives, userAgentToken: nil)
        #expect(defaults.isDisallowed(["noindex"]) && defaults.isDisallowed(["nofollow, NoImageIndex"]))
        #expect(defaults.isDisallowed(["nofollow", "noai"]))
        #expect(!defaults.isDisallowed(["nofollow, noarchive"]) && !defaults.isDisallowed([]))
        #expect(!defaults.isDisallowed(["otherbot: noai"]))
        #expect(!defaults.isDisallowed(["unavailable_after: 25 Jun 2010 15:00:00 PST"]))
        let mine = RobotsTagCheck(disallowed: ["noai", "noimageai"], userAgentToken: "mybot")
        #expect(mine.isDisallowed(["MyBot: noimageai"]) && mine.isDisallowed(["noai"]))
        #expect(!mine.isDisallowed(["otherbot: noai"]) && !mine.isDisallowed(["noindex"]))
    }
}
