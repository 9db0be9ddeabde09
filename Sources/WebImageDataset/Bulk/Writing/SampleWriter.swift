import Foundation

/// Where a shard's saved samples go: one type per output format (a webdataset tar, a folder of files).
///
/// A writer writes under a temporary name, and ``finish()`` moves the result under its final name, so a
/// reader (or a rerun) never sees a partial shard. The shard's jsonl (every row, failed ones too) is
/// written beside it by the runner, whatever the format.
public protocol SampleWriter: AnyObject {
    /// Writes one successful sample's files, in this order: `{key}.{fileExtension}` (the image),
    /// `{key}.json` (its ``BulkSampleRecord``) and, when `caption` is not nil, `{key}.txt`.
    func write(key: String, image: Data, fileExtension: String, json: Data, caption: Data?) throws

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

    /// A writer of this format for the shard files named `stem` in `directory`.
    public func makeWriter(stem: String, in directory: URL) throws -> any SampleWriter {
        switch self {
        case .webdataset: try WebDatasetSampleWriter(url: directory.appendingPathComponent(stem + ".tar"))
        case .files: try FilesSampleWriter(folder: directory.appendingPathComponent(stem, isDirectory: true))
        }
    }
}

extension SampleWriter {
    /// The members of one sample, in the order ``write(key:image:fileExtension:json:caption:)`` documents;
    /// each name checked with ``TarWriter/isSafeName(_:)``.
    func members(
        key: String, image: Data, fileExtension: String, json: Data, caption: Data?
    ) throws -> [(name: String, data: Data)] {
        var members = [("\(key).\(fileExtension)", image), ("\(key).json", json)]
        if let caption { members.append(("\(key).txt", caption)) }
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

    /// Appends the sample's members to the tar.
    public func write(key: String, image: Data, fileExtension: String, json: Data, caption: Data?) throws {
        for (name, data) in try members(
            key: key, image: image, fileExtension: fileExtension, json: json, caption: caption)
        {
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

    /// Writes the sample's files into the folder.
    public func write(key: String, image: Data, fileExtension: String, json: Data, caption: Data?) throws {
        for (name, data) in try members(
            key: key, image: image, fileExtension: fileExtension, json: json, caption: caption)
        {
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
