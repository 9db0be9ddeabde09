import CLCMS
import Foundation

extension ColorManagement {
    /// Converts raw CMYK ink amounts (4 bytes a pixel, 0 = no ink) through `profileData` into opaque sRGB
    /// RGBA in place, the way libjxl, the JPEG XL reference decoder, renders a CMYK image; false when the
    /// profile is not a CMYK profile with a CIELAB or XYZ perceptual table (A2B0) LittleCMS can read.
    ///
    /// libjxl's colour management (skcms in its default build) renders CMYK as the A2B0 table evaluated in
    /// float, its output words read with one scale whatever the table's type (L* 100 at 0xFFFF, a* and b*
    /// from -128 at 0 to 127 at 0xFFFF), the colour taken to sRGB relative colorimetrically, without black
    /// point compensation: done that way, jxl/cmyk_layers comes within 1 step of the suite's `ref.png`.
    /// Done here the same way: LittleCMS evaluates the table's stages, then converts the colour. For a version 2 profile's 16-bit table (`mft2`), whose words encode L* 100 as 0xFF00 and
    /// a*, b* 0 as 0x8000 (ICC.1:2001), that reading makes every colour a little darker and bluer than
    /// LittleCMS's own transform: the paper white of U.S. Web Coated (SWOP) v2 is (253, 254, 255), not
    /// (255, 255, 255). The JPEG XL conformance suite's rendering of such a file (jxl/cmyk_layers' ref.png)
    /// shows it, so WebImage's JPEG XL decoder follows libjxl; the CMYK JPEG path (`convertCMYK`) keeps
    /// LittleCMS's perceptual transform.
    static func convertCMYKAsLibjxl(_ pixels: inout [UInt8], profileData: Data) -> Bool {
        guard let profile = Profile(profileData), profile.colorSpace == cmsSigCmykData,
            let table = cmsReadTag(profile.handle, cmsSigAToB0Tag).map({ OpaquePointer($0) }),
            cmsPipelineInputChannels(table) == 4, cmsPipelineOutputChannels(table) == 3
        else { return false }
        let pcs = cmsGetPCS(profile.handle)
        guard pcs == cmsSigLabData || pcs == cmsSigXYZData,
            let connection = pcs == cmsSigLabData ? cmsCreateLab4Profile(nil) : cmsCreateXYZProfile()
        else { return false }
        defer { cmsCloseProfile(connection) }
        let srgb = cmsCreate_sRGBProfile()
        defer { cmsCloseProfile(srgb) }
        // TYPE_Lab_DBL or TYPE_XYZ_DBL, and TYPE_RGBA_8 (LittleCMS's macros, which Swift cannot import).
        let connectionFormat = UInt32(pcs == cmsSigLabData ? PT_Lab : PT_XYZ) << 16 | 1 << 22 | 3 << 3
        let rgba8 = UInt32(PT_RGB) << 16 | 1 << 7 | 3 << 3 | 1
        guard
            let toSRGB = cmsCreateTransform(
                connection, connectionFormat, srgb, rgba8, UInt32(INTENT_RELATIVE_COLORIMETRIC),
                UInt32(cmsFLAGS_NOCACHE | cmsFLAGS_NOOPTIMIZE))
        else { return false }
        defer { cmsDeleteTransform(toSRGB) }
        let count = pixels.count / 4
        var output = [UInt8](repeating: 255, count: count * 4)
        // In runs, so the values in between stay small whatever the image's size.
        let run = 4096
        var colours = [Double](repeating: 0, count: run * 3)
        var inks = [Float](repeating: 0, count: 4)
        var words = [Float](repeating: 0, count: 3)
        for start in stride(from: 0, to: count, by: run) {
            let length = min(run, count - start)
            for pixel in 0..<length {
                for channel in 0..<4 { inks[channel] = Float(pixels[(start + pixel) * 4 + channel]) / 255 }
                cmsPipelineEvalFloat(inks, &words, table)
                if pcs == cmsSigLabData {
                    colours[pixel * 3] = Double(words[0]) * 100
                    colours[pixel * 3 + 1] = Double(words[1]) * 255 - 128
                    colours[pixel * 3 + 2] = Double(words[2]) * 255 - 128
                } else {
                    // XYZ words: 1.0 at 0x8000.
                    for channel in 0..<3 { colours[pixel * 3 + channel] = Double(words[channel]) * 65535 / 32768 }
                }
            }
            colours.withUnsafeBytes { colour in
                output.withUnsafeMutableBytes { out in
                    guard let destination = out.baseAddress else { return }
                    cmsDoTransform(toSRGB, colour.baseAddress, destination + start * 4, UInt32(length))
                }
            }
        }
        pixels = output
        return true
    }
}
