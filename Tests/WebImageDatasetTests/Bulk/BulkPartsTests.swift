import CZlib
import Foundation
import Testing

@testable import WebImageDataset

/// The bulk engine's parts on their own: digests, row readers, tar headers, failures, records.
@Suite("Bulk engine parts")
struct BulkPartsTests {
    /// FIPS 180-4's examples (NIST CSRC "SHA256.pdf", "SHA2_Additional.pdf").
    @Test("SHA-256 of NIST's test vectors")
    func sha256MatchesNISTVectors() {
        let vectors: [(Data, String)] = [
            (Data(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            (Data("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8),
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            ),
            (
                Data(
                    ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                        + "mnopqrstnopqrstu").utf8),
                "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
            ),
            (
                Data(repeating: UInt8(ascii: "a"), count: 1_000_000),
                "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
            ),
            (Data([0xBD]), "68325720aabd7c82f30f554b313d0570c95accbb7dc4b5aae11204c08ffe732b"),
            (Data(repeating: 0, count: 1000), "541b3e9daa09b20bf85fa273e5cbd3e80185aa4ec298e765db87742b70138a53"),
        ]
        for (data, digest) in vectors {
            #expect(ContentDigest.sha256Hex(data) == digest, "\(data.count) bytes")
        }
    }

    static func file(_ name: String, _ bytes: [UInt8]) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-parts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url
    }

    static func rows(_ url: URL, _ columns: BulkColumns = BulkColumns()) throws -> [BulkRow] {
        let reader = try BulkInput.open(path: url.path, columns: columns)
        var rows: [BulkRow] = []
        while let row = try reader.next() { rows.append(row) }
        return rows
    }

    @Test("CSV: a byte order mark is dropped, a stray quote inside a field is text, quoted line breaks are kept")
    func csvWithByteOrderMarkAndStrayQuotes() throws {
        let text =
            "url,caption,n\r\nhttp://a/1.jpg,a 5\" screen,1\r\n\"http://a/2.jpg\",\"two\nlines, \"\"quoted\"\"\",2\n"
        let url = try Self.file("list.csv", [0xEF, 0xBB, 0xBF] + Array(text.utf8))
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let rows = try Self.rows(url, BulkColumns(caption: "caption", saved: ["n"]))
        #expect(
            rows == [
                BulkRow(url: "http://a/1.jpg", caption: "a 5\" screen", saved: [.init(name: "n", value: .string("1"))]),
                BulkRow(
                    url: "http://a/2.jpg", caption: "two\nlines, \"quoted\"",
                    saved: [.init(name: "n", value: .string("2"))]),
            ])
    }

    @Test("CSV: a quote never closed is an error naming the line where its record starts")
    func csvUnclosedQuote() throws {
        let url = try Self.file("list.csv", Array("url\nhttp://a/1.jpg\n\"http://a/2.jpg\n".utf8))
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        #expect {
            _ = try Self.rows(url)
        } throws: { error in
            "\(error)".contains("line 3") && "\(error)".contains("never closed")
        }
    }

    static func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
        var size = compressBound(uLong(bytes.count)) + 64
        var stream = z_stream()
        var output = [UInt8](repeating: 0, count: Int(size))
        #expect(
            deflateInit2_(
                &stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
                Int32(MemoryLayout<z_stream>.size)) == Z_OK)
        var input = bytes
        let status = input.withUnsafeMutableBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                stream.next_in = inputBuffer.baseAddress
                stream.avail_in = uInt(inputBuffer.count)
                stream.next_out = outputBuffer.baseAddress
                stream.avail_out = uInt(outputBuffer.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        #expect(status == Z_STREAM_END)
        size = stream.total_out
        deflateEnd(&stream)
        return Array(output.prefix(Int(size)))
    }

    @Test("gzip: a whole file reads, a truncated one and a damaged one are errors")
    func gzipErrors() throws {
        let text = (0..<2000).map { "http://a/\($0).jpg" }.joined(separator: "\n")
        let packed = try Self.gzip(Array(text.utf8))
        let whole = try Self.file("list.txt.gz", packed)
        defer { try? FileManager.default.removeItem(at: whole.deletingLastPathComponent()) }
        #expect(try Self.rows(whole).count == 2000)

        let cut = try Self.file("cut.txt.gz", Array(packed.prefix(packed.count / 2)))
        defer { try? FileManager.default.removeItem(at: cut.deletingLastPathComponent()) }
        #expect {
            _ = try Self.rows(cut)
        } throws: { error in
            error is BulkInputError && "\(error)".contains("truncated")
        }

        var damaged = packed
        damaged[damaged.count - 6] ^= 0xFF  // the CRC-32 in the trailer
        let bad = try Self.file("bad.txt.gz", damaged)
        defer { try? FileManager.default.removeItem(at: bad.deletingLastPathComponent()) }
        #expect {
            _ = try Self.rows(bad)
        } throws: { error in
            error is BulkInputError && "\(error)".contains("damaged gzip data")
        }
    }

    @Test("Failures: the filters, the robots tag and invalid URLs are permanent; the rest may be retried")
    func failureClassification() {
        for code in ["invalidURL", "robotsTag", "tooSmall", "areaTooLarge", "aspectRatio"] {
            #expect(BulkFailure(code: code).isPermanent, "\(code)")
            #expect(BulkFailure(code: code).code == code)
        }
        for code in ["truncated", "encoding", "timedOut", "invalidDownloadStatusCode", "unknown"] {
            #expect(!BulkFailure(code: code).isPermanent, "\(code)")
            #expect(BulkFailure(code: code).code == code)
        }
        #expect(BulkFailure(error: CocoaError(.fileNoSuchFile)) == .download(code: "unknown"))
    }

    @Test("A record's JSON has every field (null when absent) and its kept columns with their types")
    func recordJSON() throws {
        let record = BulkSampleRecord(
            key: "000000001", url: "https://a/b.jpg", status: .failedToDownload, errorMessage: "gone",
            errorCode: "timedOut",
            milliseconds: 12, attempts: 2,
            saved: [.init(name: "similarity", value: .double(0.25)), .init(name: "license", value: .string("cc"))])
        let text = String(decoding: try record.jsonData(), as: UTF8.self)
        #expect(
            text
                == #"{"attempts":2,"caption":null,"error_code":"timedOut","error_message":"gone","height":null,"#
                + #""key":"000000001","license":"cc","ms":12,"original_height":null,"original_width":null,"#
                + #""sha256":null,"similarity":0.25,"status":"failed_to_download","url":"https://a/b.jpg","width":null}"#
        )
        let decoded = try JSONDecoder().decode(BulkSampleRecord.self, from: Data(text.utf8))
        #expect(decoded.saved.map(\.name) == ["license", "similarity"])
        #expect(decoded.failure == .download(code: "timedOut"))
        #expect(decoded.key == record.key && decoded.milliseconds == 12 && decoded.attempts == 2)
    }

    @Test("Tar headers: Python's tarfile reads the names, sizes and bytes written")
    func tarHeadersReadByPython() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-tar-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("a.tar")
        let tar = try TarWriter(url: url)
        let members: [(String, Data)] = [
            ("000000000.jpg", Data(repeating: 7, count: 513)), ("000000000.json", Data("{}".utf8)),
            ("empty.txt", Data()), (String(repeating: "n", count: 100), Data("x".utf8)),
        ]
        for (name, data) in members { try tar.add(name: name, data: data) }
        try tar.finish()
        #expect(!TarWriter.isSafeName("../x") && !TarWriter.isSafeName("a/b") && !TarWriter.isSafeName(""))
        let script = """
            import sys, tarfile
            with tarfile.open(sys.argv[1]) as tar:
                for m in tar.getmembers():
                    data = tar.extractfile(m).read()
                    print(m.name, m.size, m.mode, m.mtime, m.uid, m.type.decode(), sum(data))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, url.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let expected = members.map { name, data in
            "\(name) \(data.count) \(0o644) 0 0 0 \(data.reduce(0) { $0 + Int($1) })"
        }
        #expect(output.split(separator: "\n").map(String.init) == expected)
    }
}
