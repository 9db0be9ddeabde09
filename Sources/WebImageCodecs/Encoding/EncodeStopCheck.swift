import Foundation

/// Asked by a long encode whether it should give up, so work nobody waits for any more stops early.
///
/// Where it is asked depends on what the library offers: libwebp calls it from its progress hook (each
/// row of macroblocks, and between a lossless encode's passes), so a WebP encode ends within a fraction of
/// its cost; libavif 0.11 has no progress hook or cancel call, so `AVIFEncoder` asks only between its
/// steps (before the colour conversion, before the AV1 encode), and an AV1 encode once started runs to
/// its end. A stopped encode throws `ImageCodecError` `.stopped`.
///
/// ```swift
/// let flag = Atomic<Bool>(false)  // set by whoever gives up
/// var encoder = WebPEncoder(quality: 80)
/// encoder.stopCheck = EncodeStopCheck { flag.load(ordering: .relaxed) }
/// ```
public struct EncodeStopCheck: Sendable {
    private let shouldStop: @Sendable () -> Bool

    /// A check that asks `shouldStop`; it is called from the encoding thread, often, so it should be cheap.
    public init(_ shouldStop: @escaping @Sendable () -> Bool) {
        self.shouldStop = shouldStop
    }

    /// Whether the encode should stop now.
    public var shouldStopNow: Bool { shouldStop() }

    /// Throws `.stopped` when the encode should stop.
    func check(_ format: String) throws {
        if shouldStop() { throw Self.stopped(format) }
    }

    static func stopped(_ format: String) -> ImageCodecError {
        ImageCodecError(.stopped, "the \(format) encode was stopped by its stop check")
    }
}
