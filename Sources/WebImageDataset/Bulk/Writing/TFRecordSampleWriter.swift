import Foundation

/// Writes a shard as img2dataset's `tfrecord` output: `{shard:05}.tfrecord`, one `tf.train.Example` per
/// saved image (``TFExample``), in TFRecord framing: each record is its length (8 bytes, little-endian),
/// the masked CRC-32C of those 8 bytes, the Example, and the masked CRC-32C of the Example (``CRC32C``).
///
/// The features are img2dataset's: `key`, the image under ``BulkSettings/imageFieldName`` (`jpg`, …),
/// `txt` (the caption, empty when the row has none) when captions are written, and every field of the
/// record: text as bytes (an absent value as empty bytes, as img2dataset writes Python's None), whole
/// numbers and booleans as int64, fractions as float. Failed rows have no Example; the shard's Parquet
/// file and jsonl hold them.
public final class TFRecordSampleWriter: SampleWriter {
    private let url: URL
    private let temporary: URL
    private let file: FileHandle
    private let imageName: String

    /// Starts the file that ``finish()`` renames to `url`; the image feature is named `imageName`.
    public init(url: URL, imageName: String) throws {
        self.url = url
        self.imageName = imageName
        temporary = AtomicFile.temporaryURL(for: url)
        file = try AtomicFile.createEmpty(at: temporary)
    }

    /// Appends the row's Example; a row without an image adds none.
    public func write(_ row: SampleRow) throws {
        guard let image = row.image else { return }
        let example = Self.example(row, image: image, imageName: imageName).serialized()
        let length = (0..<8).map { UInt8(truncatingIfNeeded: UInt64(example.count) >> (8 * UInt64($0))) }
        var record = length + Self.littleEndian(CRC32C.masked(length))
        record += example
        record += Self.littleEndian(CRC32C.masked(example))
        do {
            try file.write(contentsOf: record)
        } catch {
            throw BulkFileError("cannot write '\(temporary.path)': \(error.localizedDescription)")
        }
    }

    /// Flushes the file and renames it into place.
    public func finish() throws {
        do {
            try file.synchronize()
            try file.close()
        } catch {
            throw BulkFileError("cannot write '\(temporary.path)': \(error.localizedDescription)")
        }
        try AtomicFile.commit(temporary, to: url)
    }

    /// Closes and removes the unfinished file.
    public func abandon() {
        try? file.close()
        try? FileManager.default.removeItem(at: temporary)
    }

    /// The Example of a saved sample: `key`, the image, `txt` and the record's fields.
    static func example(_ row: SampleRow, image: Data, imageName: String) -> TFExample {
        func text(_ value: String?) -> TFExample.Feature { .bytes([Array((value ?? "").utf8)]) }
        func whole(_ value: Int?) -> TFExample.Feature { value.map { .int64s([Int64($0)]) } ?? text(nil) }
        let record = row.record
        var features: [(String, TFExample.Feature)] = [
            ("key", text(row.key)), (imageName, .bytes([[UInt8](image)])),
        ]
        if let caption = row.caption { features.append(("txt", .bytes([[UInt8](caption)]))) }
        features += [
            ("url", text(record.url)), ("status", text(record.status.rawValue)),
            ("error_message", text(record.errorMessage)), ("error_code", text(record.errorCode)),
            ("caption", text(record.caption)), ("ms", whole(record.milliseconds)),
            ("attempts", whole(record.attempts)), ("width", whole(record.width)), ("height", whole(record.height)),
            ("original_width", whole(record.originalWidth)), ("original_height", whole(record.originalHeight)),
        ]
        if record.recordsEXIF { features.append(("exif", text(record.exif))) }
        if record.recordsPHash { features.append(("phash", text(record.phash))) }
        if let algorithm = record.hashAlgorithm { features.append((algorithm.rawValue, text(record.hash))) }
        for column in record.saved {
            let feature: TFExample.Feature =
                switch column.value {
                case .string(let value): text(value)
                case .int(let value): .int64s([value])
                case .bool(let value): .int64s([value ? 1 : 0])
                case .double(let value): .floats([Float(value)])
                case .float(let value): .floats([value])
                case .null: text(nil)
                }
            features.append((column.name, feature))
        }
        return TFExample(features: features.map { (name: $0.0, feature: $0.1) })
    }

    private static func littleEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * UInt32($0))) }
    }
}
