import Foundation

/// An exclusive lock on the files of one shard (or one retry of it): `flock` on `.{stem}.lock` beside
/// them, taken before the owner removes any leftovers and held until its stats are written.
///
/// A second process (a rerun started while the first still runs, two jobs handed the same shards)
/// skips a shard whose lock is held instead of redoing it and deleting the first one's temporary
/// files. The kernel drops the lock when its process dies, so a killed run's shard is taken over at
/// once. Linux NFS clients carry `flock` to the server as a POSIX lock, so processes on several hosts
/// exclude each other too. The file names its owner (host and process id) for the message of a
/// process that skips it.
final class ShardLock: Sendable {
    enum Outcome {
        case acquired(ShardLock)
        /// Another process holds the lock; the owner as its lock file names it.
        case held(owner: String)
    }

    private let descriptor: Int32
    private let url: URL

    private init(descriptor: Int32, url: URL) {
        self.descriptor = descriptor
        self.url = url
    }

    /// Takes the lock of the files named `stem` in `directory` without waiting.
    static func acquire(stem: String, in directory: URL) throws -> Outcome {
        let url = directory.appendingPathComponent(".\(stem).lock")
        let descriptor = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw BulkFileError("cannot open \(url.path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let failure = errno
            var buffer = [UInt8](repeating: 0, count: 128)
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
            guard failure == EWOULDBLOCK else {
                throw BulkFileError("cannot lock \(url.path): \(String(cString: strerror(failure)))")
            }
            // Only printable ASCII of what another process wrote reaches the terminal.
            let owner = String(
                decoding: buffer.prefix(max(0, count)).filter { (0x20..<0x7F).contains($0) }, as: UTF8.self)
            return .held(owner: owner.isEmpty ? "another process" : owner)
        }
        let owner = Array("\(AtomicFile.host) pid \(getpid())".utf8)
        if ftruncate(descriptor, 0) == 0 {
            _ = owner.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        }
        return .acquired(ShardLock(descriptor: descriptor, url: url))
    }

    /// Removes the lock file once the shard is done (its stats written); the lock itself goes with this
    /// object. A process that opened the file just before holds a lock on a removed file, then finds the
    /// stats and skips the shard.
    func finish() {
        unlink(url.path)
    }

    deinit {
        close(descriptor)  // releases the lock
    }
}
