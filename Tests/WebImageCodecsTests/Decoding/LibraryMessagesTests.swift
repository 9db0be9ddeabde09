import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// What a C library prints to `stderr` while a codec runs goes to the log at debug level.
@Suite("C libraries' stderr text", .timeLimit(.minutes(2)))
struct LibraryMessagesTests {
    @Test("libjxl's lines about a damaged file become debug records of the outermost routed call")
    func libjxlLinesAreLogged() throws {
        let damaged = try PipelineFixtures.damagedJXL()
        let collector = LogCollector()
        // The decoder routes libjxl's text itself; inside this call it is an inner one, so the text
        // reaches this collector once this call ends, thrown error or not.
        #expect(throws: ImageCodecError.self) {
            try LibraryMessages.routed(from: "libjxl", logger: collector.logger) {
                try JXLDecoder().decode(damaged, options: ImageDecodingOptions())
            }
        }
        #expect(collector.messages.contains { $0.contains("JXL_FAILURE") }, "\(collector.messages)")
        #expect(collector.records.allSatisfy { $0.level == .debug && $0.metadata["library"] == "libjxl" })
    }

    @Test("dav1d's lines about damaged AV1 data in an AVIF file become debug records")
    func dav1dLinesAreLogged() throws {
        let damaged = try PipelineFixtures.damagedAVIF()
        let collector = LogCollector()
        #expect(throws: ImageCodecError.self) {
            try LibraryMessages.routed(from: "libavif", logger: collector.logger) {
                try AVIFDecoder().decode(damaged, options: ImageDecodingOptions())
            }
        }
        #expect(collector.messages.contains("Error parsing OBU data"), "\(collector.messages)")
    }

    @Test("a decode of a good file logs nothing, and the routing ends with the call")
    func goodFileLogsNothing() throws {
        let good = try Data(
            contentsOf: Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/pipeline/small-horse-lossless.jxl"))
        let collector = LogCollector()
        let image = try LibraryMessages.routed(from: "libjxl", logger: collector.logger) {
            try JXLDecoder().decode(good, options: ImageDecodingOptions())
        }
        #expect(image.width > 0)
        #expect(collector.messages.isEmpty, "\(collector.messages)")
    }
}
