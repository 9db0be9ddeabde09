import Synchronization

/// The response-body bytes one downloader holds at a time: `ImageDownloaderConfig.maximumInFlightBodyBytes`.
///
/// `maximumResponseSize` bounds one body; this bounds them all together, so that many small compressed
/// responses that each expand to just under that size (a 214-byte brotli body can decode to 256 MB) cannot
/// add up to many gigabytes. An operation claims each chunk before it keeps it, from the first byte until
/// it hands the whole body to its callers (after decoding) or drops it (a failure, a cancel). A claim that
/// does not fit fails rather than waiting, so no transfer ever waits for another one's bytes: with
/// `inFlightBodyLimit` when other bodies hold the room, with `responseTooLarge` when the body alone is larger
/// than the whole limit.
final class BodyBytesBudget: Sendable {
    /// The most bytes the claims may hold together.
    let limit: Int64
    private let inUse = Atomic<Int64>(0)

    /// A budget of `limit` bytes (at least 1).
    init(limit: Int64) {
        self.limit = max(1, limit)
    }

    /// The bytes the current claims hold.
    var bytesInUse: Int64 { inUse.load(ordering: .relaxed) }

    /// Claims `bytes`; false, claiming nothing, when they do not fit.
    func claim(_ bytes: Int64) -> Bool {
        var current = inUse.load(ordering: .relaxed)
        while true {
            // `current` never exceeds `limit`, so `limit - current` cannot overflow.
            guard bytes <= limit - current else { return false }
            let (exchanged, original) = inUse.compareExchange(
                expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives back `bytes` an earlier claim took.
    func release(_ bytes: Int64) {
        guard bytes > 0 else { return }
        inUse.subtract(bytes, ordering: .relaxed)
    }
}
