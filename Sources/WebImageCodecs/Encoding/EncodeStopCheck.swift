import Foundation

/// Asked by a long encode whether it should give up, so work nobody waits for any more stops early.
///
/// Where it is asked depends on what the library offers: libwebp calls it from its progress hook (each
/// row of macroblocks, and between a lossless encode's passes; an animation between frames), libjpeg from
/// its progress monitor (rows and every pass of the final Huffman and progressive work), libpng's writer
/// before every 16th row, so those encodes end within a fraction of their cost. libavif 0.11 has no progress hook or cancel call:
/// `AVIFEncoder` with a stop check runs the AV1 encode in a child process that it ends when the check says
/// stop (see `AVIFEncoder.stopCheck`). giflib's writer (`GIFEncoder`) is asked between frames and every 16
/// rows; libjxl 0.7 (`JXLEncoder`) only between frames, as it has no hook and aborts on a failing parallel
/// runner. A stopped encode throws `ImageCodecError` `.stopped`.
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

    /// A C callback and its context that ask `check`, for a C encoder's stop hook; valid only inside `body`.
    /// With no check, both are nil.
    static func withCallback<Result>(
        _ check: EncodeStopCheck?,
        _ body: (_ callback: (@convention(c) (UnsafeMutableRawPointer?) -> Int32)?, _ context: UnsafeMutableRawPointer?)
            throws -> Result
    ) rethrows -> Result {
        guard let check else { return try body(nil, nil) }
        // The context points at `check` only while `body` runs; the C encoders call the callback only from
        // inside the call that `body` makes.
        return try withUnsafePointer(to: check) { pointer in
            try body(
                { context in
                    guard let context else { return 0 }
                    return context.assumingMemoryBound(to: EncodeStopCheck.self).pointee.shouldStopNow ? 1 : 0
                }, UnsafeMutableRawPointer(mutating: pointer))
        }
    }

    static func stopped(_ format: String) -> ImageCodecError {
        ImageCodecError(.stopped, "the \(format) encode was stopped by its stop check")
    }
}
