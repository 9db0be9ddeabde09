import Foundation

/// How images with an HDR transfer (PQ, SMPTE ST 2084, or HLG, ARIB STD-B67: CICP transfer 16 and 18) come
/// out of every decoder, AVIF, JPEG XL and HEIC alike.
///
/// With `ImageDecodingOptions.colorSpace = .sRGB` (the default) they are tone-mapped to SDR sRGB:
/// 1. the code values become display light in cd/m² (PQ's EOTF; for HLG the inverse OETF, then the
///    BT.2100 OOTF for a 1,000 cd/m² display, system gamma 1.2);
/// 2. the luminance is compressed with the EETF of ITU-R BT.2390 (its Hermite knee in the PQ domain), from a
///    1,000 cd/m² source peak (HDR10's usual mastering peak; brighter pixels are treated as that peak) to
///    203 cd/m², the HDR reference white of ITU-R BT.2408, which becomes SDR white; the colour of each
///    pixel scales with its luminance, so hues stay;
/// 3. the primaries are converted to BT.709 (sRGB's), out-of-range values clipped, and sRGB's curve applied.
///
/// Below about 100 cd/m² the knee leaves luminance as it is, so diffuse tones keep their brightness and
/// only highlights are compressed. With `.preserve` the stored code values are kept and `Image.cicp` says
/// what they are.
struct HDRToneMapper {
    enum Transfer: Sendable {
        case pq
        case hlg
    }

    let transfer: Transfer
    /// Linear source RGB (display light, cd/m²) → linear BT.709 RGB.
    private let toBT709: [Float]
    /// The source primaries' luminance weights (the Y row of their RGB → XYZ matrix).
    private let luminanceWeights: [Float]

    /// The source's assumed peak and the SDR white it is mapped to, in cd/m².
    static let sourcePeak: Double = 1000
    static let sdrWhite: Double = 203

    /// A mapper for CICP `transfer` 16 (PQ) or 18 (HLG) with colour `primaries` 1 (BT.709), 9 (BT.2020), 11
    /// (DCI-P3) or 12 (Display P3); nil for anything else (SDR transfers, unknown primaries).
    init?(primaries: Int, transfer: Int) {
        switch transfer {
        case 16: self.transfer = .pq
        case 18: self.transfer = .hlg
        default: return nil
        }
        guard let source = Self.chromaticities[primaries], let bt709 = Self.chromaticities[1] else { return nil }
        let sourceToXYZ = Self.rgbToXYZ(source)
        let xyzToBT709 = Self.inverse(Self.rgbToXYZ(bt709))
        toBT709 = Self.multiply(xyzToBT709, sourceToXYZ).map(Float.init)
        luminanceWeights = Array(sourceToXYZ[3..<6]).map(Float.init)
    }

    /// Whether CICP `transfer` is one this type maps (PQ or HLG).
    static func isHDR(transfer: Int) -> Bool { transfer == 16 || transfer == 18 }

    /// Tone-maps RGBA8 `pixels` (straight alpha, code values of this transfer) in place to sRGB.
    func map(_ pixels: inout [UInt8]) {
        let decode = (0..<256).map { Float(linear(code: Double($0) / 255)) }
        let encode = Self.srgbEncodingTable
        pixels.withUnsafeMutableBufferPointer { buffer in
            var index = 0
            while index + 3 < buffer.count {
                let (r, g, b) = mapPixel(
                    decode[Int(buffer[index])], decode[Int(buffer[index + 1])], decode[Int(buffer[index + 2])],
                    encode: encode)
                buffer[index] = r
                buffer[index + 1] = g
                buffer[index + 2] = b
                index += 4
            }
        }
    }

    /// Tone-maps RGBA16 `pixels` (code values of this transfer) to sRGB RGBA8; alpha is rounded to 8 bits.
    func map(_ pixels: [UInt16]) -> [UInt8] {
        let decode = (0..<65_536).map { Float(linear(code: Double($0) / 65_535)) }
        let encode = Self.srgbEncodingTable
        var output = [UInt8](repeating: 0, count: pixels.count)
        var index = 0
        while index + 3 < pixels.count {
            let (r, g, b) = mapPixel(
                decode[Int(pixels[index])], decode[Int(pixels[index + 1])], decode[Int(pixels[index + 2])],
                encode: encode)
            output[index] = r
            output[index + 1] = g
            output[index + 2] = b
            output[index + 3] = UInt8((UInt32(pixels[index + 3]) + 128) / 257)
            index += 4
        }
        return output
    }

    /// One pixel: channel values from `linear(code:)` (PQ: display cd/m²; HLG: scene light 0…1) → sRGB8.
    private func mapPixel(_ r: Float, _ g: Float, _ b: Float, encode: [UInt8]) -> (UInt8, UInt8, UInt8) {
        var (r, g, b) = (r, g, b)
        var luminance = luminanceWeights[0] * r + luminanceWeights[1] * g + luminanceWeights[2] * b
        if transfer == .hlg {
            // BT.2100's OOTF for a 1,000 cd/m² display: Fd = Lw · Ys^(γ−1) · E, γ = 1.2.
            let gain = Float(Self.sourcePeak) * (luminance > 0 ? Float(pow(Double(luminance), 0.2)) : 0)
            (r, g, b) = (r * gain, g * gain, b * gain)
            luminance *= gain
        }
        var scale: Float = 0
        if luminance > 0 {
            scale = Float(Self.eetf(nits: Double(luminance)) / Double(luminance) / Self.sdrWhite)
        }
        (r, g, b) = (r * scale, g * scale, b * scale)
        let m = toBT709
        let red = m[0] * r + m[1] * g + m[2] * b
        let green = m[3] * r + m[4] * g + m[5] * b
        let blue = m[6] * r + m[7] * g + m[8] * b
        func encoded(_ value: Float) -> UInt8 {
            encode[Int((min(max(value, 0), 1) * Float(encode.count - 1)).rounded())]
        }
        return (encoded(red), encoded(green), encoded(blue))
    }

    /// A channel's code value (0…1) as light: PQ gives display light in cd/m², HLG scene light (0…1).
    func linear(code: Double) -> Double {
        switch transfer {
        case .pq:
            return Self.pqEOTF(code)
        case .hlg:
            let a = 0.178_832_77
            let b = 1 - 4 * a
            let c = 0.5 - a * log(4 * a)
            return code <= 0.5 ? code * code / 3 : (exp((code - c) / a) + b) / 12
        }
    }

    // MARK: PQ and BT.2390

    private static let m1 = 2610.0 / 16384
    private static let m2 = 2523.0 / 4096 * 128
    private static let c1 = 3424.0 / 4096
    private static let c2 = 2413.0 / 4096 * 32
    private static let c3 = 2392.0 / 4096 * 32

    /// SMPTE ST 2084: a code value (0…1) → cd/m² (0…10,000).
    static func pqEOTF(_ code: Double) -> Double {
        let p = pow(max(code, 0), 1 / m2)
        return 10_000 * pow(max(p - c1, 0) / (c2 - c3 * p), 1 / m1)
    }

    /// SMPTE ST 2084's inverse: cd/m² → a code value (0…1).
    static func pqInverseEOTF(_ nits: Double) -> Double {
        let y = pow(min(max(nits / 10_000, 0), 1), m1)
        return pow((c1 + c2 * y) / (1 + c3 * y), m2)
    }

    /// BT.2390's EETF on a luminance in cd/m², from `sourcePeak` to `sdrWhite` (black stays at 0).
    static func eetf(nits: Double) -> Double {
        let sourceMax = pqInverseEOTF(sourcePeak)
        let e1 = min(pqInverseEOTF(nits) / sourceMax, 1)
        let maxLuminance = pqInverseEOTF(sdrWhite) / sourceMax
        let kneeStart = 1.5 * maxLuminance - 0.5
        var e2 = e1
        if e1 > kneeStart {
            let t = (e1 - kneeStart) / (1 - kneeStart)
            let (t2, t3) = (t * t, t * t * t)
            e2 =
                (2 * t3 - 3 * t2 + 1) * kneeStart + (t3 - 2 * t2 + t) * (1 - kneeStart)
                + (-2 * t3 + 3 * t2) * maxLuminance
        }
        return pqEOTF(e2 * sourceMax)
    }

    // MARK: Colour

    /// sRGB's curve over linear 0…1 in 4,096 steps.
    static let srgbEncodingTable: [UInt8] = (0..<4096).map { index in
        let value = Double(index) / 4095
        let encoded = value <= 0.003_130_8 ? 12.92 * value : 1.055 * pow(value, 1 / 2.4) - 0.055
        return UInt8((min(max(encoded, 0), 1) * 255).rounded())
    }

    /// White x, y, then red, green, blue x, y, by CICP colour primaries code.
    static let chromaticities: [Int: [Double]] = [
        1: [0.3127, 0.3290, 0.640, 0.330, 0.300, 0.600, 0.150, 0.060],
        9: [0.3127, 0.3290, 0.708, 0.292, 0.170, 0.797, 0.131, 0.046],
        11: [0.314, 0.351, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060],
        12: [0.3127, 0.3290, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060],
    ]

    /// The RGB → XYZ matrix (row-major) of primaries and white given as in `chromaticities`.
    static func rgbToXYZ(_ c: [Double]) -> [Double] {
        func xyz(_ x: Double, _ y: Double) -> [Double] { [x / y, 1, (1 - x - y) / y] }
        let (white, red, green, blue) = (xyz(c[0], c[1]), xyz(c[2], c[3]), xyz(c[4], c[5]), xyz(c[6], c[7]))
        let primaries = [red[0], green[0], blue[0], red[1], green[1], blue[1], red[2], green[2], blue[2]]
        let inverse = inverse(primaries)
        let s = (0..<3).map { row in (0..<3).reduce(0.0) { $0 + inverse[row * 3 + $1] * white[$1] } }
        return (0..<9).map { primaries[$0] * s[$0 % 3] }
    }

    static func multiply(_ a: [Double], _ b: [Double]) -> [Double] {
        (0..<9).map { index in
            let (row, column) = (index / 3, index % 3)
            return (0..<3).reduce(0.0) { $0 + a[row * 3 + $1] * b[$1 * 3 + column] }
        }
    }

    static func inverse(_ m: [Double]) -> [Double] {
        let determinant =
            m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6])
        let cofactors = [
            m[4] * m[8] - m[5] * m[7], m[2] * m[7] - m[1] * m[8], m[1] * m[5] - m[2] * m[4],
            m[5] * m[6] - m[3] * m[8], m[0] * m[8] - m[2] * m[6], m[2] * m[3] - m[0] * m[5],
            m[3] * m[7] - m[4] * m[6], m[1] * m[6] - m[0] * m[7], m[0] * m[4] - m[1] * m[3],
        ]
        return cofactors.map { $0 / determinant }
    }
}
