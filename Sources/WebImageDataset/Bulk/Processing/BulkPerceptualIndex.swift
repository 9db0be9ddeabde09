import Foundation
import Locking

/// Where a run claims pictures for ``BulkDeduplication/phash``: a log in the output directory
/// (``BulkPerceptualIndex``) or objects of an `s3://` output (``S3PerceptualIndex``).
protocol BulkPerceptualIndexing: Sendable {
    /// Claims `hash` for the row `key`: kept when no kept row is within the threshold (or the nearest is
    /// this row, from an earlier run of its shard).
    func claim(hash: UInt64, key: String) async -> BulkDeduplicationClaim
}

/// The kept hashes an index has read, in eight tables keyed by one byte of the hash each: two hashes at
/// most 7 bits apart agree in at least one byte, so a claim compares only with the hashes that share a
/// byte with it.
struct PerceptualHashTable {
    /// The largest threshold the byte tables find every match for.
    static let maximumThreshold = 7

    private var hashes: [UInt64] = []
    private var keys: [String] = []
    /// For each of the 8 bytes of a hash, the entries by that byte's value.
    private var tables = [[Int: [Int]]](repeating: [:], count: 8)

    mutating func add(_ hash: UInt64, _ key: String) {
        let entry = hashes.count
        hashes.append(hash)
        keys.append(key)
        for byte in 0..<8 { tables[byte][Int(hash >> (8 * byte) & 0xFF), default: []].append(entry) }
    }

    /// Adds the entry of a log line `HASH KEY`; false when the line is not one.
    mutating func add(line: Substring) -> Bool {
        let parts = line.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let hash = UInt64(parts[0], radix: 16) else { return false }
        add(hash, String(parts[1]))
        return true
    }

    /// The log line of an entry.
    static func line(_ hash: UInt64, _ key: String) -> String { "\(PerceptualHash.hex(hash)) \(key)\n" }

    /// The kept key nearest `hash` within `threshold` bits (this row's own when it is among them).
    func match(_ hash: UInt64, key: String, threshold: Int) -> String? {
        var best: (distance: Int, key: String)?
        for byte in 0..<8 {
            for entry in tables[byte][Int(hash >> (8 * byte) & 0xFF)] ?? [] {
                let distance = PerceptualHash.distance(hash, hashes[entry])
                guard distance <= threshold else { continue }
                if keys[entry] == key { return key }
                if best.map({ distance < $0.distance }) ?? true { best = (distance, keys[entry]) }
            }
        }
        return best?.key
    }
}

/// The output's record of kept perceptual hashes (``BulkDeduplication/phash``): `.dedup/phash.log` in the
/// output directory, a line `HASH KEY` per kept row, appended under `flock` on `.dedup/phash.lock`, so the
/// shards of a run and the workers of an array job on one directory see each other's rows and exactly one
/// of two near-duplicates is kept. Each process holds the log's hashes in memory (``PerceptualHashTable``),
/// read on from where it last stopped, under the lock.
final class BulkPerceptualIndex: BulkPerceptualIndexing {
    private struct State {
        var table = PerceptualHashTable()
        /// How much of the log is read.
        var offset: UInt64 = 0
        var partialLine = Data()
    }

    private let folder: URL
    private let threshold: Int
    private let state = Lock(State())

    /// The index of the output directory `directory`; hashes at most `threshold` bits apart match.
    init(directory: URL, threshold: Int) {
        folder = directory.appendingPathComponent(".dedup", isDirectory: true)
        self.threshold = min(max(0, threshold), PerceptualHashTable.maximumThreshold)
    }

    func claim(hash: UInt64, key: String) -> BulkDeduplicationClaim {
        state.withLock { state in
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let lock = open(folder.appendingPathComponent("phash.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
                guard lock >= 0 else {
                    return .failed("cannot open the phash lock: \(String(cString: strerror(errno)))")
                }
                defer { close(lock) }
                guard flock(lock, LOCK_EX) == 0 else {
                    return .failed("cannot lock the phash index: \(String(cString: strerror(errno)))")
                }
                let log = folder.appendingPathComponent("phash.log")
                try readNewLines(of: log, into: &state)
                if let holder = state.table.match(hash, key: key, threshold: threshold) {
                    return holder == key ? .kept : .duplicate(of: holder)
                }
                let line = Data(PerceptualHashTable.line(hash, key).utf8)
                try append(line, to: log)
                state.offset += UInt64(line.count)
                state.table.add(hash, key)
                return .kept
            } catch {
                return .failed("the phash index: \(error.localizedDescription)")
            }
        }
    }

    private func readNewLines(of log: URL, into state: inout State) throws {
        guard let handle = try? FileHandle(forReadingFrom: log) else { return }
        defer { try? handle.close() }
        try handle.seek(toOffset: state.offset)
        let data = try handle.readToEnd() ?? Data()
        state.offset += UInt64(data.count)
        var pending = state.partialLine + data
        while let end = pending.firstIndex(of: 0x0A) {
            let line = String(decoding: pending[pending.startIndex..<end], as: UTF8.self)
            pending = pending[(end + 1)...]
            _ = state.table.add(line: line[...])
        }
        state.partialLine = Data(pending)
    }

    private func append(_ line: Data, to log: URL) throws {
        let descriptor = open(log.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw BulkFileError("cannot open \(log.path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let written = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == line.count else {
            throw BulkFileError("cannot append to \(log.path): \(String(cString: strerror(errno)))")
        }
    }
}
