import Foundation
import Locking
import WebImageObjectStore

/// `--dedup phash` with an `s3://` output: the log of kept hashes is a numbered series of objects under the
/// output's prefix, `prefix/.dedup/phash/000000000000`, `…001`, each holding one line `HASH KEY`, so every
/// worker writing the prefix, on any machine, deduplicates against the others.
///
/// A claim first reads the entries other workers added since its process last looked (a GET each, until the
/// next number has no object), then compares; a picture no kept row is near takes the next number by a
/// conditional PUT (``S3Client/putIfAbsent(_:to:)``). When another worker took that number first, its entry is
/// read and compared too before the next number is tried, so of two near-duplicates exactly one is kept,
/// as with a shared directory's log. Claims of one process run one at a time. Each kept picture costs one
/// PUT and a GET that finds no object; each process also reads every other process's entries once (a new
/// process, all of them: a rerun over a large output starts with that many GETs).
final class S3PerceptualIndex: BulkPerceptualIndexing {
    private struct State {
        var table = PerceptualHashTable()
        /// The number of the first entry not read yet.
        var next = 0
    }

    let client: S3Client
    /// `prefix/.dedup/phash/`.
    let folder: S3Location
    private let threshold: Int
    private let state = Lock(State())

    /// The index under `output`'s prefix; hashes at most `threshold` bits apart match.
    init(output: S3ShardOutput, threshold: Int) {
        client = output.client
        folder = output.prefix.child(".dedup/phash")
        self.threshold = min(max(0, threshold), PerceptualHashTable.maximumThreshold)
    }

    /// The object of entry `number`.
    func entry(_ number: Int) -> S3Location {
        let digits = String(number)
        return folder.child(String(repeating: "0", count: max(0, 12 - digits.count)) + digits)
    }

    func claim(hash: UInt64, key: String) async -> BulkDeduplicationClaim {
        do {
            // The lock is held across the store's calls on this thread of its own, so a process's claims take
            // the numbers one after the other; no pool thread waits on it.
            return try await S3Client.detached { [self] in
                try state.withLock { try claim(hash: hash, key: key, state: &$0) }
            }
        } catch {
            return .failed("the phash index at \(folder): \(error)")
        }
    }

    private func claim(hash: UInt64, key: String, state: inout State) throws -> BulkDeduplicationClaim {
        while true {
            try readNewEntries(into: &state)
            if let holder = state.table.match(hash, key: key, threshold: threshold) {
                return holder == key ? .kept : .duplicate(of: holder)
            }
            if try client.putIfAbsent(Data(PerceptualHashTable.line(hash, key).utf8), to: entry(state.next)) {
                state.table.add(hash, key)
                state.next += 1
                return .kept
            }
            // Another worker took the number: its entry is read on the next turn.
        }
    }

    /// Reads the entries from `state.next` on, until a number has no object.
    private func readNewEntries(into state: inout State) throws {
        while let data = try entryData(state.next) {
            let line = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
            guard state.table.add(line: line[...]) else {
                throw S3Error(.badResponse, "\(entry(state.next)) is not an entry of the phash index")
            }
            state.next += 1
        }
    }

    /// The object of entry `number`; nil when there is none.
    private func entryData(_ number: Int) throws(S3Error) -> Data? {
        do {
            return try client.data(entry(number))
        } catch  where error.kind == .notFound {
            return nil
        }
    }
}
