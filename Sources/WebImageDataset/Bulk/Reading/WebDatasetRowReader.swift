import Foundation

/// The rows of webdataset shards (``BulkInputFormat/webdataset``): one row per sample, its image carried
/// in the row (``BulkRow/image``) so `bulk` re-resizes and re-encodes it without downloading anything.
///
/// Members are grouped into samples as webdataset groups them: a member's key is its name up to the first
/// `.` of its last path component, its extension the rest (lowercased), and consecutive members with one
/// key are one sample; a name with no such `.` (or a hidden file's) belongs to no sample and is passed by.
/// A sample never spans two archives. Of a sample's members:
/// - the image is the first with an image extension (``imageExtensions``);
/// - `json` (img2dataset's `{key}.json`) gives the row's columns as a JSON Lines row's object would: `url`
///   (``BulkColumns/url``), the caption, kept columns, boxes and expected digest; without a URL there, the
///   row's `url` is `ARCHIVE/KEY` (the archive's file name and the sample's key), so every record still
///   names its source;
/// - `txt` is the caption when the json gives none.
///
/// A sample whose image is missing or larger than ``maximumImageBytes``, or whose json or txt is damaged or
/// longer than the line limit, is a row that fails with ``BulkFailure/unusableSample`` and says why; a
/// damaged archive (a bad header, a truncated member) is a ``BulkInputError``.
final class WebDatasetRowReader: BulkRowReading {
    /// The extensions of a sample's image member, as webdataset's decoders name them.
    static let imageExtensions: Set<String> = [
        "jpg", "jpeg", "png", "webp", "gif", "avif", "heic", "heif", "jxl", "bmp", "tif", "tiff", "ppm", "pgm",
    ]
    /// The largest image member read: 64 MiB, a quarter of the downloader's default response bound, as the
    /// rows under way each hold their image's bytes.
    static let maximumImageBytes = 64 << 20

    private let paths: [String]
    private let columns: BulkColumns
    private let maxLineBytes: Int
    private let maxImageBytes: Int
    private var archiveIndex = -1
    private var archive: TarReader?
    /// The first member of the next sample, read while finding the end of the one before.
    private var pending: (key: String, suffix: String, member: TarReader.Member)?

    /// The archives `paths` name, read in that order.
    init(paths: [String], columns: BulkColumns, maxLineBytes: Int, maxImageBytes: Int = maximumImageBytes) {
        self.paths = paths
        self.columns = columns
        self.maxLineBytes = maxLineBytes
        self.maxImageBytes = maxImageBytes
    }

    /// The archives of `path`: the file itself, or a folder's `.tar` files in name order.
    static func archives(at path: String) throws -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw BulkInputError("cannot read '\(path)': no such file or folder")
        }
        guard isDirectory.boolValue else { return [path] }
        let names = try FileManager.default.contentsOfDirectory(atPath: path)
            .filter { $0.lowercased().hasSuffix(".tar") && !$0.hasPrefix(".") }.sorted()
        guard !names.isEmpty else { throw BulkInputError("the folder '\(path)' holds no .tar files") }
        return names.map { (path as NSString).appendingPathComponent($0) }
    }

    func next() throws -> BulkRow? {
        guard let sample = try nextSample() else { return nil }
        return try row(of: sample)
    }

    /// Reads past samples by their headers only: no image is read.
    func skip(_ count: Int) throws -> Int {
        var skipped = 0
        while skipped < count, try nextSample() != nil { skipped += 1 }
        return skipped
    }

    // MARK: Samples

    private struct Sample {
        var key: String
        var members: [(suffix: String, member: TarReader.Member)]
        var archive: TarReader
    }

    /// The next sample's members, from the current archive or the next ones; nil after the last.
    private func nextSample() throws -> Sample? {
        while true {
            if archive == nil {
                archiveIndex += 1
                guard archiveIndex < paths.count else { return nil }
                archive = try TarReader(path: paths[archiveIndex])
                pending = nil
            }
            guard let reader = archive else { return nil }
            guard let first = try pending ?? nextNamedMember(reader) else {
                archive = nil
                continue
            }
            pending = nil
            var sample = Sample(key: first.key, members: [(first.suffix, first.member)], archive: reader)
            while let member = try nextNamedMember(reader) {
                guard member.key == sample.key else {
                    pending = member
                    break
                }
                sample.members.append((member.suffix, member.member))
            }
            return sample
        }
    }

    /// The next regular member whose name has a key and an extension.
    private func nextNamedMember(_ reader: TarReader) throws -> (key: String, suffix: String, member: TarReader.Member)?
    {
        while let member = try reader.next() {
            guard member.isRegularFile, let (key, suffix) = Self.keyAndSuffix(member.name) else { continue }
            return (key, suffix, member)
        }
        return nil
    }

    /// webdataset's split of a member name: the key is the name up to the first `.` of its last component
    /// (which must not start with it), the suffix the rest, lowercased.
    static func keyAndSuffix(_ name: String) -> (String, String)? {
        let slash = name.lastIndex(of: "/").map { name.index(after: $0) } ?? name.startIndex
        guard let dot = name[slash...].firstIndex(of: "."), dot > slash else { return nil }
        return (String(name[..<dot]), name[name.index(after: dot)...].lowercased())
    }

    // MARK: Rows

    /// A json or txt member of a sample: its bytes, none, or why it cannot be used.
    private enum MemberText {
        case bytes(Data)
        case absent
        case unusable(String)
    }

    private func row(of sample: Sample) throws -> BulkRow {
        let archiveName = (sample.archive.path as NSString).lastPathComponent
        func unusable(_ reason: String) -> BulkRow {
            BulkRow(
                url: "\(archiveName)/\(sample.key)",
                saved: columns.saved.map { BulkColumnValue(name: $0, value: .null) },
                image: .unusable("the sample '\(sample.key)' of '\(archiveName)' \(reason)"))
        }
        func text(_ suffix: String) throws -> MemberText {
            guard let member = sample.members.first(where: { $0.suffix == suffix })?.member else { return .absent }
            guard member.size <= maxLineBytes else {
                return .unusable(
                    "has a \(suffix) member of \(member.size) bytes, more than --max-line-bytes (\(maxLineBytes))")
            }
            return .bytes(try sample.archive.read(member))
        }
        var row = BulkRow(url: "")
        switch try text("json") {
        case .unusable(let reason): return unusable(reason)
        case .bytes(let bytes):
            switch JSONObjectRow.object(bytes) {
            case .failure(let error): return unusable("has a json member that is \(error.reason)")
            case .success(let object):
                do {
                    row = try JSONObjectRow.row(object, columns: columns) { try BlurBox.boxes(in: $0) }
                } catch let error as BlurBox.BoxParseError {
                    return unusable("has a json member whose box column '\(columns.boxes ?? "")': \(error.message)")
                }
            }
        case .absent:
            row.saved = columns.saved.map { BulkColumnValue(name: $0, value: .null) }
        }
        if row.url.isEmpty { row.url = "\(archiveName)/\(sample.key)" }
        if row.caption == nil {
            switch try text("txt") {
            case .unusable(let reason): return unusable(reason)
            case .bytes(let bytes): row.caption = String(decoding: bytes, as: UTF8.self)
            case .absent: break
            }
        }
        let place = "the sample '\(sample.key)' of '\(archiveName)'"
        guard let image = sample.members.first(where: { Self.imageExtensions.contains($0.suffix) }) else {
            let found = sample.members.map { "." + $0.suffix }.joined(separator: ", ")
            row.image = .unusable("\(place) has no image member (only \(found))")
            return row
        }
        guard image.member.size <= maxImageBytes else {
            row.image = .unusable(
                "\(place) has an image member '\(image.member.name.prefix(200))' of \(image.member.size) bytes, more "
                    + "than \(maxImageBytes)")
            return row
        }
        row.image = .file(try sample.archive.read(image.member), member: image.member.name)
        return row
    }
}
