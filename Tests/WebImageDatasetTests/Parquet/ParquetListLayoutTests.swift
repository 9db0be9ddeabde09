import Testing

@testable import WebImageDataset

/// The list layouts older writers use, which pyarrow no longer writes: the two-level LIST and a bare
/// repeated field.
@Suite struct ParquetListLayoutTests {
    @Test("a two-level LIST (the repeated field is the element) reads as a list of required elements")
    func twoLevelList() throws {
        var file = CraftedFile.optionalList(values: 4, rows: 3)
        file.schema = [
            SchemaElement(name: "schema", childCount: 1),
            SchemaElement(
                repetition: Repetition.optional.rawValue, name: "l", childCount: 1, convertedType: ConvertedType.list),
            SchemaElement(type: PhysicalType.int32.rawValue, repetition: Repetition.repeated.rawValue, name: "element"),
        ]
        file.path = ["l", "element"]
        // Rows [1, 2], null, []: repetition 0 1 0 0, definition 2 2 0 1.
        let repetition = CraftedFile.levels([0x02, 0x00, 0x02, 0x01, 0x04, 0x00])
        let definition = CraftedFile.levels([0x04, 0x02, 0x02, 0x00, 0x02, 0x01])
        file.pages = [CraftedFile.dataPage(repetition + definition + [1, 0, 0, 0, 2, 0, 0, 0], values: 4)]
        let reader = try CraftedFile.reader(file.bytes)
        #expect(reader.schema.columns.first?.type == .list(element: .int32, elementNullable: false))
        #expect(
            try reader.readRowGroup(0).column(named: "l") == [.list([.int32(1), .int32(2)]), .null, .list([])])
    }

    @Test("a bare repeated field reads as a list that is never null")
    func bareRepeatedField() throws {
        var file = CraftedFile.requiredInt32(rows: 3)
        file.schema[1].repetition = Repetition.repeated.rawValue
        file.valueCount = 4
        // Rows [5], [], [6, 7]: repetition 0 0 0 1, definition 1 0 1 1.
        let repetition = CraftedFile.levels([0x06, 0x00, 0x02, 0x01])
        let definition = CraftedFile.levels([0x02, 0x01, 0x02, 0x00, 0x04, 0x01])
        file.pages = [CraftedFile.dataPage(repetition + definition + [5, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0], values: 4)]
        let reader = try CraftedFile.reader(file.bytes)
        #expect(
            reader.schema.columns.first
                == ParquetColumn(name: "x", type: .list(element: .int32, elementNullable: false), isNullable: false))
        #expect(
            try reader.readRowGroup(0).column(named: "x") == [
                .list([.int32(5)]), .list([]), .list([.int32(6), .int32(7)]),
            ])
    }
}
