import Foundation
import TestSupport
import Testing

@testable import WebImageCodecs

/// The HDR → SDR operator every decoder uses for PQ and HLG (HDRToneMapper). The conformance checker
/// compares whole files with its own implementation of the same operator; these check the parts.
@Suite("HDR tone mapping")
struct HDRToneMappingTests {
    @Test("PQ's curve: published code values for 100, 203 and 1,000 cd/m², and its inverse")
    func pqCurve() {
        // SMPTE ST 2084 / BT.2100: 100 cd/m² is code 0.5081, 203 cd/m² 0.5806, 1,000 cd/m² 0.7518.
        #expect(abs(HDRToneMapper.pqInverseEOTF(100) - 0.5081) < 0.0005)
        #expect(abs(HDRToneMapper.pqInverseEOTF(203) - 0.5806) < 0.0005)
        #expect(abs(HDRToneMapper.pqInverseEOTF(1000) - 0.7518) < 0.0005)
        for nits in [0.01, 1, 80, 203, 1000, 4000, 10_000] {
            #expect(abs(HDRToneMapper.pqEOTF(HDRToneMapper.pqInverseEOTF(nits)) - nits) < nits * 1e-6 + 1e-9)
        }
        #expect(HDRToneMapper.pqEOTF(0) < 1e-6 && abs(HDRToneMapper.pqEOTF(1) - 10_000) < 1e-6)
    }

    @Test("BT.2390's EETF: diffuse tones kept, the 1,000 cd/m² peak lands on 203, monotonic, clipped above")
    func eetf() {
        for nits in [0.5, 5, 20, 60] {
            #expect(abs(HDRToneMapper.eetf(nits: nits) - nits) < nits * 1e-9, "\(nits)")
        }
        #expect(abs(HDRToneMapper.eetf(nits: 1000) - 203) < 0.01)
        #expect(HDRToneMapper.eetf(nits: 4000) == HDRToneMapper.eetf(nits: 1000))
        var previous = 0.0
        for step in 1...1000 {
            let mapped = HDRToneMapper.eetf(nits: Double(step))
            #expect(mapped >= previous && mapped <= 203.01)
            previous = mapped
        }
    }

    @Test("neutral stays neutral through BT.2020 → BT.709, black stays black, brighter stays brighter")
    func pixels() throws {
        let mapper = try #require(HDRToneMapper(primaries: 9, transfer: 16))
        var pixels: [UInt8] = [0, 0, 0, 255]
        for code in stride(from: 16, through: 255, by: 16) { pixels += [UInt8(code), UInt8(code), UInt8(code), 200] }
        mapper.map(&pixels)
        #expect(Array(pixels[0..<4]) == [0, 0, 0, 255])
        var last = -1
        for index in stride(from: 4, to: pixels.count, by: 4) {
            let (r, g, b, a) = (Int(pixels[index]), Int(pixels[index + 1]), Int(pixels[index + 2]), pixels[index + 3])
            #expect(abs(r - g) <= 1 && abs(g - b) <= 1, "gray \(index / 4): \(r) \(g) \(b)")
            #expect(a == 200, "alpha is untouched")
            #expect(g >= last)
            last = g
        }
        // Code 0.7518 is 1,000 cd/m², the assumed peak: it becomes SDR white.
        var peak: [UInt16] = [49_271, 49_271, 49_271, 65_535]
        #expect(mapper.map(peak) == [255, 255, 255, 255])
        // 100 cd/m² (under the knee) is about half of 203: sRGB's curve puts that near 186.
        peak = [33_297, 33_297, 33_297, 65_535]
        let hundred = mapper.map(peak)
        #expect(abs(Int(hundred[1]) - 186) <= 2, "\(hundred)")
        #expect(HDRToneMapper(primaries: 9, transfer: 13) == nil && HDRToneMapper(primaries: 3, transfer: 16) == nil)
        #expect(HDRToneMapper(primaries: 9, transfer: 18)?.transfer == .hlg)
    }

    @Test("a PQ HEIC: tone-mapped by default; with .preserve the stored code values and their CICP description")
    func preserve() throws {
        let data = try Data(
            contentsOf: Fixtures.packageRoot.appendingPathComponent(
                "Tests/Fixtures/conformance/sdwebimage/TestHDR.heic"))
        let mapped = try ImageDecoderRegistry.shared.decode(data)
        #expect(mapped.cicp == nil)
        var options = ImageDecodingOptions()
        options.colorSpace = .preserve
        let stored = try ImageDecoderRegistry.shared.decode(data, options: options)
        #expect(stored.cicp == CICPDescription(colorPrimaries: 9, transferCharacteristics: 16))
        #expect(stored.width == mapped.width && stored.height == mapped.height)
        // PQ code values sit in a narrow band (diffuse white near 0.58); the SDR rendering spreads them out.
        func mean(_ image: Image) -> Double {
            Double(image.frames[0].pixels.enumerated().filter { $0.offset % 4 != 3 }.reduce(0) { $0 + Int($1.element) })
                / Double(image.width * image.height * 3)
        }
        #expect(mean(stored) != mean(mapped))
        #expect(stored.frames[0].pixels != mapped.frames[0].pixels)
    }
}
