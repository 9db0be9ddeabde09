import Foundation
import Testing

@testable import WebImageCodecs

/// 16-bit PNGs with a colour conversion are converted from their 16-bit samples: cutting them to 8 bits first
/// would send every sample below 256 (of 65,535) to black in a linear (gAMA 1.0) file, where sRGB shows up to
/// 13 distinct steps.
@Suite struct PNGSixteenBitColorTests {
    /// A one-row 16-bit gray PNG of `samples` with gAMA 1.0 (linear light), written here byte by byte: an
    /// uncompressed (stored) deflate block, so no encoder is involved.
    static func linearGray16(_ samples: [UInt16]) -> Data {
        func bigEndian(_ value: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
        func crc32(_ bytes: [UInt8]) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
            }
            return ~crc
        }
        func chunk(_ type: String, _ payload: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + payload
            return bigEndian(UInt32(payload.count)) + body + bigEndian(crc32(body))
        }
        var row: [UInt8] = [0]  // filter type: none
        for sample in samples { row += [UInt8(sample >> 8), UInt8(sample & 0xFF)] }
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in row {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        let length = UInt16(row.count)
        var zlib: [UInt8] = [0x78, 0x01, 0x01, UInt8(length & 0xFF), UInt8(length >> 8)]
        zlib += [UInt8(~length & 0xFF), UInt8(~length >> 8)] + row + bigEndian(b << 16 | a)
        let header = bigEndian(UInt32(samples.count)) + bigEndian(1) + [16, 0, 0, 0, 0]
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        png += chunk("IHDR", header) + chunk("gAMA", bigEndian(100_000)) + chunk("IDAT", zlib) + chunk("IEND", [])
        return Data(png)
    }

    /// sRGB's encoding of linear light `value` (0…1) in 8-bit steps.
    static func sRGB8(_ value: Double) -> Int {
        let encoded = value <= 0.003_130_8 ? value * 12.92 : 1.055 * pow(value, 1 / 2.4) - 0.055
        return Int((encoded * 255).rounded())
    }

    @Test("A linear 16-bit PNG's dark samples come out as sRGB computes them, not cut to black first")
    func linearSixteenBitDarkTones() throws {
        let samples = (0..<64).map { UInt16($0 * 64) }
        let image = try PNGDecoder().decode(Self.linearGray16(samples), options: .default)
        let pixels = image.frames[0].pixels
        for (index, sample) in samples.enumerated() {
            let expected = Self.sRGB8(Double(sample) / 65535)
            let decoded = Int(pixels[index * 4])
            #expect(abs(decoded - expected) <= 1, "sample \(sample): \(decoded), not \(expected)")
            #expect(pixels[index * 4 + 3] == 255)
        }
        // Before the fix samples 0…255 all decoded to 0; sRGB gives 64 (of 65,535) a value of 3.
        #expect(Self.sRGB8(64 / 65535) == 3)
    }

    @Test("Decoded through the progressive reader, the final image is the same")
    func theIncrementalDecoderAgrees() throws {
        let data = Self.linearGray16((0..<64).map { UInt16($0 * 64) })
        let oneShot = try PNGDecoder().decode(data, options: .default)
        let decoder = PNGDecoder().makeIncrementalDecoder(options: .default)
        _ = decoder.decodePartial(data)
        let final = try decoder.decodeFinal(data)
        #expect(final.frames[0].pixels == oneShot.frames[0].pixels)
    }
}
