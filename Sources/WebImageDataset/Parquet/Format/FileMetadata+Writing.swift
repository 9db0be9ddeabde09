// The Thrift encodings of the metadata structures the writer produces (and tests craft files with).

extension FileMetadata {
    func write(_ writer: inout ThriftCompactWriter) {
        writer.writeStruct { writer in
            writer.i32(1, version)
            writer.listField(2, .struct, count: schema.count)
            for element in schema { element.write(&writer) }
            writer.i64(3, rowCount)
            writer.listField(4, .struct, count: rowGroups.count)
            for group in rowGroups { group.write(&writer) }
            if let createdBy { writer.string(6, createdBy) }
        }
    }
}

extension SchemaElement {
    func write(_ writer: inout ThriftCompactWriter) {
        writer.writeStruct { writer in
            if let type { writer.i32(1, type) }
            if let typeLength { writer.i32(2, typeLength) }
            if let repetition { writer.i32(3, repetition) }
            writer.string(4, name)
            if let childCount { writer.i32(5, childCount) }
            if let convertedType { writer.i32(6, convertedType) }
            if let logicalType {
                writer.structField(10) { writer in writer.structField(logicalType) { _ in } }
            }
        }
    }
}

extension RowGroup {
    func write(_ writer: inout ThriftCompactWriter) {
        writer.writeStruct { writer in
            writer.listField(1, .struct, count: columns.count)
            for column in columns { column.write(&writer) }
            let total = columns.reduce(Int64(0)) { $0 + ($1.metadata?.totalUncompressedSize ?? 0) }
            writer.i64(2, total)
            writer.i64(3, rowCount)
        }
    }
}

extension ColumnChunk {
    func write(_ writer: inout ThriftCompactWriter) {
        writer.writeStruct { writer in
            if let filePath { writer.string(1, filePath) }
            writer.i64(2, metadata?.dataPageOffset ?? 0)
            if let metadata {
                writer.structField(3) { writer in metadata.write(&writer) }
            }
        }
    }
}

extension ColumnMetadata {
    /// The fields (the caller opened the struct).
    func write(_ writer: inout ThriftCompactWriter) {
        writer.i32(1, type)
        writer.listField(2, .i32, count: encodings.count)
        for encoding in encodings { writer.i32Element(encoding) }
        writer.listField(3, .binary, count: path.count)
        for name in path { writer.stringElement(name) }
        writer.i32(4, codec)
        writer.i64(5, valueCount)
        writer.i64(6, totalUncompressedSize)
        writer.i64(7, totalCompressedSize)
        writer.i64(9, dataPageOffset)
        if let dictionaryPageOffset { writer.i64(11, dictionaryPageOffset) }
    }
}

extension PageHeader {
    func write(_ writer: inout ThriftCompactWriter) {
        writer.writeStruct { writer in
            writer.i32(1, type)
            writer.i32(2, uncompressedSize)
            writer.i32(3, compressedSize)
            if let dataPage {
                writer.structField(5) { writer in
                    writer.i32(1, dataPage.valueCount)
                    writer.i32(2, dataPage.encoding)
                    writer.i32(3, dataPage.definitionLevelEncoding)
                    writer.i32(4, dataPage.repetitionLevelEncoding)
                }
            }
            if let dictionaryPage {
                writer.structField(7) { writer in
                    writer.i32(1, dictionaryPage.valueCount)
                    writer.i32(2, dictionaryPage.encoding)
                }
            }
            if let dataPageV2 {
                writer.structField(8) { writer in
                    writer.i32(1, dataPageV2.valueCount)
                    writer.i32(2, dataPageV2.nullCount)
                    writer.i32(3, dataPageV2.rowCount)
                    writer.i32(4, dataPageV2.encoding)
                    writer.i32(5, dataPageV2.definitionLevelsLength)
                    writer.i32(6, dataPageV2.repetitionLevelsLength)
                    writer.bool(7, dataPageV2.isCompressed)
                }
            }
        }
    }
}
