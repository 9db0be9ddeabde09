import Testing
import WebImageDataset

@Suite struct ParquetValueTests {
    @Test("the accessors return a value of their kind and nil for any other")
    func accessors() {
        #expect(ParquetValue.string("a").stringValue == "a")
        #expect(ParquetValue.bytes([1]).stringValue == nil)
        #expect(ParquetValue.bytes([1, 2]).bytesValue == [1, 2])
        #expect(ParquetValue.int32(-3).integerValue == -3)
        #expect(ParquetValue.int64(.max).integerValue == .max)
        #expect(ParquetValue.double(1).integerValue == nil)
        #expect(ParquetValue.float(0.5).doubleValue == 0.5)
        #expect(ParquetValue.double(-2).doubleValue == -2)
        #expect(ParquetValue.int64(1).doubleValue == nil)
        #expect(ParquetValue.bool(true).boolValue == true)
        #expect(ParquetValue.null.boolValue == nil)
        #expect(ParquetValue.list([.null]).listValue == [.null])
        #expect(ParquetValue.null.isNull)
        #expect(!ParquetValue.list([]).isNull)
    }

    @Test("errors name the column and say what is wrong")
    func errorDescription() {
        let error = ParquetError(.unsupported, "encoding DELTA_BINARY_PACKED is not supported", column: "bbox")
        #expect(error.description == "column `bbox`: encoding DELTA_BINARY_PACKED is not supported")
        #expect(ParquetError(.corrupt, "bad").description == "bad")
    }
}
