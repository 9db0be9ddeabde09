import CLCMS
import Foundation
import Locking
import Logging

/// The colour space a file declares, as a decoder found it.
enum EmbeddedColorSpace: Sendable {
    /// An ICC profile (JPEG APP2, PNG iCCP, WebP ICCP, AVIF colr, JPEG XL).
    case icc(Data)
    /// PNG's gAMA (file gamma, e.g. 0.45455) and, when present, cHRM (white, red, green, blue x/y).
    case gamma(Double, chromaticities: [Double]?)
    /// ITU-T H.273 code points (AVIF's `nclx` colour box): colour primaries and transfer characteristics.
    case cicp(primaries: Int, transfer: Int)
}

/// Colour management with LittleCMS: files that declare a colour space are converted to sRGB (or keep
/// their profile, with `ImageColorSpace.preserve`).
///
/// Transforms are built once per distinct profile and reused (a cache bounded in entries and in the
/// bytes of the profiles it keys, see `ProfileCache`); a profile that is sRGB in all but name (a
/// matrix/TRC profile with sRGB's colorants and tone curve) costs nothing. Profiles LittleCMS cannot read,
/// whose colour space does not match the pixels, or larger than `options.maximumColorProfileBytes`, are
/// ignored: the pixels are kept as stored, as browsers do.
enum ColorManagement {
    /// Applies `source` to every frame of `image` as `options.colorSpace` asks.
    static func apply(_ source: EmbeddedColorSpace?, to image: inout Image, options: ImageDecodingOptions) {
        guard let source else { return }
        switch source {
        case .icc(let data):
            guard isUsable(data, format: image.format, options: options) else { return }
            let key = [UInt8](data)
            // Profiles seen before (most files carry one of a handful) skip the parsing and the sRGB test.
            if options.colorSpace == .sRGB {
                if caches.withLock({ $0.knownSRGB(key) }) { return }
                if let cached = caches.withLock({ $0.transform(for: key) }) { return convert(&image, with: cached) }
            }
            guard let profile = Profile(data) else { return }
            guard profile.colorSpace == cmsSigRgbData || profile.colorSpace == cmsSigGrayData else { return }
            if options.colorSpace == .preserve {
                if profile.colorSpace == cmsSigRgbData { image.iccProfile = data }
                return
            }
            if profile.isSRGB {
                caches.withLock { $0.rememberSRGB(key) }
                return
            }
            guard let transform = transform(for: key, profile: profile) else { return }
            convert(&image, with: transform)
        case .cicp(let primaries, let transfer):
            if options.colorSpace == .preserve {
                image.cicp = CICPDescription(colorPrimaries: primaries, transferCharacteristics: transfer)
            }
            if HDRToneMapper.isHDR(transfer: transfer) {
                guard options.colorSpace == .sRGB, let mapper = HDRToneMapper(primaries: primaries, transfer: transfer)
                else { return }
                for index in image.frames.indices { mapper.map(&image.frames[index].pixels) }
                return
            }
            guard let profile = Profile(cicpPrimaries: primaries, transfer: transfer) else { return }
            if options.colorSpace == .preserve {
                image.iccProfile = profile.data
                return
            }
            let key = Data("cicp \(primaries)/\(transfer)".utf8)
            guard let transform = transform(for: key, profile: profile) else { return }
            convert(&image, with: transform)
        case .gamma(let gamma, let chromaticities):
            // Gamma 1/2.2, alone or with sRGB's white and primaries, is what encoders (ImageMagick among
            // them) write for sRGB files: it is taken as sRGB, as browsers take it.
            if isSRGBGamma(gamma, chromaticities: chromaticities) { return }
            guard options.colorSpace == .sRGB, gamma > 0.01, gamma < 10 else { return }
            let key = Data("gAMA \(gamma) cHRM \(chromaticities ?? [])".utf8)
            guard let profile = Profile(gamma: gamma, chromaticities: chromaticities),
                let transform = transform(for: key, profile: profile)
            else { return }
            convert(&image, with: transform)
        }
    }

    /// Whether PNG gAMA (and cHRM) are what encoders write for sRGB files: gamma 1/2.2, alone or with
    /// sRGB's white and primaries.
    static func isSRGBGamma(_ gamma: Double, chromaticities: [Double]?) -> Bool {
        abs(gamma - 1 / 2.2) < 0.0005 && (chromaticities.map(isSRGBChromaticities) ?? true)
    }

    /// The transform to sRGB that `apply` would use for `source`, built for RGBA16 input (a 16-bit PNG's
    /// samples, converted before they are reduced to 8 bits, so the conversion does not stretch 8-bit
    /// steps); nil wherever `apply` would leave the pixels as stored or keep the profile. Profiles larger
    /// than the limit get nil without a warning: the 8-bit path that follows warns.
    static func sRGBTransform16(
        for source: EmbeddedColorSpace, options: ImageDecodingOptions, output16: Bool = false
    ) -> Transform? {
        guard options.colorSpace == .sRGB else { return nil }
        let profile: Profile
        let key: [UInt8]
        switch source {
        case .icc(let data):
            guard data.count <= options.maximumColorProfileBytes, let opened = Profile(data),
                opened.colorSpace == cmsSigRgbData || opened.colorSpace == cmsSigGrayData, !opened.isSRGB
            else { return nil }
            profile = opened
            key = Array((output16 ? "RGBA16>16 " : "RGBA16 ").utf8) + [UInt8](data)
        case .gamma(let gamma, let chromaticities):
            guard !isSRGBGamma(gamma, chromaticities: chromaticities), gamma > 0.01, gamma < 10,
                let made = Profile(gamma: gamma, chromaticities: chromaticities)
            else { return nil }
            profile = made
            key = Array("\(output16 ? "RGBA16>16" : "RGBA16") gAMA \(gamma) cHRM \(chromaticities ?? [])".utf8)
        case .cicp:
            return nil
        }
        if let cached = caches.withLock({ $0.transform(for: key) }) { return cached }
        guard let made = Transform(from: profile, inputBytesPerSample: 2, outputBytesPerSample: output16 ? 2 : 1)
        else { return nil }
        return caches.withLock { $0.remember(made, for: key) }
    }

    /// RGBA16 `pixels` (`width` × `height`, rows packed) through a transform from `sRGBTransform16`, as
    /// RGBA8; alpha is rounded to 8 bits.
    static func convert16(_ pixels: [UInt16], width: Int, height: Int, with transform: Transform) -> [UInt8] {
        converted(pixels, width: width, height: height, by: transform) { UInt8((UInt32($0) + 128) / 257) }
    }

    /// RGBA16 `pixels` converted by `transform` (made with `outputBytesPerSample: 2`), to RGBA16.
    static func convert16(_ pixels: [UInt16], width: Int, height: Int, to transform: Transform) -> [UInt16] {
        converted(pixels, width: width, height: height, by: transform) { $0 }
    }

    /// RGBA16 `pixels` through `transform` into RGBA of `Output` samples, each alpha made by `alpha`.
    private static func converted<Output: FixedWidthInteger>(
        _ pixels: [UInt16], width: Int, height: Int, by transform: Transform, alpha: (UInt16) -> Output
    ) -> [Output] {
        let count = width * height
        // Alpha first: LittleCMS leaves extra channels alone where it does not copy them (gray profiles).
        var output = [Output](repeating: 0, count: count * 4)
        for index in 0..<count { output[index * 4 + 3] = alpha(pixels[index * 4 + 3]) }
        let outputRow = width * 4 * MemoryLayout<Output>.size
        pixels.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                guard let source = input.baseAddress, let destination = out.baseAddress else { return }
                for row in 0..<height {
                    cmsDoTransform(
                        transform.handle, source + row * width * 8, destination + row * outputRow, UInt32(width))
                }
            }
        }
        return output
    }

    /// Whether PNG cHRM values are sRGB's (BT.709 primaries, D65 white) to the chunk's precision.
    static func isSRGBChromaticities(_ values: [Double]) -> Bool {
        let srgb = [0.3127, 0.3290, 0.64, 0.33, 0.30, 0.60, 0.15, 0.06]
        return values.count == 8 && zip(values, srgb).allSatisfy { abs($0 - $1) < 0.0011 }
    }

    /// Whether a profile of `data.count` bytes is within `options.maximumColorProfileBytes`; logs a
    /// warning when it is not (the caller then leaves the pixels as stored).
    static func isUsable(_ data: Data, format: ImageFormat, options: ImageDecodingOptions) -> Bool {
        guard data.count > options.maximumColorProfileBytes else { return true }
        logger.warning(
            "ignoring an ICC profile larger than maximumColorProfileBytes: the pixels keep their stored colours",
            metadata: [
                "format": "\(format.rawValue)", "profile_bytes": "\(data.count)",
                "limit": "\(options.maximumColorProfileBytes)",
            ])
        return false
    }

    /// Where the warnings about ignored profiles go (through the process's `LoggingSystem`).
    private static let logger = Logger(label: "WebImage.ColorManagement")

    /// Converts raw CMYK ink amounts (4 bytes a pixel, 0 = no ink) through `profileData` into opaque sRGB
    /// RGBA in place; false when the profile is not a CMYK profile LittleCMS can use.
    static func convertCMYK(_ pixels: inout [UInt8], profileData: Data) -> Bool {
        guard let profile = Profile(profileData), profile.colorSpace == cmsSigCmykData,
            let transform = transform(for: profileData, profile: profile)
        else { return false }
        let count = pixels.count / 4
        var output = [UInt8](repeating: 255, count: pixels.count)
        pixels.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                cmsDoTransform(transform.handle, input.baseAddress, out.baseAddress, UInt32(count))
            }
        }
        pixels = output
        return true
    }

    /// Whether `data` is a profile of a CMYK colour space LittleCMS can read.
    static func isCMYKProfile(_ data: Data) -> Bool {
        Profile(data)?.colorSpace == cmsSigCmykData
    }

    private static func convert(_ image: inout Image, with transform: Transform) {
        for index in image.frames.indices {
            let frame = image.frames[index]
            var output = frame.pixels
            frame.pixels.withUnsafeBytes { input in
                output.withUnsafeMutableBytes { out in
                    guard let source = input.baseAddress, let destination = out.baseAddress else { return }
                    for row in 0..<frame.height {
                        let offset = row * frame.bytesPerRow
                        cmsDoTransform(
                            transform.handle, source + offset, destination + offset, UInt32(frame.width))
                    }
                }
            }
            image.frames[index].pixels = output
        }
    }

    // MARK: Transforms

    /// A LittleCMS transform to sRGB. `cmsFLAGS_NOCACHE` makes `cmsDoTransform` safe from several threads
    /// at once (the one-pixel cache is the only state a transform changes).
    final class Transform: @unchecked Sendable {
        // @unchecked Sendable: the handle is created once and only passed to cmsDoTransform, which with
        // cmsFLAGS_NOCACHE reads the transform and writes nothing in it.
        let handle: cmsHTRANSFORM

        init?(from profile: Profile, inputBytesPerSample: UInt32 = 1, outputBytesPerSample: UInt32 = 1) {
            let space = profile.colorSpace
            let input: UInt32
            if space == cmsSigCmykData {
                input = cmsFormatter(colorspace: PT_CMYK, channels: 4, extra: 0)
            } else if space == cmsSigGrayData {
                // The gray value is the first of RGBA's four bytes; alpha stays where it is in the output.
                input = cmsFormatter(colorspace: PT_GRAY, channels: 1, extra: 3, bytes: inputBytesPerSample)
            } else {
                input = cmsFormatter(colorspace: PT_RGB, channels: 3, extra: 1, bytes: inputBytesPerSample)
            }
            let output = cmsFormatter(colorspace: PT_RGB, channels: 3, extra: 1, bytes: outputBytesPerSample)
            let flags =
                UInt32(cmsFLAGS_NOCACHE) | (space == cmsSigRgbData ? UInt32(cmsFLAGS_COPY_ALPHA) : 0)
            let srgb = cmsCreate_sRGBProfile()
            defer { cmsCloseProfile(srgb) }
            guard
                let handle = cmsCreateTransform(
                    profile.handle, input, srgb, output, UInt32(INTENT_PERCEPTUAL), flags)
            else { return nil }
            self.handle = handle
        }

        deinit { cmsDeleteTransform(handle) }
    }

    /// The transforms already built and the profiles found to be sRGB, for the life of the process.
    static let caches = Lock(ProfileCache())

    /// What `ColorManagement` remembers about profiles it has seen, keyed by their bytes.
    ///
    /// Bounded twice: at most `capacity` entries of each kind, and at most `byteLimit` bytes of keys
    /// altogether (a transform is about as large as its profile's tables, so the keys' bytes stand for the
    /// memory both hold). A kind that would pass either bound is emptied first, then the other too if
    /// the bytes still do not fit; a profile larger than `byteLimit` by itself is used but not kept.
    /// Keyed by byte arrays, not `Data`: LeakSanitizer cannot see into a `Data` held by a global and
    /// would report every cached profile as leaked.
    struct ProfileCache {
        static let capacity = 32
        /// 8 MiB: a few hundred ordinary profiles, or two of the largest `maximumColorProfileBytes` allows.
        static let byteLimit = 8 << 20

        private(set) var transforms: [[UInt8]: Transform] = [:]
        private(set) var srgb: Set<[UInt8]> = []
        /// The bytes of every key held.
        private(set) var bytes = 0

        func knownSRGB(_ key: [UInt8]) -> Bool { srgb.contains(key) }
        func transform(for key: [UInt8]) -> Transform? { transforms[key] }

        mutating func rememberSRGB(_ key: [UInt8]) {
            guard !srgb.contains(key), makeRoom(for: key.count, clearingSRGBFirst: true) else { return }
            srgb.insert(key)
            bytes += key.count
        }

        /// Keeps `transform` under `key`, or the one another thread kept first; returns the one kept.
        mutating func remember(_ transform: Transform, for key: [UInt8]) -> Transform {
            if let raced = transforms[key] { return raced }
            guard makeRoom(for: key.count, clearingSRGBFirst: false) else { return transform }
            transforms[key] = transform
            bytes += key.count
            return transform
        }

        /// Empties what must go for `count` more bytes and one more entry; false when `count` alone is
        /// over `byteLimit`.
        private mutating func makeRoom(for count: Int, clearingSRGBFirst: Bool) -> Bool {
            guard count <= Self.byteLimit else { return false }
            if clearingSRGBFirst ? srgb.count >= Self.capacity : transforms.count >= Self.capacity {
                clearingSRGBFirst ? clearSRGB() : clearTransforms()
            }
            if bytes + count > Self.byteLimit { clearingSRGBFirst ? clearSRGB() : clearTransforms() }
            if bytes + count > Self.byteLimit { clearingSRGBFirst ? clearTransforms() : clearSRGB() }
            return true
        }

        private mutating func clearSRGB() {
            bytes -= srgb.reduce(0) { $0 + $1.count }
            srgb.removeAll()
        }

        private mutating func clearTransforms() {
            bytes -= transforms.keys.reduce(0) { $0 + $1.count }
            transforms.removeAll()
        }
    }

    private static func transform(for key: Data, profile: Profile) -> Transform? {
        transform(for: [UInt8](key), profile: profile)
    }

    private static func transform(for key: [UInt8], profile: Profile) -> Transform? {
        if let cached = caches.withLock({ $0.transform(for: key) }) { return cached }
        guard let made = Transform(from: profile) else { return nil }
        return caches.withLock { $0.remember(made, for: key) }
    }

    // MARK: Profiles

    /// An open LittleCMS profile.
    final class Profile {
        let handle: cmsHPROFILE

        init?(_ data: Data) {
            guard data.count >= 132,
                let handle = data.withUnsafeBytes({ raw in
                    raw.baseAddress.flatMap { cmsOpenProfileFromMem($0, UInt32(clamping: raw.count)) }
                })
            else { return nil }
            self.handle = handle
        }

        /// An RGB profile for PNG's gAMA (file gamma: samples = linear^gamma) and cHRM; sRGB's D65
        /// white and primaries when cHRM is absent.
        init?(gamma: Double, chromaticities: [Double]?) {
            let c = chromaticities ?? [0.3127, 0.3290, 0.64, 0.33, 0.30, 0.60, 0.15, 0.06]
            guard c.count == 8, c.allSatisfy({ $0 > 0 && $0 < 1 }) else { return nil }
            var white = cmsCIExyY(x: c[0], y: c[1], Y: 1)
            var primaries = cmsCIExyYTRIPLE(
                Red: cmsCIExyY(x: c[2], y: c[3], Y: 1), Green: cmsCIExyY(x: c[4], y: c[5], Y: 1),
                Blue: cmsCIExyY(x: c[6], y: c[7], Y: 1))
            guard let curve = cmsBuildGamma(nil, 1 / gamma) else { return nil }
            defer { cmsFreeToneCurve(curve) }
            var curves: [OpaquePointer?] = [curve, curve, curve]
            guard let handle = cmsCreateRGBProfile(&white, &primaries, &curves) else { return nil }
            self.handle = handle
        }

        /// An RGB profile for H.273 colour primaries and transfer characteristics; nil for sRGB's own
        /// (BT.709 primaries with the sRGB or an unspecified curve: nothing to convert) and for what is
        /// not supported (PQ and HLG need tone mapping, not a profile).
        init?(cicpPrimaries primaries: Int, transfer: Int) {
            // White x, y, then red, green, blue x, y.
            let d65 = [0.3127, 0.3290]
            let table: [Int: [Double]] = [
                1: d65 + [0.640, 0.330, 0.300, 0.600, 0.150, 0.060],  // BT.709 / sRGB
                4: [0.310, 0.316, 0.67, 0.33, 0.21, 0.71, 0.14, 0.08],  // BT.470 M
                5: d65 + [0.64, 0.33, 0.29, 0.60, 0.15, 0.06],  // BT.470 BG
                6: d65 + [0.630, 0.340, 0.310, 0.595, 0.155, 0.070],  // SMPTE 170M
                7: d65 + [0.630, 0.340, 0.310, 0.595, 0.155, 0.070],  // SMPTE 240M
                9: d65 + [0.708, 0.292, 0.170, 0.797, 0.131, 0.046],  // BT.2020
                11: [0.314, 0.351, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060],  // DCI-P3
                12: d65 + [0.680, 0.320, 0.265, 0.690, 0.150, 0.060],  // Display P3
            ]
            let srgbCurve = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
            let curve: [Double]
            switch transfer {
            case 2, 13: curve = srgbCurve  // unspecified, sRGB
            case 1, 6, 14, 15: curve = [1 / 0.45, 1 / 1.099, 0.099 / 1.099, 1 / 4.5, 0.081]  // BT.709
            case 4: curve = [2.2, 1, 0, 0, 0]
            case 5: curve = [2.8, 1, 0, 0, 0]
            case 8: curve = [1, 1, 0, 0, 0]  // linear
            default: return nil
            }
            let effectivePrimaries = primaries == 2 ? 1 : primaries  // unspecified: BT.709
            guard let c = table[effectivePrimaries], !(effectivePrimaries == 1 && curve == srgbCurve) else {
                return nil
            }
            var white = cmsCIExyY(x: c[0], y: c[1], Y: 1)
            var rgb = cmsCIExyYTRIPLE(
                Red: cmsCIExyY(x: c[2], y: c[3], Y: 1), Green: cmsCIExyY(x: c[4], y: c[5], Y: 1),
                Blue: cmsCIExyY(x: c[6], y: c[7], Y: 1))
            guard let tone = curve.withUnsafeBufferPointer({ cmsBuildParametricToneCurve(nil, 4, $0.baseAddress) })
            else { return nil }
            defer { cmsFreeToneCurve(tone) }
            var curves: [OpaquePointer?] = [tone, tone, tone]
            guard let handle = cmsCreateRGBProfile(&white, &rgb, &curves) else { return nil }
            self.handle = handle
        }

        deinit { cmsCloseProfile(handle) }

        /// The profile serialised as ICC bytes (for `Image.iccProfile`).
        var data: Data? {
            var size: UInt32 = 0
            guard cmsSaveProfileToMem(handle, nil, &size) != 0, size > 0 else { return nil }
            var bytes = [UInt8](repeating: 0, count: Int(size))
            guard cmsSaveProfileToMem(handle, &bytes, &size) != 0 else { return nil }
            return Data(bytes.prefix(Int(size)))
        }

        var colorSpace: cmsColorSpaceSignature { cmsGetColorSpace(handle) }

        /// Whether this is sRGB in all but name: a matrix/TRC RGB profile with sRGB's colorants (within
        /// 0.002) and tone curves (within 0.002 at five points).
        var isSRGB: Bool {
            guard colorSpace == cmsSigRgbData, cmsIsMatrixShaper(handle) != 0 else { return false }
            let reference = cmsCreate_sRGBProfile()
            defer { cmsCloseProfile(reference) }
            for tag in [cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag] {
                guard let mine = cmsReadTag(handle, tag)?.assumingMemoryBound(to: cmsCIEXYZ.self).pointee,
                    let theirs = cmsReadTag(reference, tag)?.assumingMemoryBound(to: cmsCIEXYZ.self).pointee,
                    abs(mine.X - theirs.X) < 0.002, abs(mine.Y - theirs.Y) < 0.002, abs(mine.Z - theirs.Z) < 0.002
                else { return false }
            }
            for tag in [cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag] {
                guard let mine = cmsReadTag(handle, tag).map({ OpaquePointer($0) }),
                    let theirs = cmsReadTag(reference, tag).map({ OpaquePointer($0) })
                else { return false }
                for x: Float in [0.05, 0.2, 0.4, 0.6, 0.85] {
                    guard abs(cmsEvalToneCurveFloat(mine, x) - cmsEvalToneCurveFloat(theirs, x)) < 0.002 else {
                        return false
                    }
                }
            }
            return true
        }
    }

    /// LittleCMS's pixel-format word for samples of `bytes` bytes, native byte order (the TYPE_* macros,
    /// which Swift cannot import).
    private static func cmsFormatter(colorspace: Int32, channels: UInt32, extra: UInt32, bytes: UInt32 = 1) -> UInt32 {
        (UInt32(colorspace) << 16) | (extra << 7) | (channels << 3) | bytes
    }
}
