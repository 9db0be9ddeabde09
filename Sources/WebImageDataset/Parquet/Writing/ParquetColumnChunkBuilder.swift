/// One column chunk of a row group, built a row at a time: each ``rowsPerPage`` rows' values are encoded
/// and compressed into a page as soon as they are all there, so a caller that has its rows one by one
/// (a bulk shard, as its samples finish) keeps the pages and the current page's encoded values rather
/// than the values themselves.
struct ParquetColumnChunkBuilder {
    /// A finished chunk: its pages (headers and compressed bodies, back to back), their decompressed size
    /// (headers included) and their value count.
    struct Chunk {
        var pages: [UInt8]
        var uncompressedSize: Int
        var valueCount: Int
    }

    /// The column the chunk is of.
    let column: ParquetColumn
    /// At most this many rows go into one page (the writer's ``ParquetWriter/rowsPerPage``).
    let rowsPerPage: Int
    /// The rows appended so far.
    private(set) var rowCount = 0

    private var encoder: ColumnEncoder
    private var rowsInPage = 0
    private var chunk = Chunk(pages: [], uncompressedSize: 0, valueCount: 0)

    /// - Throws: ``ParquetError`` if the column's type cannot be written.
    init(column: ParquetColumn, rowsPerPage: Int) throws {
        self.column = column
        self.rowsPerPage = max(1, rowsPerPage)
        encoder = try ColumnEncoder(column: column)
    }

    /// Adds one row's value.
    ///
    /// - Throws: ``ParquetError`` (naming the column) if the value does not fit the column.
    mutating func append(_ value: ParquetValue) throws {
        try encoder.append(value)
        rowCount += 1
        rowsInPage += 1
        if rowsInPage == rowsPerPage { try cutPage() }
    }

    /// The chunk: the pages so far and the last, partial one (an empty chunk has one empty page).
    mutating func finish() throws -> Chunk {
        if rowsInPage > 0 || rowCount == 0 { try cutPage() }
        return chunk
    }

    private mutating func cutPage() throws {
        let page = try encoder.page()
        chunk.pages += page.bytes
        chunk.uncompressedSize += page.uncompressedSize
        chunk.valueCount += page.valueCount
        rowsInPage = 0
    }
}
