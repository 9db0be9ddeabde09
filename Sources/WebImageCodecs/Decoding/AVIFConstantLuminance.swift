import CAVIF
import Foundation

/// YUV → R′G′B′ for AVIF images whose matrix coefficients are 10 (BT.2020 constant luminance), which
/// libavif 0.11's conversion refuses ("Reformat failed").
///
/// In that system (ITU-T H.273, MatrixCoefficients 10; ITU-R BT.2020) Y′ is the transfer function applied
/// to the linear luminance, not a weighted sum of R′G′B′, and each colour difference B′ − Y′ and R′ − Y′
/// is scaled by its own factor below and above zero, so that both halves span −0.5…0.5:
///
///     Pb = (B′ − Y′) / (2 · TF(1 − KB))   when B′ ≤ Y′,   (B′ − Y′) / (2 · (1 − TF(KB)))   otherwise
///
/// (and Pr likewise with KR). Going back, B′ and R′ follow from Y′ and Pb, Pr; green is not coded, so it is
/// found in linear light, G = (Y − KR · R − KB · B) / KG, and encoded again with the transfer function.
/// The transfer function is the file's own (TransferCharacteristics: BT.709's curve for BT.2020 itself, PQ
/// for HDR10 files); KR = 0.2627 and KB = 0.0593.
///
/// Chroma is upsampled as libavif's own bilinear filter does: each chroma sample centred on the luma
/// samples it covers, its neighbours weighted 3/4 and 1/4, edges repeated. The result holds R′G′B′ code
/// values of the file's transfer (16 bits), for `HDRToneMapper` or for the rounding to 8 bits.
enum AVIFConstantLuminance {
    /// The luma weights of BT.2020.
    static let kr = 0.2627
    static let kb = 0.0593

    /// A transfer function as the pair the equations need: code value → linear light and back, both on the
    /// nominal 0…1 range (PQ's linear 1 is 10,000 cd/m²).
    struct Transfer {
        let toLinear: (Double) -> Double
        let fromLinear: (Double) -> Double
    }

    /// The transfer of CICP `code`, or nil for one this conversion does not know.
    static func transfer(_ code: Int) -> Transfer? {
        switch code {
        case 1, 6, 14, 15:  // BT.709's curve (BT.601 and BT.2020 share it)
            return Transfer(
                toLinear: { $0 < 0.081 ? $0 / 4.5 : pow(($0 + 0.099) / 1.099, 1 / 0.45) },
                fromLinear: { $0 < 0.018 ? 4.5 * $0 : 1.099 * pow($0, 0.45) - 0.099 })
        case 13:  // sRGB
            return Transfer(
                toLinear: { $0 <= 0.040_45 ? $0 / 12.92 : pow(($0 + 0.055) / 1.055, 2.4) },
                fromLinear: { $0 <= 0.003_130_8 ? $0 * 12.92 : 1.055 * pow($0, 1 / 2.4) - 0.055 })
        case 8:
            return Transfer(toLinear: { $0 }, fromLinear: { $0 })
        case 16:  // PQ
            return Transfer(
                toLinear: { HDRToneMapper.pqEOTF($0) / 10_000 },
                fromLinear: { HDRToneMapper.pqInverseEOTF($0 * 10_000) })
        case 18:  // HLG
            let a = 0.178_832_77
            let b = 1 - 4 * a
            let c = 0.5 - a * log(4 * a)
            return Transfer(
                toLinear: { $0 <= 0.5 ? $0 * $0 / 3 : (exp(($0 - c) / a) + b) / 12 },
                fromLinear: { $0 <= 1.0 / 12 ? (3 * $0).squareRoot() : a * log(12 * $0 - b) + c })
        default:
            return nil
        }
    }

    /// The decoded planes of `image` (matrix coefficients 10) as RGBA16: R′G′B′ code values of the image's
    /// transfer, alpha from its alpha plane (or opaque).
    static func rgba16(_ image: UnsafeMutablePointer<avifImage>) throws -> [UInt16] {
        let format = image.pointee.yuvFormat
        guard let transfer = transfer(Int(image.pointee.transferCharacteristics)) else {
            throw DecodingFailure.badImageData(
                "AVIF: matrix coefficients 10 (BT.2020 constant luminance) with transfer characteristics "
                    + "\(image.pointee.transferCharacteristics) are not supported")
        }
        guard image.pointee.depth >= 8, image.pointee.depth <= 16, let lumaPlane = image.pointee.yuvPlanes.0,
            format == AVIF_PIXEL_FORMAT_YUV400
                || (image.pointee.yuvPlanes.1 != nil && image.pointee.yuvPlanes.2 != nil)
        else { throw DecodingFailure.badImageData("AVIF: decoded planes missing") }
        let (width, height) = (Int(image.pointee.width), Int(image.pointee.height))
        let depth = Int(image.pointee.depth)
        let peak = Double((1 << depth) - 1)
        let steps = Double(1 << (depth - 8))
        let full = image.pointee.yuvRange == AVIF_RANGE_FULL
        let shiftX = format == AVIF_PIXEL_FORMAT_YUV420 || format == AVIF_PIXEL_FORMAT_YUV422 ? 1 : 0
        let shiftY = format == AVIF_PIXEL_FORMAT_YUV420 ? 1 : 0
        let chromaWidth = (width + shiftX) >> shiftX
        let chromaHeight = (height + shiftY) >> shiftY

        func sample(_ plane: UnsafeMutablePointer<UInt8>, _ rowBytes: UInt32, _ x: Int, _ y: Int) -> Double {
            let row = plane + y * Int(rowBytes)
            if depth > 8 {
                return Double(UnsafeRawPointer(row).load(fromByteOffset: x * 2, as: UInt16.self))
            }
            return Double(row[x])
        }
        /// The stored neighbours of output position `index` along an axis (subsampled by `shift`) and the
        /// weight of the second.
        func taps(_ index: Int, shift: Int, count: Int) -> (Int, Int, Double) {
            guard shift == 1 else { return (index, index, 0) }
            let position = (Double(index) + 0.5) / 2 - 0.5
            let low = Int(position.rounded(.down))
            let weight = position - Double(low)
            return (min(max(low, 0), count - 1), min(max(low + 1, 0), count - 1), weight)
        }
        func chroma(_ plane: UnsafeMutablePointer<UInt8>, _ rowBytes: UInt32, _ x: Int, _ y: Int) -> Double {
            let (x0, x1, wx) = taps(x, shift: shiftX, count: chromaWidth)
            let (y0, y1, wy) = taps(y, shift: shiftY, count: chromaHeight)
            let top = sample(plane, rowBytes, x0, y0) * (1 - wx) + sample(plane, rowBytes, x1, y0) * wx
            let bottom = sample(plane, rowBytes, x0, y1) * (1 - wx) + sample(plane, rowBytes, x1, y1) * wx
            let value = top * (1 - wy) + bottom * wy
            return full ? (value - Double(1 << (depth - 1))) / peak : (value - 128 * steps) / (224 * steps)
        }

        let (kr, kb) = (Self.kr, Self.kb)
        let (negativeB, positiveB) = (transfer.fromLinear(1 - kb), 1 - transfer.fromLinear(kb))
        let (negativeR, positiveR) = (transfer.fromLinear(1 - kr), 1 - transfer.fromLinear(kr))
        func clamp(_ value: Double) -> Double { min(max(value, 0), 1) }
        func code(_ value: Double) -> UInt16 { UInt16((clamp(value) * 65_535).rounded()) }

        let alpha = image.pointee.alphaPlane
        let alphaRowBytes = image.pointee.alphaRowBytes
        var pixels = [UInt16](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let stored = sample(lumaPlane, image.pointee.yuvRowBytes.0, x, y)
                let luma = clamp(full ? stored / peak : (stored - 16 * steps) / (219 * steps))
                var (red, green, blue) = (luma, luma, luma)
                if format != AVIF_PIXEL_FORMAT_YUV400, let u = image.pointee.yuvPlanes.1,
                    let v = image.pointee.yuvPlanes.2
                {
                    let pb = chroma(u, image.pointee.yuvRowBytes.1, x, y)
                    let pr = chroma(v, image.pointee.yuvRowBytes.2, x, y)
                    blue = clamp(luma + 2 * pb * (pb <= 0 ? negativeB : positiveB))
                    red = clamp(luma + 2 * pr * (pr <= 0 ? negativeR : positiveR))
                    let (lum, r, b) = (transfer.toLinear(luma), transfer.toLinear(red), transfer.toLinear(blue))
                    green = transfer.fromLinear(clamp((lum - kr * r - kb * b) / (1 - kr - kb)))
                }
                let index = (y * width + x) * 4
                pixels[index] = code(red)
                pixels[index + 1] = code(green)
                pixels[index + 2] = code(blue)
                pixels[index + 3] =
                    alpha.map { UInt16((sample($0, alphaRowBytes, x, y) / peak * 65_535).rounded()) } ?? 65_535
            }
        }
        return pixels
    }
}
