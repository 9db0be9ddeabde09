import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A limit on the pixel memory that decodes running at the same time may hold together.
///
/// Each decoder works out, from the size the file declares and before it allocates anything, how many
/// bytes of bitmaps it will hold at its peak (the output frames, a GIF or WebP animation canvas, a scaled
/// copy) and claims them here. A claim that fits waits for nothing; one that does not fit yet waits until
/// earlier decodes release enough, up to `waitTimeout`; a claim larger than the whole `limit` can never
/// fit and fails at once. Both failures are `badImageData` errors that name the limit. A decode claims
/// once, up front, so no decode waits while holding memory (no two decodes can wait on each other).
///
/// Progressive (partial) decodes never wait: when their claim does not fit they show nothing, and the
/// final decode claims normally.
///
/// The downloader makes one budget from `ImageDownloaderConfig.maximumDecodeMemory` (1 GiB by default)
/// and shares it between all its decodes. A decode called directly (`ImageDecoderRegistry.decode`) is
/// budgeted only when its `ImageDecodingOptions.memoryBudget` is set.
///
/// ```swift
/// var options = ImageDecodingOptions()
/// options.memoryBudget = DecodeMemoryBudget(limit: 256 << 20)
/// let image = try ImageDecoderRegistry.shared.decode(data, options: options)
/// ```
public final class DecodeMemoryBudget: @unchecked Sendable {
    // @unchecked Sendable: `inUse` and `peak` are read and written only while `condition` is locked.
    /// The most bytes the claims may hold together.
    public let limit: Int
    /// How long a claim that does not fit yet waits before it fails.
    public let waitTimeout: TimeInterval
    private let condition = NSCondition()
    private var inUse = 0
    private var peak = 0

    /// Creates a budget of `limit` bytes (at least 1); claims wait up to `waitTimeout` seconds for room.
    public init(limit: Int, waitTimeout: TimeInterval = 30) {
        self.limit = max(1, limit)
        self.waitTimeout = waitTimeout
    }

    /// The bytes the current claims hold.
    public var bytesInUse: Int {
        condition.lock()
        defer { condition.unlock() }
        return inUse
    }

    /// The most bytes the claims have held at once since the budget was made.
    public var peakBytesInUse: Int {
        condition.lock()
        defer { condition.unlock() }
        return peak
    }

    /// Claims `bytes`, waiting for room when `waits` is true.
    ///
    /// - Throws: `badImageData` when `bytes` exceeds `limit`, or (after waiting, or at once when `waits` is
    ///   false) when the other claims leave too little.
    func claim(_ bytes: Int, for what: @autoclosure () -> String, waits: Bool) throws -> Claim {
        let bytes = max(0, bytes)
        guard bytes <= limit else {
            throw DecodingFailure.badImageData(
                "\(what()) needs \(bytes) bytes of pixel memory, more than maximumDecodeMemory (\(limit))",
                limit: .maximumDecodeMemory)
        }
        let deadline = Date(timeIntervalSinceNow: waits ? waitTimeout : 0)
        condition.lock()
        while inUse + bytes > limit {
            guard waits, condition.wait(until: deadline) || Date() < deadline else {
                let used = inUse
                condition.unlock()
                throw DecodingFailure.badImageData(
                    "\(what()) needs \(bytes) bytes of pixel memory and other decodes hold \(used) of "
                        + "maximumDecodeMemory (\(limit))" + (waits ? " for longer than \(waitTimeout) s" : ""),
                    limit: .decodeMemoryInUse)
            }
        }
        inUse += bytes
        peak = max(peak, inUse)
        condition.unlock()
        return Claim(budget: self, bytes: bytes)
    }

    fileprivate func release(_ bytes: Int) {
        condition.lock()
        inUse -= bytes
        condition.broadcast()
        condition.unlock()
    }

    /// Bytes held from a budget until `release()` (or until the claim is freed).
    final class Claim: @unchecked Sendable {
        // @unchecked Sendable: `released` is only read and written under `lock`.
        private let budget: DecodeMemoryBudget?
        private let bytes: Int
        private let lock = NSLock()
        private var released = false

        fileprivate init(budget: DecodeMemoryBudget?, bytes: Int) {
            self.budget = budget
            self.bytes = bytes
        }

        /// A claim on no budget.
        static var unbudgeted: Claim { Claim(budget: nil, bytes: 0) }

        /// Gives the bytes back; later calls do nothing.
        func release() {
            lock.lock()
            let first = !released
            released = true
            lock.unlock()
            if first { budget?.release(bytes) }
        }

        deinit { release() }
    }
}

/// Pixel memory a decoder is about to allocate: checked against the budget and against the allocator.
enum PixelMemory {
    /// Claims `bytes` from `options.memoryBudget` (when set) and makes sure the allocator can provide
    /// them, before the decoder allocates. Hold the result until the decode's bitmaps are handed over.
    ///
    /// - Throws: `badImageData` when the budget refuses, or when `malloc` cannot provide `largest` bytes
    ///   (the biggest single bitmap): an allocation that fails is an error, not a crash.
    static func claim(
        _ bytes: Int, largest: Int, options: ImageDecodingOptions, for what: @autoclosure () -> String
    ) throws -> DecodeMemoryBudget.Claim {
        let claim =
            try options.memoryBudget?.claim(bytes, for: what(), waits: options.waitsForMemory) ?? .unbudgeted
        try probe(largest, for: what())
        return claim
    }

    /// Throws `badImageData` when `malloc` cannot provide `bytes` now. Swift arrays trap when their
    /// allocation fails; asking `malloc` first (and freeing at once) turns an address-space or memory limit
    /// into an error. Small sizes are not probed.
    static func probe(_ bytes: Int, for what: @autoclosure () -> String) throws {
        guard bytes >= 1 << 20 else { return }
        guard let memory = malloc(bytes) else {
            throw DecodingFailure.badImageData("\(what()): could not allocate \(bytes) bytes of pixel memory")
        }
        free(memory)
    }

    /// The sum of `values`, saturating at `Int.max`.
    static func sum(_ values: Int...) -> Int {
        values.reduce(0) { total, value in
            let (result, overflow) = total.addingReportingOverflow(max(0, value))
            return overflow ? Int.max : result
        }
    }

    /// What a decoded frame costs beside its pixels: the `ImageFrame` in its array (40 bytes), the pixel
    /// array's heap header and malloc's rounding (about 48), and the decoder's own per-frame records.
    /// Measured at about 170 bytes a frame for a GIF of millions of 1×1 frames; rounded up.
    static let frameOverhead = 192

    /// Bytes of `count` decoded frames of `size`: their pixels and, for an animation (more than one frame),
    /// their bookkeeping; saturating. A still image counts its pixels alone, so the largest image
    /// `maximumImagePixels` allows (16384², exactly 1 GiB) still fits the default 1 GiB budget.
    static func frameBytes(_ size: PixelSize, count: Int = 1) -> Int {
        guard count > 1 else { return bytes(size, count: count) }
        let (perFrame, o1) = bytes(size).addingReportingOverflow(frameOverhead)
        let (total, o2) = perFrame.multipliedReportingOverflow(by: max(0, count))
        return o1 || o2 ? Int.max : total
    }

    /// Bytes of an RGBA8 bitmap of `size`, saturating instead of overflowing.
    static func bytes(_ size: PixelSize, count: Int = 1) -> Int {
        let (pixels, o1) = size.width.multipliedReportingOverflow(by: size.height)
        let (bytes, o2) = pixels.multipliedReportingOverflow(by: 4)
        let (total, o3) = bytes.multipliedReportingOverflow(by: max(0, count))
        return o1 || o2 || o3 ? Int.max : total
    }
}
