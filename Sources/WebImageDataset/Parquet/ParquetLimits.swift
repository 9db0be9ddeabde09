/// Upper bounds on what a Parquet file may make the reader allocate.
///
/// Every length read from a file is checked against these before memory is reserved, so a hostile or
/// corrupt file ends in a ``ParquetError`` of kind ``ParquetError/Kind/limitExceeded`` instead of a large
/// allocation. The defaults fit files written by pyarrow, Spark and fastparquet with row groups of a few
/// hundred megabytes.
public struct ParquetLimits: Sendable {
    /// The largest footer (file metadata) read. 16 MiB by default (a file with a thousand row groups of a
    /// hundred columns has a footer of a few MiB); the parsed footer takes a few times as much memory.
    public var maxFooterBytes: Int
    /// The largest page, compressed or decompressed. 256 MiB by default.
    public var maxPageBytes: Int
    /// The largest column chunk (all pages of one column in one row group). 1 GiB by default.
    public var maxColumnChunkBytes: Int
    /// The most values (levels) one column chunk, dictionary or row group may hold. 2^25 by default.
    ///
    /// Dictionary and RLE encodings make many values from few bytes, so this bounds the memory of one
    /// column: with the defaults, a dictionary-encoded column takes a little over 2^25 × 5 bytes (an index
    /// and a level per row) besides its dictionary, a PLAIN one 2^25 × (`MemoryLayout<ParquetValue>.stride`
    /// + 5) bytes at most, a list column a ``ParquetValue`` per element and per row.
    public var maxValuesPerColumnChunk: Int

    /// Limits with the given values (the defaults unless stated).
    public init(
        maxFooterBytes: Int = 16 << 20, maxPageBytes: Int = 256 << 20, maxColumnChunkBytes: Int = 1 << 30,
        maxValuesPerColumnChunk: Int = 1 << 25
    ) {
        self.maxFooterBytes = maxFooterBytes
        self.maxPageBytes = maxPageBytes
        self.maxColumnChunkBytes = maxColumnChunkBytes
        self.maxValuesPerColumnChunk = maxValuesPerColumnChunk
    }
}
