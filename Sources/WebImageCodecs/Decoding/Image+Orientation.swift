import Foundation

extension Image {
    /// Records the orientation the file declares and, unless the options preserve it, turns the frames
    /// upright: they are rotated and mirrored as `orientation` (EXIF 1…8) says, the sizes follow, and
    /// `exifOrientation` becomes 1. Each frame is copied once while it turns, a frame at a time.
    mutating func orient(_ orientation: Int, options: ImageDecodingOptions) {
        let orientation = (1...8).contains(orientation) ? orientation : 1
        fileOrientation = orientation
        guard !options.preserveOrientation, orientation != 1 else {
            exifOrientation = orientation
            return
        }
        frames = frames.map { PixelOps.orient($0, orientation) }
        if orientation >= 5 {
            swap(&width, &height)
            swap(&originalWidth, &originalHeight)
        }
        exifOrientation = 1
    }
}

extension ImageDecodingOptions {
    /// Whether a decode of a file with `orientation` delivers its frames turned a quarter (so a size the
    /// caller asks for, such as a thumbnail box, is meant for the turned frames).
    func turnsQuarter(_ orientation: Int) -> Bool { !preserveOrientation && (5...8).contains(orientation) }
}
