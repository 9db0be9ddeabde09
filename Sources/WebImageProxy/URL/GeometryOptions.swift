/// Where a crop, a result crop or an extension is anchored: imgproxy's gravity (`g`, and the gravity
/// arguments of `c`, `ex` and `exar`).
///
/// For the nine directions, an offset of magnitude 1 or more is pixels (multiplied by `dpr` where the step
/// runs after the scale), one below 1 is a fraction of the side. North and west offsets move away from
/// the top and left edge, south and east ones away from the bottom and right edge, centre ones right and
/// down. `focusPoint` places the centre of what is kept at `x`×width, `y`×height, each in 0…1.
///
/// ```swift
/// let gravity = Gravity(.southEast, x: 10, y: 10)  // g:soea:10:10
/// ```
public struct Gravity: Sendable, Hashable {
    /// The anchor. `.centre` by default.
    public var type: GravityType
    /// The horizontal offset (pixels, a fraction, or the focus point's x). `0` by default.
    public var x: Double
    /// The vertical offset (pixels, a fraction, or the focus point's y). `0` by default.
    public var y: Double

    /// A gravity; centre without offsets by default.
    public init(_ type: GravityType = .centre, x: Double = 0, y: Double = 0) {
        self.type = type
        self.x = x
        self.y = y
    }

    /// `type:x:y`, or the type alone without offsets (`ce`): one spelling for the canonical options.
    var canonical: String {
        x == 0 && y == 0 && type != .focusPoint ? type.rawValue : "\(type.rawValue):\(x):\(y)"
    }
}

/// imgproxy's gravity types, by their URL names.
public enum GravityType: String, Sendable, Hashable, CaseIterable {
    /// `ce`: the middle.
    case centre = "ce"
    /// `no`: the top edge, centred.
    case north = "no"
    /// `so`: the bottom edge, centred.
    case south = "so"
    /// `ea`: the right edge, centred.
    case east = "ea"
    /// `we`: the left edge, centred.
    case west = "we"
    /// `noea`: the top right corner.
    case northEast = "noea"
    /// `nowe`: the top left corner.
    case northWest = "nowe"
    /// `soea`: the bottom right corner.
    case southEast = "soea"
    /// `sowe`: the bottom left corner.
    case southWest = "sowe"
    /// `fp`: a focus point, `x` and `y` fractions of the width and height.
    case focusPoint = "fp"
    /// `sm`: smart, the most interesting part of the image (`AttentionCrop`), for crops only (`g`, `c`), as
    /// in imgproxy; without offsets. `ResizePlan` alone places it in the middle: the transformer, which has
    /// the pixels, turns it into a focus point first.
    case smart = "sm"

    var isNorth: Bool { self == .north || self == .northEast || self == .northWest }
    var isSouth: Bool { self == .south || self == .southEast || self == .southWest }
    var isEast: Bool { self == .east || self == .northEast || self == .southEast }
    var isWest: Bool { self == .west || self == .northWest || self == .southWest }
}

/// `extend` / `extend_aspect_ratio`: whether the result is enlarged to the requested size (or aspect
/// ratio) with background, and where the image sits on it.
public struct ExtendOption: Sendable, Hashable {
    /// Whether the step runs. `false` by default.
    public var enabled: Bool
    /// Where the image sits on the larger canvas. Centre by default.
    public var gravity: Gravity

    /// An extension; off, centred by default.
    public init(enabled: Bool = false, gravity: Gravity = Gravity()) {
        self.enabled = enabled
        self.gravity = gravity
    }
}

/// `crop`: the part of the source kept before anything else, as imgproxy sizes it: a side of 1 or more is
/// pixels, one in (0, 1) a fraction of the source's side, 0 the whole side.
public struct CropOption: Sendable, Hashable {
    /// The width: pixels, a fraction, or 0 for the whole width.
    public var width: Double
    /// The height: pixels, a fraction, or 0 for the whole height.
    public var height: Double
    /// The crop's own gravity; nil uses the general `gravity` option.
    public var gravity: Gravity?

    /// A crop.
    public init(width: Double, height: Double, gravity: Gravity? = nil) {
        self.width = width
        self.height = height
        self.gravity = gravity
    }
}

/// `padding`: background added around the result, in pixels before `dpr`.
public struct PaddingOption: Sendable, Hashable {
    /// Above the image. `0` by default.
    public var top = 0
    /// Right of the image. `0` by default.
    public var right = 0
    /// Below the image. `0` by default.
    public var bottom = 0
    /// Left of the image. `0` by default.
    public var left = 0

    /// Padding on each side; none by default.
    public init(top: Int = 0, right: Int = 0, bottom: Int = 0, left: Int = 0) {
        self.top = top
        self.right = right
        self.bottom = bottom
        self.left = left
    }

    /// Whether any side is padded.
    public var isEnabled: Bool { top != 0 || right != 0 || bottom != 0 || left != 0 }
}
