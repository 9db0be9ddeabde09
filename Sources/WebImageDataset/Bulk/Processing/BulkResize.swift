import WebImage

/// How the bulk engine sizes each image, as img2dataset's `resize_mode` does: a square box of
/// ``size`` pixels and a mode that says how the image meets it.
///
/// ```swift
/// var settings = BulkSettings()
/// settings.resize = BulkResize(mode: .keepRatio, size: 384, onlyIfBigger: true)
/// ```
///
/// Resampling is Lanczos-3 both ways (img2dataset shrinks with OpenCV's area filter and enlarges with
/// Lanczos-4). A box region (``BulkImageTransformer``) is blurred after the scaling and before the crop or
/// the border, as img2dataset does.
public struct BulkResize: Sendable, Hashable {
    /// How the image meets the box.
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// The shorter side becomes the size, the aspect ratio kept, nothing cropped (img2dataset's
        /// `keep_ratio`; the CC3M and CC12M recipes).
        case keepRatio
        /// The shorter side becomes the size, then the centre square is cut out (img2dataset's
        /// `center_crop`; `--resize-mode fill`).
        case centerCrop
        /// The longer side becomes the size, the aspect ratio kept (img2dataset's `keep_ratio_largest`;
        /// `--resize-mode fit` and `longest`).
        case keepRatioLargest
        /// The longer side becomes the size, then the image is centred on a square of the border colour
        /// (img2dataset's `border`; `--resize-mode pad`).
        case border
    }

    /// How the image meets the box.
    public var mode: Mode
    /// The box's side in pixels.
    public var size: Int
    /// Whether an image is left at its size (neither scaled nor cropped nor bordered) unless the side
    /// the mode scales to ``size`` is larger than it: the shorter side for ``Mode/keepRatio`` and
    /// ``Mode/centerCrop``, the longer for the others (img2dataset's `resize_only_if_bigger`). `false`
    /// by default: small images are enlarged.
    public var onlyIfBigger: Bool
    /// The colour of ``Mode/border``'s margins; white by default (img2dataset's).
    public var borderColor: ImageColor

    /// A resize to a `size` square in `mode`.
    public init(mode: Mode, size: Int, onlyIfBigger: Bool = false, borderColor: ImageColor = .white) {
        self.mode = mode
        self.size = size
        self.onlyIfBigger = onlyIfBigger
        self.borderColor = borderColor
    }

    /// What becomes of an image of `original` pixels (the file's size): the size it is scaled to, and
    /// whether it is then cropped or bordered to the square. nil when it keeps its size
    /// (``onlyIfBigger`` and not larger than the box).
    func plan(original: PixelSize, decoded: PixelSize) -> (scaled: PixelSize, finish: Finish)? {
        let shorterScaled = mode == .keepRatio || mode == .centerCrop
        let side =
            shorterScaled ? min(original.width, original.height) : max(original.width, original.height)
        guard !onlyIfBigger || side > size else { return nil }
        // The target comes from the file's own size, as img2dataset's does (albumentations 1.4.24, what
        // `pip install img2dataset==1.47.0` brings: scale = size / side, each side × scale truncated), so the
        // sizes are the same whatever the decoder already shrank (DCT scaling); the transformer scales what
        // it made to this target. center-crop's intermediate size never shows (the result is the square):
        // it rounds, as the resampler's fill does, so cropping its centre gives the fill's own pixels.
        let width = Double(max(1, original.width))
        let height = Double(max(1, original.height))
        let scale = Double(size) / (shorterScaled ? min(width, height) : max(width, height))
        let truncates = mode != .centerCrop
        func scaled(_ value: Double) -> Int { max(1, truncates ? Int(value * scale) : Int((value * scale).rounded())) }
        var target = PixelSize(width: scaled(width), height: scaled(height))
        // The side the mode fixes is exactly the size, even where the float product falls just short.
        if (width <= height) == shorterScaled { target.width = size } else { target.height = size }
        switch mode {
        case .keepRatio, .keepRatioLargest: return (target, .none)
        case .centerCrop: return (target, .crop)
        case .border: return (target, .border)
        }
    }

    /// The step after the scaling.
    enum Finish {
        case none, crop, border
    }

    /// The smallest decode the resize can start from.
    var minimumDecodeSize: MinimumDecodeSize {
        let box = PixelSize(width: size, height: size)
        switch mode {
        case .keepRatio, .centerCrop: return MinimumDecodeSize(size: box, coverage: .fill)
        case .keepRatioLargest, .border: return MinimumDecodeSize(size: box, coverage: .fit)
        }
    }

    /// Part of the transformer's key.
    var key: String {
        "\(mode.rawValue)(\(size)\(onlyIfBigger ? ",only-if-bigger" : "")\(mode == .border ? ",\(borderColor)" : ""))"
    }
}
