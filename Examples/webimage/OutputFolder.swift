import Foundation
import Synchronization
import WebImage

#if canImport(Glibc)
    import Glibc
#endif

/// The `-o` folder: each downloaded file under a name made from its URL, the decoded first frame beside
/// it as `<name>.png` with `--png`.
///
/// Names are safe whatever the URL says: made of letters, digits, `.`, `_` and `-` only (no path
/// separator), never starting with a dot, at most 200 bytes, `download` when nothing is left, and given
/// the image format's extension when they have none. Files are created with `O_CREAT | O_EXCL |
/// O_NOFOLLOW`, so an existing file or a symlink planted in the folder is never written through: the
/// next free name is taken instead (`cat.jpg`, `cat-1.jpg`, `cat-2.jpg`, ...). With `--force` an existing
/// file is replaced by writing a temporary file and renaming it over the name, which replaces a symlink
/// rather than following it. A file that cannot be written fails alone: its outcome carries the error.
final class OutputFolder: Sendable {
    let directory: URL
    private let overwrite: Bool
    /// The next suffix to try per name, so 10,000 downloads of `image.jpg` do not retry every name.
    private let nextSuffix = Mutex<[String: Int]>([:])

    init(path: String, overwrite: Bool) throws {
        directory = URL(fileURLWithPath: path, isDirectory: true)
        self.overwrite = overwrite
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw CLIError("cannot create output directory '\(path)': \(error.localizedDescription)")
        }
    }

    /// Writes what `outcome` holds and records where (or why not) in the outcome; failures save nothing.
    /// With `encoder` (`--format`), the image is encoded and written as `<name>.<format's extension>`
    /// instead of the downloaded bytes.
    func save(_ outcome: DownloadOutcome, decodedPNG: Bool, encoder: (any ImageEncoding)? = nil) -> DownloadOutcome {
        guard outcome.error == nil, let data = outcome.data else { return outcome }
        var outcome = outcome
        let name = Self.safeName(for: outcome.url, format: outcome.image?.format)
        if let encoder {
            do {
                guard let image = outcome.image else { throw CLIError("nothing decoded to encode") }
                let encoded: Data
                do { encoded = try encoder.encode(image) } catch let error as ImageCodecError {
                    throw CLIError("cannot encode as \(encoder.format.rawValue): \(error.message)")
                }
                let stem = (name as NSString).deletingPathExtension
                let ext = encoder.format == .jpeg ? "jpg" : encoder.format.rawValue
                outcome.savedPath = try write(encoded, name: (stem.isEmpty ? "download" : stem) + "." + ext).path
            } catch {
                outcome.saveError = String(describing: error)
            }
            return outcome
        }
        do {
            let saved = try write(data, name: name)
            outcome.savedPath = saved.path
            if decodedPNG, let image = outcome.image {
                let png: Data
                do { png = try PNGEncoder().encode(image) } catch let error as ImageCodecError {
                    throw CLIError("cannot encode as PNG: \(error.message)")
                }
                _ = try write(png, name: saved.lastPathComponent + ".png")
            }
        } catch {
            outcome.saveError = String(describing: error)
        }
        return outcome
    }

    /// A file name for `url`'s last path component that is safe to create in the folder.
    static func safeName(for url: URL, format: ImageFormat?) -> String {
        var name = String(
            url.lastPathComponent.unicodeScalars.map { scalar -> Character in
                let allowed =
                    (scalar.properties.isAlphabetic || scalar.properties.numericType != nil
                        || "._-".unicodeScalars.contains(scalar))
                    && scalar != "/" && scalar.value >= 0x20
                return allowed ? Character(scalar) : "_"
            })
        while name.hasPrefix(".") { name.removeFirst() }
        if name.utf8.count > 200 {
            let ext = (name as NSString).pathExtension
            var stem = String((name as NSString).deletingPathExtension.prefix(150))
            while stem.utf8.count > 180 { stem.removeLast() }
            name = ext.isEmpty || ext.utf8.count > 10 ? stem : stem + "." + ext
        }
        if name.isEmpty || name.allSatisfy({ $0 == "_" || $0 == "." }) { name = "download" }
        if (name as NSString).pathExtension.isEmpty, let format, format != .unknown {
            name += "." + (format == .jpeg ? "jpg" : format.rawValue)
        }
        return name
    }

    /// Writes `data` under `name`, or the first free `name-N.ext` (replacing `name` with `--force`), and
    /// returns the file written.
    private func write(_ data: Data, name: String) throws -> URL {
        if overwrite {
            let file = directory.appendingPathComponent(name)
            try replace(file, with: data)
            return file
        }
        let stem = (name as NSString).deletingPathExtension
        let ext = (name as NSString).pathExtension
        var suffix = nextSuffix.withLock { $0[name] ?? 0 }
        while true {
            let candidate = suffix == 0 ? name : "\(stem)-\(suffix)" + (ext.isEmpty ? "" : ".\(ext)")
            let file = directory.appendingPathComponent(candidate)
            let descriptor = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if descriptor < 0 {
                let code = errno
                // Taken (a file, a directory or a symlink): try the next name.
                if code == EEXIST {
                    suffix += 1
                    continue
                }
                throw CLIError("cannot create \(file.path): \(String(cString: strerror(code)))")
            }
            nextSuffix.withLock { $0[name] = suffix + 1 }
            try writeAll(data, to: descriptor, file: file)
            return file
        }
    }

    /// `--force`: writes a temporary file and renames it over `file`.
    private func replace(_ file: URL, with data: Data) throws {
        let temporary = directory.appendingPathComponent(".webimage-\(UUID().uuidString).tmp")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CLIError("cannot create \(temporary.path): \(String(cString: strerror(errno)))")
        }
        do {
            try writeAll(data, to: descriptor, file: temporary)
        } catch {
            unlink(temporary.path)
            throw error
        }
        guard rename(temporary.path, file.path) == 0 else {
            let code = errno
            unlink(temporary.path)
            throw CLIError("cannot replace \(file.path): \(String(cString: strerror(code)))")
        }
    }

    /// Writes all of `data` to `descriptor` and closes it; a short or failed write removes the file.
    private func writeAll(_ data: Data, to descriptor: Int32, file: URL) throws {
        var failure: Int32 = 0
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count, let base = raw.baseAddress {
                let written = Glibc.write(descriptor, base + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if close(descriptor) != 0, failure == 0 { failure = errno }
        if failure != 0 {
            unlink(file.path)
            throw CLIError("cannot write \(file.path): \(String(cString: strerror(failure)))")
        }
    }
}
