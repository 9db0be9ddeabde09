import Foundation

/// Writes a shard as img2dataset's `parquet` output: `{shard:05}.parquet` with one row per input row, the
/// record's columns (as every format's Parquet file has them) and the saved image's bytes in a last binary
/// column named after the format (``BulkSettings/imageFieldName``: `jpg`, `png`, …), null for a failed row.
/// pyarrow and Hugging Face `datasets` read it.
public final class ParquetSampleWriter: SampleWriter {
    private let parquet: ShardParquetWriter

    /// Starts the file that ``finish()`` writes to `url`, with `settings`' kept columns and hash.
    public init(url: URL, settings: BulkSettings) throws {
        parquet = try ShardParquetWriter(
            url: url, savedColumns: settings.savedColumns, hashAlgorithm: settings.hashAlgorithm,
            recordsEXIF: settings.extractsEXIF, recordsPHash: settings.deduplication == .phash,
            imageColumn: settings.imageFieldName)
    }

    /// Adds the row, its image or a null.
    public func write(_ row: SampleRow) throws {
        try parquet.append(row.record, image: row.image)
    }

    /// Writes the file and renames it into place.
    public func finish() throws {
        try parquet.finish()
    }

    /// Removes the unfinished file and its spilled images.
    public func abandon() {
        parquet.abandon()
    }
}
