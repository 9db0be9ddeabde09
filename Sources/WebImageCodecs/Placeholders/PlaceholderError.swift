/// Why a BlurHash or ThumbHash could not be made from a frame.
public enum PlaceholderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// BlurHash's component counts must each be 1…9 (the hash's size digit has room for no more).
    case invalidComponents(x: Int, y: Int)
    /// The frame has no pixels, or its `pixels` are shorter than its sizes and `bytesPerRow` need.
    case invalidFrame(width: Int, height: Int, bytesPerRow: Int, byteCount: Int)
    /// ThumbHash's input must fit in 100×100 (`ThumbHash.maximumSide`); downscale first
    /// (`ImagePlaceholders.downscaled(_:toFit:)`).
    case tooLarge(width: Int, height: Int)

    /// A sentence naming the problem.
    public var description: String {
        switch self {
        case .invalidComponents(let x, let y):
            "BlurHash components must be 1…9 each, not \(x)×\(y)"
        case .invalidFrame(let width, let height, let bytesPerRow, let byteCount):
            "a \(width)×\(height) frame with \(bytesPerRow) bytes a row cannot be read from \(byteCount) bytes"
        case .tooLarge(let width, let height):
            "a ThumbHash is made from at most \(ThumbHash.maximumSide)×\(ThumbHash.maximumSide) pixels, not "
                + "\(width)×\(height)"
        }
    }

    /// Throws `invalidFrame` unless `frame` has at least one pixel and every row it declares is in `pixels`.
    static func check(_ frame: ImageFrame) throws(PlaceholderError) {
        let invalid = PlaceholderError.invalidFrame(
            width: frame.width, height: frame.height, bytesPerRow: frame.bytesPerRow, byteCount: frame.pixels.count)
        guard frame.width > 0, frame.height > 0 else { throw invalid }
        let (rowBytes, rowOverflow) = frame.width.multipliedReportingOverflow(by: 4)
        let (before, beforeOverflow) = (frame.height - 1).multipliedReportingOverflow(by: frame.bytesPerRow)
        guard !rowOverflow, !beforeOverflow, frame.bytesPerRow >= rowBytes,
            rowBytes <= frame.pixels.count - before
        else { throw invalid }
    }
}
