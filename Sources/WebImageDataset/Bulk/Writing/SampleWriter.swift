import Foundation

/// One input row's outcome, as a ``SampleWriter`` gets it.
public struct SampleRow {
    /// The sample's key (its files' names).
    public var key: String
    /// The row's record.
    public var record: BulkSampleRecord
    /// ``record`` as one line of JSON (``BulkSampleRecord/jsonData()``).
    public var json: Data
    /// The saved image's bytes; nil for a failed row.
    public var image: Data?
    /// The image file's extension (`jpg`, `png`, …).
    public var fileExtension: String
    /// The caption file's bytes when captions are written (`{key}.txt`); nil otherwise.
    public var caption: Data?

    /// A row of every field; see each property.
    public init(
        key: String, record: BulkSampleRecord, json: Data, image: Data?, fileExtension: String, caption: Data?
    ) {
        self.key = key
        self.record = record
        self.json = json
        self.image = image
        self.fileExtension = fileExtension
        self.caption = caption
    }
}

/// Where a shard's saved samples go: one type per output format (a webdataset tar, a folder of files, a
/// Parquet file with the images, a TFRecord file, or nothing).
///
/// A writer gets every row, failed ones too (img2dataset's writers do: its Parquet output has a row per
/// input row); those that write only images pass over the rows without one. A writer writes under a
/// temporary name, and ``finish()`` moves the result under its final name, so a reader (or a rerun) never
/// sees a partial shard. The shard's jsonl (every row, failed ones too) is written beside it by the
/// runner, for every format but ``SampleOutputFormat/dummy``.
public protocol SampleWriter: AnyObject {
    /// Writes one row. A successful sample's files go in this order: `{key}.{fileExtension}` (the image),
    /// `{key}.json` (its ``BulkSampleRecord``) and, when `caption` is not nil, `{key}.txt`.
    func write(_ row: SampleRow) throws

    /// Completes the output and moves it under its final name.
    func finish() throws

    /// Stops writing and removes the temporary output.
    func abandon()
}

/// The output formats of `webimage bulk`, each one ``SampleWriter``.
public enum SampleOutputFormat: String, Sendable, CaseIterable {
    /// `{shard:05}.tar`, a webdataset shard (``WebDatasetSampleWriter``).
    case webdataset
    /// The folder `{shard:05}/` (``FilesSampleWriter``).
    case files
    /// `{shard:05}.parquet` with the images in a binary column (``ParquetSampleWriter``), in place of the
    /// records-only Parquet file the other formats write.
    case parquet
    /// `{shard:05}.tfrecord`, a `tf.train.Example` per saved image (``TFRecordSampleWriter``).
    case tfrecord
    /// Nothing but the stats (``DummySampleWriter``): img2dataset's `dummy`, to measure a download.
    case dummy

    /// Whether the shard's jsonl and records-only Parquet file are written beside this format's output:
    /// not for ``parquet``, whose file is that Parquet file with the images, nor for ``dummy``, which
    /// writes nothing but stats (``writesJSONL``).
    public var writesRecordParquet: Bool { self != .parquet && self != .dummy }

    /// Whether the shard's jsonl is written: for every format but ``dummy``.
    public var writesJSONL: Bool { self != .dummy }

    /// A writer of this format for the shard files named `stem` in `directory`; `settings` gives the
    /// columns of the formats that write records (their kept columns, hash and image column).
    public func makeWriter(
        stem: String, in directory: URL, settings: BulkSettings = BulkSettings()
    ) throws -> any SampleWriter {
        switch self {
        case .webdataset: try WebDatasetSampleWriter(url: directory.appendingPathComponent(stem + ".tar"))
        case .files: try FilesSampleWriter(folder: directory.appendingPathComponent(stem, isDirectory: true))
        case .parquet:
            try ParquetSampleWriter(url: directory.appendingPathComponent(stem + ".parquet"), settings: settings)
        case .tfrecord:
            try TFRecordSampleWriter(
                url: directory.appendingPathComponent(stem + ".tfrecord"), imageName: settings.imageFieldName)
        case .dummy: DummySampleWriter()
        }
    }
}

extension SampleWriter {
    /// The members of one successful sample, in the order ``write(_:)`` documents, each name checked with
    /// ``TarWriter/isSafeName(_:)``; none for a row without an image.
    func members(_ row: SampleRow) throws -> [(name: String, data: Data)] {
        guard let image = row.image else { return [] }
        var members = [("\(row.key).\(row.fileExtension)", image), ("\(row.key).json", row.json)]
        if let caption = row.caption { members.append(("\(row.key).txt", caption)) }
        for (name, _) in members where !TarWriter.isSafeName(name) {
            throw BulkFileError("refusing to write a sample named '\(name)'")
        }
        return members
    }
}

/// Writes a shard as a webdataset tar: each sample's files as consecutive members sharing its key.
public final class WebDatasetSampleWriter: SampleWriter {
    private let url: URL
    private let tar: TarWriter

    /// Starts the tar that ``finish()`` renames to `url`.
    public init(url: URL) throws {
        self.url = url
        tar = try TarWriter(url: AtomicFile.temporaryURL(for: url))
    }

    /// Appends the sample's members to the tar; a row without an image adds none.
    public func write(_ row: SampleRow) throws {
        for (name, data) in try members(row) {
            try tar.add(name: name, data: data)
        }
    }

    /// Ends the archive, flushes it and renames it into place.
    public func finish() throws {
        try tar.finish()
        try AtomicFile.commit(AtomicFile.temporaryURL(for: url), to: url)
    }

    /// Closes and removes the unfinished tar.
    public func abandon() {
        tar.abandon()
        try? FileManager.default.removeItem(at: AtomicFile.temporaryURL(for: url))
    }
}

/// Writes a shard as a folder holding each sample's files.
public final class FilesSampleWriter: SampleWriter {
    private let folder: URL
    private let temporary: URL

    /// Creates the temporary folder that ``finish()`` renames to `folder`.
    public init(folder: URL) throws {
        self.folder = folder
        temporary = AtomicFile.temporaryURL(for: folder)
        do {
            try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
        } catch {
            throw BulkFileError("cannot create '\(temporary.path)': \(error.localizedDescription)")
        }
    }

    /// Writes the sample's files into the folder; a row without an image writes none.
    public func write(_ row: SampleRow) throws {
        for (name, data) in try members(row) {
            try data.write(to: temporary.appendingPathComponent(name))
        }
    }

    /// Renames the folder into place.
    public func finish() throws {
        try AtomicFile.commit(temporary, to: folder)
    }

    /// Removes the unfinished folder.
    public func abandon() {
        try? FileManager.default.removeItem(at: temporary)
    }
}

/// Writes nothing: img2dataset's `dummy` format, which downloads and processes every row and keeps only
/// the shard's stats.
public final class DummySampleWriter: SampleWriter {
    /// A writer that writes nothing.
    public init() {}

    /// Passes over the row.
    public func write(_ row: SampleRow) throws {}

    /// Nothing to finish.
    public func finish() throws {}

    /// Nothing to remove.
    public func abandon() {}
}
