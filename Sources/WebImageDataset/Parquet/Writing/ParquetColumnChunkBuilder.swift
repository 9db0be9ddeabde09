/// One column chunk of a row group, built a row at a time: each ``rowsPerPage`` rows' values are encoded
/// and compressed into a page as soon as they are all there, so a caller that has its rows one by one
/// (a bulk shard, as its samples finish) keeps the pages and the current page's encoded values rather
/// than the values themselves.
struct ParquetColumnChunkBuilder {
    /// A finished chunk: its pages (headers and compressed bodies, back to back; the spilled ones first),
    /// their decompressed size (headers included) and their value count.
    struct Chunk {
        var spill: ParquetPageSpill?
        var pages: [UInt8]
        var uncompressedSize: Int
        var valueCount: Int

        /// The pages' bytes, spilled and in memory.
        var compressedSize: Int { (spill?.size ?? 0) + pages.count }
    }

    /// The column the chunk is of.
    let column: ParquetColumn
    /// At most this many rows go into one page (the writer's ``ParquetWriter/rowsPerPage``).
    let rowsPerPage: Int
    /// The rows appended so far.
    private(set) var rowCount = 0

    private var encoder: ColumnEncoder
    private var rowsInPage = 0
    private var chunk: Chunk
    private let pageByteLimit: Int?

    /// A chunk whose pages stay in memory, or with `spill`, go to that file as they are cut; with
    /// `pageByteLimit`, a page is also cut once its values reach that many bytes (large values, such as
    /// images, then never gather ``rowsPerPage`` of them in memory).
    ///
    /// - Throws: ``ParquetError`` if the column's type cannot be written.
    init(column: ParquetColumn, rowsPerPage: Int, spill: ParquetPageSpill? = nil, pageByteLimit: Int? = nil) throws {
        self.column = column
        self.rowsPerPage = max(1, rowsPerPage)
        self.pageByteLimit = pageByteLimit
        encoder = try ColumnEncoder(column: column)
        chunk = Chunk(spill: spill, pages: [], uncompressedSize: 0, valueCount: 0)
    }

    /// Adds one row's value.
    ///
    /// - Throws: ``ParquetError`` (naming the column) if the value does not fit the column.
    mutating func append(_ value: ParquetValue) throws {
        try encoder.append(value)
        rowCount += 1
        rowsInPage += 1
        if rowsInPage == rowsPerPage || pageByteLimit.map({ encoder.pendingValueBytes >= $0 }) == true {
            try cutPage()
        }
    }

    /// The chunk: the pages so far and the last, partial one (an empty chunk has one empty page).
    mutating func finish() throws -> Chunk {
        if rowsInPage > 0 || rowCount == 0 { try cutPage() }
        return chunk
    }

    private mutating func cutPage() throws {
        let page = try encoder.page()
        if let spill = chunk.spill {
            try spill.append(page.bytes)
        } else {
            chunk.pages += page.bytes
        }
        chunk.uncompressedSize += page.uncompressedSize
        chunk.valueCount += page.valueCount
        rowsInPage = 0
    }
}
