import Foundation
import Testing

@testable import WebImageDataset

/// Malformed, truncated and hostile files end in a ParquetError: no crash, no hang, no large allocation.
@Suite struct HostileParquetTests {
    /// Expects `bytes` to be refused with an error of `kind` whose description contains `text`.
    static func expectRefused(
        _ bytes: [UInt8], _ kind: ParquetError.Kind, _ text: String, limits: ParquetLimits = ParquetLimits(),
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = #expect(throws: ParquetError.self, sourceLocation: sourceLocation) {
            try CraftedFile.read(bytes, limits: limits)
        }
        #expect(error?.kind == kind, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(
            error?.description.contains(text) == true, "\(String(describing: error))", sourceLocation: sourceLocation)
    }

    @Test("a crafted file reads (the baseline the other crafted files break)")
    func craftedBaseline() throws {
        var file = CraftedFile.optionalInt32(rows: 3)
        file.pages = [
            CraftedFile.dataPage(CraftedFile.levels([0x06, 0x01]) + [7, 0, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0], values: 3)
        ]
        #expect(try CraftedFile.read(file.bytes).first?.column(named: "x") == [.int32(7), .int32(8), .int32(9)])
    }

    @Test("a data page v2 whose values are not compressed reads in a SNAPPY column; its level lengths are checked")
    func dataPageV2() throws {
        var file = CraftedFile.optionalInt32(rows: 3)
        file.codec = .snappy
        var page = CraftedFile.dataPageV2(
            definition: [0x02, 0x01, 0x02, 0x00, 0x02, 0x01], values: [7, 0, 0, 0, 9, 0, 0, 0], count: 3, nulls: 1,
            rows: 3)
        file.pages = [page]
        #expect(try CraftedFile.read(file.bytes).first?.column(named: "x") == [.int32(7), .null, .int32(9)])
        page.0.dataPageV2?.definitionLevelsLength = 1000
        file.pages = [page]
        Self.expectRefused(file.bytes, .corrupt, "column `x`: data page v2 levels are longer than the page")
        page.0.dataPageV2?.definitionLevelsLength = 2
        file.pages = [page]
        Self.expectRefused(file.bytes, .corrupt, "RLE/bit-packed data ends 2 values early")
    }

    @Test("a page claiming more decompressed bytes than the limit is refused before allocating")
    func hugeDecompressedPage() {
        var file = CraftedFile.optionalInt32(rows: 3)
        file.codec = .snappy
        var page = CraftedFile.dataPage([1, 2, 3], values: 3)
        page.0.uncompressedSize = Int(Int32.max)
        file.pages = [page]
        Self.expectRefused(file.bytes, .limitExceeded, "column `x`: page claims 2147483647 decompressed bytes")
        page.0.uncompressedSize = 1000
        file.pages = [page]
        Self.expectRefused(
            file.bytes, .limitExceeded, "column `x`: page claims 1000", limits: ParquetLimits(maxPageBytes: 999))
    }

    @Test("page sizes that do not match the bytes are refused")
    func pageSizeMismatch() {
        var file = CraftedFile.requiredInt32(rows: 1)
        var page = CraftedFile.dataPage([1, 0, 0, 0], values: 1)
        page.0.compressedSize = 1_000_000
        file.pages = [page]
        Self.expectRefused(file.bytes, .corrupt, "runs past its column chunk")
        page.0.compressedSize = 4
        page.0.uncompressedSize = 400
        file.pages = [page]
        Self.expectRefused(file.bytes, .corrupt, "uncompressed page holds 4 bytes, its header says 400")
        file.codec = .snappy
        Self.expectRefused(file.bytes, .corrupt, "SNAPPY")
        file.codec = .gzip
        Self.expectRefused(file.bytes, .corrupt, "GZIP")
        file.codec = .zstd
        Self.expectRefused(file.bytes, .corrupt, "ZSTD")
    }

    @Test("a dictionary index out of range and a bit width past 32 are refused")
    func dictionaryIndices() throws {
        var file = CraftedFile.requiredInt32(rows: 3)
        let dictionary = CraftedFile.dictionaryPage([5, 0, 0, 0, 6, 0, 0, 0], values: 2)
        file.pages = [dictionary, CraftedFile.dataPage([2, 0x06, 0x01], values: 3, encoding: .rleDictionary)]
        #expect(try CraftedFile.read(file.bytes).first?.column(named: "x") == [.int32(6), .int32(6), .int32(6)])
        file.pages = [dictionary, CraftedFile.dataPage([2, 0x06, 0x03], values: 3, encoding: .rleDictionary)]
        Self.expectRefused(file.bytes, .corrupt, "column `x`: dictionary index 3 is out of range (2 entries)")
        file.pages = [dictionary, CraftedFile.dataPage([40, 0x06, 0x01], values: 3, encoding: .rleDictionary)]
        Self.expectRefused(file.bytes, .corrupt, "bit width 40 is out of range")
        file.pages = [CraftedFile.dataPage([2, 0x06, 0x01], values: 3, encoding: .rleDictionary)]
        Self.expectRefused(file.bytes, .corrupt, "without a dictionary")
    }

    @Test("levels above the column's maximum, or wider than their bit width, are refused")
    func levelsOutOfRange() throws {
        // Row 0: [4]; row 1: null; row 2: [].
        var file = CraftedFile.optionalList(values: 3, rows: 3)
        let repetition = CraftedFile.levels([0x06, 0x00])
        file.pages = [
            CraftedFile.dataPage(repetition + CraftedFile.levels([0x03, 0b0001_0010]) + [4, 0, 0, 0], values: 3)
        ]
        let rows = try CraftedFile.read(file.bytes).first?.column(named: "l")
        #expect(rows == [.list([.int32(4)]), .null, .list([])])
        // Definition level 3 in a column whose maximum is 2.
        file.pages = [CraftedFile.dataPage(repetition + CraftedFile.levels([0x06, 0x03]), values: 3)]
        Self.expectRefused(file.bytes, .corrupt, "column `l.list.element`: level 3 is above the column's maximum 2")
        // Repetition level 2 in a one-bit run.
        file.pages = [
            CraftedFile.dataPage(CraftedFile.levels([0x06, 0x02]) + CraftedFile.levels([0x06, 0x02]), values: 3)
        ]
        Self.expectRefused(file.bytes, .corrupt, "wider than 1 bits")
        // A row that starts with repetition level 1.
        file.pages = [
            CraftedFile.dataPage(CraftedFile.levels([0x06, 0x01]) + CraftedFile.levels([0x06, 0x01]), values: 3)
        ]
        Self.expectRefused(file.bytes, .corrupt, "a row starts with repetition level 1")
    }

    @Test("absurd counts are refused or cost only what is there")
    func absurdCounts() throws {
        var file = CraftedFile.optionalInt32(rows: 3)
        // An RLE run of 2^62 nulls yields the three the page holds.
        let hugeRun: [UInt8] = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0x00]
        file.pages = [CraftedFile.dataPage(CraftedFile.levels(hugeRun), values: 3)]
        #expect(try CraftedFile.read(file.bytes).first?.column(named: "x") == [.null, .null, .null])
        // A bit-packed run claiming 1000 groups in two bytes.
        file.pages = [CraftedFile.dataPage(CraftedFile.levels([0xD1, 0x0F, 0xFF]), values: 30)]
        file.valueCount = 30
        file.rowCount = 30
        Self.expectRefused(file.bytes, .corrupt, "bit-packed run ends early")
        // A page with more values than its column chunk.
        file.pages = [CraftedFile.dataPage(CraftedFile.levels(hugeRun), values: Int(Int32.max))]
        file.valueCount = 3
        Self.expectRefused(file.bytes, .corrupt, "more values than the column chunk's 3")
        // A column chunk claiming 2^63 - 1 values.
        file.valueCount = .max
        Self.expectRefused(file.bytes, .limitExceeded, "exceed the limit")
        // More PLAIN values than the page has bytes.
        file = CraftedFile.requiredInt32(rows: 1000)
        file.pages = [CraftedFile.dataPage([1, 2, 3, 4], values: 1000)]
        Self.expectRefused(file.bytes, .corrupt, "1000 PLAIN values need more than the page's 4 bytes")
        // A row group whose column holds fewer rows than it claims (never a silent short read).
        file = CraftedFile.requiredInt32(rows: 2)
        file.valueCount = 1
        file.pages = [CraftedFile.dataPage([1, 0, 0, 0], values: 1)]
        Self.expectRefused(file.bytes, .corrupt, "holds 1 rows, its row group 2")
    }

    @Test("bad Thrift in the footer is refused")
    func badThrift() {
        // Structs nested 10,000 deep.
        Self.expectRefused(
            Array("PAR1".utf8) + CraftedFile.footer([UInt8](repeating: 0xFC, count: 10_000)), .corrupt,
            "nest too deeply")
        // A list claiming 2^60 elements.
        Self.expectRefused(
            Array("PAR1".utf8)
                + CraftedFile.footer([0x29, 0xFC, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]),
            .corrupt, "runs past the data")
        // A string longer than the footer.
        Self.expectRefused(Array("PAR1".utf8) + CraftedFile.footer([0x68, 0xFF, 0x7F, 0x41]), .corrupt, "runs past")
        // An invalid field type, a varint that never ends, and a footer that ends inside a struct.
        Self.expectRefused(Array("PAR1".utf8) + CraftedFile.footer([0x1D, 0x00]), .corrupt, "not valid")
        Self.expectRefused(
            Array("PAR1".utf8) + CraftedFile.footer([UInt8](repeating: 0x95, count: 40)), .corrupt, "varint")
        Self.expectRefused(Array("PAR1".utf8) + CraftedFile.footer([0x15, 0x02]), .corrupt, "ends early")
        // A million row groups of one empty column chunk each (few bytes each on disk, many in memory).
        var rowGroups: [UInt8] = [0x49, 0xFC, 0xC0, 0x84, 0x3D]
        for _ in 0..<1_000_000 { rowGroups += [0x19, 0x1C, 0x00, 0x00] }
        Self.expectRefused(
            Array("PAR1".utf8) + CraftedFile.footer(rowGroups), .corrupt, "column chunk without metadata")
        // A schema whose root claims 2^31 - 1 children.
        var file = CraftedFile.requiredInt32(rows: 1)
        file.schema[0].childCount = Int(Int32.max)
        Self.expectRefused(file.bytes, .corrupt, "claims 2147483647 children")
    }

    @Test("the magic, the footer length and the footer limit are checked")
    func footerFraming() throws {
        var file = CraftedFile.requiredInt32(rows: 1)
        file.pages = [CraftedFile.dataPage([1, 0, 0, 0], values: 1)]
        let bytes = file.bytes
        #expect(try CraftedFile.read(bytes).first?.column(named: "x") == [.int32(1)])
        Self.expectRefused([], .corrupt, "too short")
        Self.expectRefused(Array("PAR1PAR1PAR1".utf8), .corrupt, "past the file")
        Self.expectRefused(Array("NOPE".utf8) + bytes.dropFirst(4), .corrupt, "does not start with the Parquet magic")
        var pastFile = bytes
        let size = UInt32(bytes.count)
        for index in 0..<4 {
            pastFile[bytes.count - 8 + index] = UInt8(truncatingIfNeeded: size >> (8 * UInt32(index)))
        }
        Self.expectRefused(pastFile, .corrupt, "footer length \(bytes.count) is past the file")
        Self.expectRefused(bytes, .limitExceeded, "over the limit", limits: ParquetLimits(maxFooterBytes: 10))
        Self.expectRefused(Array(bytes.dropLast(4)) + Array("PARE".utf8), .unsupported, "encrypted")
    }

    @Test("a file truncated anywhere is refused")
    func truncated() throws {
        let (url, _) = try ParquetWriterTests.writeSample()
        defer { try? FileManager.default.removeItem(at: url) }
        let bytes = [UInt8](try Data(contentsOf: url))
        let offsets =
            [0, 1, 4, 7, 8, 11, 12, 100, bytes.count / 3, bytes.count / 2, bytes.count - 100]
            + (1...9).map { bytes.count - $0 }
        for offset in offsets {
            #expect(throws: ParquetError.self, "truncated at \(offset)") {
                try CraftedFile.read(Array(bytes[..<offset]))
            }
        }
    }

    @Test("any corrupted footer or page byte ends in a ParquetError or a read, never a crash")
    func corruptedBytes() throws {
        var file = CraftedFile.optionalList(values: 3, rows: 3)
        file.pages = [
            CraftedFile.dataPage(
                CraftedFile.levels([0x06, 0x00]) + CraftedFile.levels([0x03, 0b0001_0010]) + [4, 0, 0, 0], values: 3)
        ]
        let url = SampleTable.temporaryFile("small.parquet")
        defer { try? FileManager.default.removeItem(at: url) }
        let writer = try ParquetWriter(path: url.path, schema: SampleTable.schema, rowsPerPage: 4)
        try writer.writeRowGroup(SampleTable.columns(rows: 10, seed: 3))
        try writer.close()
        let sample = [UInt8](try Data(contentsOf: url))
        for original in [file.bytes, sample] {
            let footerLength = Int(PlainDecoder.littleEndian(original, original.count - 8, 4))
            let footerStart = original.count - 8 - footerLength
            // Every footer byte, and a spread of page bytes.
            let positions = Array(footerStart..<original.count - 8) + Array(stride(from: 4, to: footerStart, by: 13))
            for position in positions {
                for mask: UInt8 in [0xFF, 0x01] {
                    var bytes = original
                    bytes[position] ^= mask
                    do {
                        try CraftedFile.read(bytes)
                    } catch is ParquetError {
                    } catch {
                        Issue.record("byte \(position) ^ \(mask): \(error) is not a ParquetError")
                    }
                }
            }
        }
    }

    @Test("the limits bound a real file's column chunks, pages and values")
    func limitsOnAWrittenFile() throws {
        let (url, _) = try ParquetWriterTests.writeSample()
        defer { try? FileManager.default.removeItem(at: url) }
        let bytes = [UInt8](try Data(contentsOf: url))
        Self.expectRefused(bytes, .limitExceeded, "column `url`: page claims", limits: ParquetLimits(maxPageBytes: 100))
        Self.expectRefused(
            bytes, .limitExceeded, "column `url`: column chunk of", limits: ParquetLimits(maxColumnChunkBytes: 100))
        Self.expectRefused(
            bytes, .limitExceeded, "claims 1000 rows", limits: ParquetLimits(maxValuesPerColumnChunk: 10))
        let reader = try ParquetReader(path: url.path)
        #expect(throws: ParquetError(.invalidArgument, "the file has no column `nope`")) {
            try reader.readRowGroup(0, columns: ["nope"])
        }
        #expect(throws: ParquetError.self) { try reader.readRowGroup(2) }
    }
}
